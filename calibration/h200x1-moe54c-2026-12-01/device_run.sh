#!/bin/bash
# Issue 44, session 54 (moe54c; REGISTERED before this ran: registered.yaml beside this script, validation/moe54c.py):
# Megatron-Core's own MoE decoder layer (megatron-core 0.14.0's local spec, no Transformer Engine; the PyPI wheel carried
# in .device/wheels, unpacked with pip --target /tmp/mc) at the per-rank shapes of AWS's Qwen3-30B-A3B cells, one layer
# a call on ONE GPU, beside moe54's plain-torch layer in the same process (studies/moe54c_device.py -> runs/moe54c.json;
# it imports studies/moe54_device.py, studies/mcore_router_device.py (and its moe_router_device.py), studies/moe_kernel_device.py, named so
# that commit.txt hashes them), then its CPU dry-run form on one cell.
# Expected ~60-100 s: the wheel's unpack ~5 s; torch + megatron-core import and CUDA / CUPTI start ~15 s; 2 layers x 4
# cells x 3 passes, each (3 warm-up + 10 x 5 timed + 1 + 3 x 5 profiled calls) of 3-25 ms a call: ~40-60 s with the
# profiler's 24 trace reads (moe54 alone took 37 s in all on 2026-12-01).
# Worst case ~265 s (one call <= 300 s): device_lib's records ~5 s, the unpack cut at 30 s, the measurement cut at 220 s
# (SIGTERM: the records measured so far are still written), the CPU dry run (limit 20 s) not launched after
# BUDGET_S = 230 s, the packing ~2 s.
#   MAIN_COMMIT=<main> bash calibration/h200x1-moe54c-2026-12-01/device_run.sh   (nvidia-h200, carry .device/wheels)
W=/tmp/moe54c
BUDGET_S=${BUDGET_S:-230}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
timeout 30 python3 -m pip install -q --no-index --no-deps --target /tmp/mc .device/wheels/megatron_core-0.14.0-*.whl > "$B/pip.log" 2>&1; echo "pip rc $?" | tee -a "$B/status.txt"
export PYTHONPATH=/tmp/mc:$PWD CUDA_VISIBLE_DEVICES=0
# named for commit.txt: studies/moe54_device.py studies/mcore_router_device.py studies/moe_router_device.py studies/moe_kernel_device.py
guarded moe54c 220 python3 studies/moe54c_device.py --device cuda --repeats 10 --prof-repeats 3 --warmup 3
guarded moe54c-cpu-quick 20 python3 studies/moe54c_device.py --device cpu --quick --repeats 1 --prof-repeats 1 --warmup 0 --cells ep32-mb1
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
