#!/bin/bash
# Issue 44 (session 49, helper moelab49; REGISTERED before this ran: registered.yaml and README.md's rule beside this
# script, validation/moelab49.py): the MoE router / permutation term (llm/moe_router_term) checked on four Megatron-Core
# local-spec MoE layers no set has run (studies/megatron_moe/register.py SET49), 2 x H200, moe3's arm B (each rank pinned
# to its GPU's own physical cores, CUDA_MODULE_LOADING=EAGER, warm-up 10, 8 timed steps, one profiled step), each
# configuration launched twice: launch 1 in order into runs/ (both ranks' profiled step kept as Chrome traces), launch 2
# in reverse order into runs/launch2/ (no trace). megatron-core 0.14.0's PyPI wheel in .device/wheels (carried).
# Expected ~245 s (8 runs of 28-35 s as moe5 / moe6's, and the wheel's install). device_lib's guard: no run launched after
# BUDGET_S = 230 s, each cut at 50 s: worst case 230 + 50 = 280 s. If the guard skips, it skips launch 2 of the first
# configurations (the reverse order's tail); the read-out uses the launches that ran.
#   MAIN_COMMIT=<main> bash calibration/h200x2-moelab49-2026-12-01/device_run.sh   (nvidia-h200-x2, carry .device/wheels)
W=${MOELAB49_WORK:-/tmp/moelab49}
BUDGET_S=${BUDGET_S:-230}
. calibration/device_lib.sh
pip install -q --no-deps --target /tmp/mc .device/wheels/megatron_core-0.14.0-*.whl > "$B/pip.log" 2>&1; echo "pip rc $?"
R=studies/megatron_moe
export PYTHONPATH=/tmp/mc:$PWD $(python3 $R/register.py --env B)
{ nvidia-smi topo -m; echo "## the pinning plan (studies/megatron_moe/pinning.py)"; python3 $R/pinning.py 2; } > "$B/host.txt" 2>&1
mkdir -p "$B/launch2"
names=$(python3 $R/register.py --names ${MOELAB_SET:-moelab49})   # moelab49b sources this file with MOELAB_SET=moelab49b
for name in $names; do
  tag=h200-x2-$name-armB
  flags=$(python3 $R/register.py --flags "$name" --arm B)
  echo "$tag: launch 1: CUDA_MODULE_LOADING=$CUDA_MODULE_LOADING device.py $flags"
  guarded "megatron-moe-$tag" 50 $two $R/device.py $flags --trace "$B/trace-$tag-rank{rank}.json.gz"
done
for name in $(echo $names | tr ' ' '\n' | tac); do
  tag=h200-x2-$name-armB
  flags=$(python3 $R/register.py --flags "$name" --arm B)
  echo "$tag: launch 2: CUDA_MODULE_LOADING=$CUDA_MODULE_LOADING device.py $flags"
  guarded "launch2/megatron-moe-$tag" 50 $two $R/device.py $flags
done
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
