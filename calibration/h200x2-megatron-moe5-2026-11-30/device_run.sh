#!/bin/bash
# Issue 44 (session 40, moekern; REGISTERED before this ran: registered.yaml and README.md's rule beside this script): does
# the local spec's kernel-by-kernel pricing (llm/torch_kernels.py) predict new compute-bound layers? Four configurations
# (studies/megatron_moe/register.py SET5) at EP 2 on one 2 x H200 lease, moe3's arm B only: each rank pinned to its GPU's
# own physical cores (device.py --pin), CUDA_MODULE_LOADING=EAGER, warm-up 10, 8 timed steps, one profiled step kept as
# every rank's Chrome trace. megatron-core 0.14.0's PyPI wheel must be in .device/wheels (carried; not committed).
#   MAIN_COMMIT=<main> bash calibration/h200x2-megatron-moe5-2026-11-30/device_run.sh   (nvidia-h200-x2; about 130-160 s)
W=${MOE5_WORK:-/tmp/moe5}
BUDGET_S=${BUDGET_S:-160}   # device_lib's guarded: no run launched after BUDGET_S s; each run cut at 80 s
. calibration/device_lib.sh
pip install -q --no-deps --target /tmp/mc .device/wheels/megatron_core-0.14.0-*.whl > "$B/pip.log" 2>&1; echo "pip rc $?"
R=studies/megatron_moe
export PYTHONPATH=/tmp/mc:$PWD $(python3 $R/register.py --env B)
{ nvidia-smi topo -m; echo "## the pinning plan (studies/megatron_moe/pinning.py)"; python3 $R/pinning.py 2; } > "$B/host.txt" 2>&1
for name in $(python3 $R/register.py --names moe5); do
  tag=h200-x2-$name-armB
  flags=$(python3 $R/register.py --flags "$name" --arm B)
  echo "$tag: CUDA_MODULE_LOADING=$CUDA_MODULE_LOADING device.py $flags"
  guarded "megatron-moe-$tag" 80 $two $R/device.py $flags --trace "$B/trace-$tag-rank{rank}.json.gz"
done
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
