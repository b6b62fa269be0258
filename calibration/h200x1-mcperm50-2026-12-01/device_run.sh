#!/bin/bash
# Issue 44, session 50 (mcperm50; REGISTERED before this ran: registered.yaml beside this script, validation/mcperm50.py):
# Megatron-Core's own token permutations (megatron.core.transformer.moe.moe_utils permute / sort_chunks_by_idxs /
# unpermute, non-fused: no Transformer Engine; megatron-core 0.14.0's PyPI wheel from .device/wheels, carried) against
# moeker50's plain-torch permutations (studies/moe_router_device.py's Layer.permute) on the 7 layers of
# simcluster/runner/moerouter_grid.GRID, forward and forward + backward, kernel time by torch.profiler and CUDA events
# (moeker50's clocks through studies/mcore_router_device.records_of), in one process on ONE GPU
# (studies/mcore_perm_device.py -> runs/mcore-perm.json); then the CPU dry run on one layer.
# Expected ~35-55 s in all: the wheel's unpack ~5 s, torch + megatron-core import and CUDA / CUPTI start ~15 s, 28 event
# records (10 samples of 5 calls, 1-6 ms a call) and 28 kernels records (3 profiled runs of 5 calls): ~15-30 s
# (mcrouter50's 42 records of 0.1-1 ms calls took 19 s). Worst case ~110 s: device_lib's records ~5 s, the unpack cut at
# 30 s, the measurement cut at 75 s (the CPU dry run, limit 15 s, is not launched after BUDGET_S = 60 s).
#   MAIN_COMMIT=<main> bash calibration/h200x1-mcperm50-2026-12-01/device_run.sh   (nvidia-h200, carry .device/wheels)
W=/tmp/mcperm50
BUDGET_S=${BUDGET_S:-60}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
timeout 30 python3 -m pip install -q --no-index --no-deps --target /tmp/mc .device/wheels/megatron_core-0.14.0-*.whl > "$B/pip.log" 2>&1; echo "pip rc $?" | tee -a "$B/status.txt"
export PYTHONPATH=/tmp/mc:$PWD CUDA_VISIBLE_DEVICES=0
guarded mcore-perm 75 python3 studies/mcore_perm_device.py --device cuda --repeats 10 --prof-repeats 3 --warmup 3
guarded mcore-perm-cpu-quick 15 python3 studies/mcore_perm_device.py --device cpu --quick --repeats 2 --prof-repeats 1 --warmup 1 --layers dsv3-ep64
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
