#!/bin/bash
# Issue 44 (session 41, engineer moe6; REGISTERED before this ran: registered.yaml and README.md's rule beside this script):
# today's local-spec model (the GPU side kernel by kernel, session 41 moegpu) on six layers at 2 x H200
# (studies/megatron_moe/register.py SET6): two new to calibration/ (32 heads at micro-batch 2, EP 2; 16 experts at EP 1,
# the two ranks data parallel) first, then moe5's four again (a seen set's shapes on a new lease). moe3's arm B only:
# each rank pinned to its GPU's own physical cores (device.py --pin), CUDA_MODULE_LOADING=EAGER, warm-up 10, 8 timed
# steps, one profiled step kept as every rank's Chrome trace; every rank's host issue and step time of each timed step
# (device.py: runner/host_issue.gather). megatron-core 0.14.0's PyPI wheel must be in .device/wheels (carried; not committed).
#   MAIN_COMMIT=<main> bash calibration/h200x2-megatron-moe6-2026-11-30/device_run.sh   (nvidia-h200-x2; about 170-200 s)
W=${MOE6_WORK:-/tmp/moe6}
BUDGET_S=${BUDGET_S:-155}   # device_lib's guarded: no run launched after BUDGET_S s; each run cut at 45 s: worst case 200 s
. calibration/device_lib.sh
pip install -q --no-deps --target /tmp/mc .device/wheels/megatron_core-0.14.0-*.whl > "$B/pip.log" 2>&1; echo "pip rc $?"
R=studies/megatron_moe
export PYTHONPATH=/tmp/mc:$PWD $(python3 $R/register.py --env B)
{ nvidia-smi topo -m; echo "## the pinning plan (studies/megatron_moe/pinning.py)"; python3 $R/pinning.py 2; } > "$B/host.txt" 2>&1
for name in $(python3 $R/register.py --names moe6); do
  tag=h200-x2-$name-armB
  flags=$(python3 $R/register.py --flags "$name" --arm B)
  echo "$tag: CUDA_MODULE_LOADING=$CUDA_MODULE_LOADING device.py $flags"
  guarded "megatron-moe-$tag" 45 $two $R/device.py $flags --trace "$B/trace-$tag-rank{rank}.json.gz"
done
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
