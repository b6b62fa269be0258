#!/bin/bash
# Issue 44, session 49 (moerouter; REGISTERED before this ran: registered.yaml beside this script, validation/moerouter.py):
# the held-out published MoE rows' routers, the dispatcher's permutations (torch; Transformer Engine's fused kernels where
# they import) and the token-count sync (studies/moe_router_device.py, simcluster/runner/moerouter_grid.GRID: 7 layers)
# on ONE GPU (runs/moe-router.json), then its CPU dry-run form on one layer (seconds; a check that the quick path runs).
# Expected ~30-90 s (torch / TE import ~10-20 s; 7 layers x ~10 timings of (3 + 10 x 5) calls of 0.05-3 ms, and 2 loops
# of 8 layers x 13 each). Worst case 240 s: the first call is killed at 240 s; the second (limit 30 s) starts only if
# fewer than BUDGET_S = 60 s have passed (then at most 60 + 30 = 90 s in all).
#   MAIN_COMMIT=<main> bash calibration/h200x1-moerouter-2026-12-01/device_run.sh   (nvidia-h200, one GPU)
W=/tmp/moerouter
BUDGET_S=${BUDGET_S:-60}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
export CUDA_VISIBLE_DEVICES=0
guarded moe-router 240 python3 studies/moe_router_device.py --device cuda --repeats 10 --warmup 3
guarded moe-router-cpu-quick 30 python3 studies/moe_router_device.py --device cpu --quick --repeats 3 --warmup 1 --layers mixtral-ep8
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
