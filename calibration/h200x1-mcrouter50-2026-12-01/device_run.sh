#!/bin/bash
# Issue 44, session 50 (mcrouter50; REGISTERED before this ran: registered.yaml beside this script, validation/mcrouter50.py):
# Megatron-Core's own router (megatron.core.transformer.moe.router.TopKRouter, megatron-core 0.14.0's PyPI wheel from
# .device/wheels, carried; no Transformer Engine) against moeker50's plain-torch chain (studies/moe_router_device.py's
# Layer) on the 7 layers of simcluster/runner/moerouter_grid.GRID, forward and forward + backward, kernel time by
# torch.profiler and CUDA events (studies/moe_kernel_device.py's clocks), in one process on ONE GPU
# (studies/mcore_router_device.py -> runs/mcore-router.json); then the CPU dry run on one layer.
# Expected ~40-60 s in all: the wheel's unpack ~5 s, torch + megatron-core import and CUDA / CUPTI start ~15 s, 42 event
# records (10 samples of 5 calls, 0.1-1 ms a call) and 42 kernels records (3 profiled runs of 5 calls, ~0.1-0.2 s each):
# ~20-30 s (moeker50's 70 records took 20 s). Worst case ~125 s: device_lib's records ~5 s, the unpack cut at 30 s, the
# measurement cut at 90 s (the CPU dry run, limit 20 s, is not launched after BUDGET_S = 60 s: 60 + 20 = 80 s otherwise).
#   MAIN_COMMIT=<main> bash calibration/h200x1-mcrouter50-2026-12-01/device_run.sh   (nvidia-h200, carry .device/wheels)
W=/tmp/mcrouter50
BUDGET_S=${BUDGET_S:-60}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
timeout 30 python3 -m pip install -q --no-index --no-deps --target /tmp/mc .device/wheels/megatron_core-0.14.0-*.whl > "$B/pip.log" 2>&1; echo "pip rc $?" | tee -a "$B/status.txt"
export PYTHONPATH=/tmp/mc:$PWD CUDA_VISIBLE_DEVICES=0
guarded mcore-router 90 python3 studies/mcore_router_device.py --device cuda --repeats 10 --prof-repeats 3 --warmup 3
guarded mcore-router-cpu-quick 20 python3 studies/mcore_router_device.py --device cpu --quick --repeats 2 --prof-repeats 1 --warmup 1 --layers mixtral-ep8
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
