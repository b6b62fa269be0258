#!/bin/bash
# Issue 44, session 50 (moeker50; REGISTERED before this ran: registered.yaml beside this script, validation/moeker50.py):
# the MoE router chain and the torch permutations of moerouter (studies/moe_router_device.py's Layer) on the same 7
# layers (simcluster/runner/moerouter_grid.GRID), each forward and forward + backward, timed on ONE GPU three ways by
# studies/moe_kernel_device.py: CUDA events around eager calls (moerouter's clock, 10 samples), torch.profiler's device
# kernel time (3 profiled runs of 5 calls) and the router captured in a CUDA graph and replayed (10 samples), in one
# process (runs/moe-kernels.json); then the torch permutations' capture attempt in a process of its own (a failed
# capture cannot spoil the other figures; runs/moe-graph-permute.json); then the CPU dry run on one layer.
# Expected ~30-50 s in all (torch import and CUDA / CUPTI start ~10-15 s; 28 event records x 53 calls of 0.2-4.5 ms;
# 84 profiler sessions of 5 calls, ~0.1-0.2 s each; 14 router captures with 13 x 5 replays; the permutation attempts
# fail at their first masked_select). Worst case ~95 s: the first run is killed at 75 s; the second (limit 20 s) and
# third (limit 15 s) start only if fewer than BUDGET_S = 60 s have passed: 60 + 20 + 15 = 95 s at most, plus device_lib's
# records (nvidia-smi, lscpu, a torch import: ~5 s).
#   MAIN_COMMIT=<main> bash calibration/h200x1-moeker50-2026-12-01/device_run.sh   (nvidia-h200, one GPU)
W=/tmp/moeker50
BUDGET_S=${BUDGET_S:-60}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
export CUDA_VISIBLE_DEVICES=0
guarded moe-kernels 75 python3 studies/moe_kernel_device.py --device cuda --clocks events,kernels,graph-router --repeats 10 --prof-repeats 3 --warmup 3
guarded moe-graph-permute 20 python3 studies/moe_kernel_device.py --device cuda --clocks graph-permute --repeats 3 --warmup 3
guarded moe-kernels-cpu-quick 15 python3 studies/moe_kernel_device.py --device cpu --quick --repeats 2 --prof-repeats 1 --warmup 1 --layers mixtral-ep8 --clocks events,kernels,graph-router
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
