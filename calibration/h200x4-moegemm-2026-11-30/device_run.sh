#!/bin/bash
# Issue 44, session 48 (moegemm; REGISTERED before this ran: registered.yaml beside this script, validation/moegemm.py):
# the published MoE rows' own expert-GEMM groups (simcluster/heldout/moegemm.GRID: 18 layers x 9 groups; loop, 4
# streams, torch._grouped_mm) on ONE GPU of the call (CUDA_VISIBLE_DEVICES=0), then the dispatcher's permutations
# (studies/moe_gemms_device.py section moe-permute, session 24's six layers; a reference, judges nothing).
# Expected ~60-120 s; worst case BUDGET_S + 150 s = 270 s (a run is not launched after BUDGET_S s).
#   MAIN_COMMIT=<main> bash calibration/h200x4-moegemm-2026-11-30/device_run.sh   (nvidia-h200-x4, one GPU used)
W=/tmp/moegemm
BUDGET_S=${BUDGET_S:-120}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
export CUDA_VISIBLE_DEVICES=0
guarded gpu-micro-moe-rows 150 python3 studies/moe_gemms_device.py --sections moe-rows --repeats 10 --warmup 3 --preheat 5
guarded gpu-micro-moe-permute 60 python3 studies/moe_gemms_device.py --sections moe-permute --repeats 10 --warmup 3 --preheat 0
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
