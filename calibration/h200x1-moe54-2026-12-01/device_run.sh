#!/bin/bash
# Issue 44, session 54 (moe54; REGISTERED before this ran: registered.yaml beside this script, validation/moe54.py): one
# rank's own work in AWS's Megatron-Bridge Qwen3-30B-A3B cells (TP 8 + SP, EP 16 / 32, micro-batch 4 / 1), one layer a
# call, on ONE GPU with no collective (studies/moe54_device.py -> runs/moe54.json), then its CPU dry-run form (seconds).
# Plain torch only: no Megatron wheel, no Transformer Engine, nothing carried. The runner imports
# studies/moe_kernel_device.py (its profiler clock) and studies/moe_router_device.py (named here so commit.txt hashes them).
# Expected ~40-90 s: torch import ~10-20 s; 4 cells x 3 passes x (3 warm-up + 10 x 5 timed calls + 3 profiled runs of 6
# calls) of 2-25 ms a call (~1.5 s a pass, ~20 s in all) plus the profiler's trace exports (~1-2 s each, 36 in all).
# Worst case ~250 s: the first call is killed at 240 s; the CPU quick run (limit 60 s; ~15 s on an idle host) starts
# only if fewer than BUDGET_S = 180 s have passed (so at most 180 + 60 = 240 s), plus the records and the packing.
#   MAIN_COMMIT=<main> bash calibration/h200x1-moe54-2026-12-01/device_run.sh   (nvidia-h200, one GPU)
W=/tmp/moe54
BUDGET_S=${BUDGET_S:-180}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
export CUDA_VISIBLE_DEVICES=0
guarded moe54 240 python3 studies/moe54_device.py --device cuda --repeats 10 --prof-repeats 3 --warmup 3
guarded moe54-cpu-quick 60 python3 studies/moe54_device.py --device cpu --quick --repeats 1 --prof-repeats 1 --warmup 0 --cells ep32-mb1
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
