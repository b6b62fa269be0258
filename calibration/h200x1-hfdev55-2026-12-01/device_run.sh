#!/bin/bash
# Issue 44, session 55 (hfdev55; REGISTERED before this ran: registered.yaml beside this script, validation/hfdev55.py):
# accelerate's FSDP1 (FULL_SHARD, one unit per decoder layer, bf16 MixedPrecision; torch switches it to NO_SHARD at world
# size 1) around a Hugging Face Llama against the same model bare under autocast, on ONE GPU, NCCL world size 1
# (studies/hfdev55_device.py -> runs/hfdev55.json), then its CPU dry-run form (seconds). Plain torch only: no wheel
# carried (DeepSpeed ZeRO-3 is not run; README says why).
# Expected ~50-120 s: torch import and NCCL init ~15-25 s; 3 sizes x 2 points x 2 variants = 12 configurations, each
# the model built on the GPU (<= 1.1B parameters, ~1-3 s), 5 warm-up + 15 timed steps of ~10-150 ms (~1-4 s).
# Worst case ~250 s: the GPU run is killed at 240 s; the CPU quick run (limit 60 s; ~10 s) starts only if fewer than
# BUDGET_S = 180 s have passed (so at most 180 + 60 = 240 s), plus the records and the packing.
#   MAIN_COMMIT=<main> bash calibration/h200x1-hfdev55-2026-12-01/device_run.sh   (nvidia-h200, one GPU)
W=/tmp/hfdev55
BUDGET_S=${BUDGET_S:-180}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
export CUDA_VISIBLE_DEVICES=0
guarded hfdev55 240 python3 studies/hfdev55_device.py --device cuda --warmup 5 --steps 15
guarded hfdev55-cpu-quick 60 python3 studies/hfdev55_device.py --device cpu --quick --warmup 1 --steps 2
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
