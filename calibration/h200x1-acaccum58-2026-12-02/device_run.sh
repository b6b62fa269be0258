#!/bin/bash
# Issue 44, session 58 (acaccum58; REGISTERED before this ran: registered.json beside this script, validation/acaccum58.py):
# framework torch on one GPU, full activation checkpointing, 4 micro-batches a step (and 1, the control): the first
# backward's fp32 gradients beside the next micro-batches' checkpointed live bytes. One process a run, runs/<preset>-m<N>.json.
# Expected ~120-200 s: 6 processes of ~15-35 s (torch import, model build, 2 warm-up + 3 timed steps). Worst case:
# BUDGET_S 300 + the largest limit 90.
#   MAIN_COMMIT=<main> bash calibration/h200x1-acaccum58-2026-12-02/device_run.sh   (nvidia-h200, one GPU)
W=/tmp/acaccum58
BUDGET_S=${BUDGET_S:-300}
. calibration/device_lib.sh
export CUDA_VISIBLE_DEVICES=0
step="python3 -m simcluster.runner.llm_step --mode single --ac-mode full --warmup 2 --steps 3 --profile 0"
for shape in 1b:2048:8 3b:2048:4 1.1b:2048:8; do
  IFS=: read -r preset seq mb <<< "$shape"
  for m in 4 1; do
    guarded "$preset-m$m" 90 $step --grad-accum "$m" --preset "$preset" --shapes "$seq:$mb"
  done
done
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
