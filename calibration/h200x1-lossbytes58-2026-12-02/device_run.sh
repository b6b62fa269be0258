#!/bin/bash
# Issue 44, session 58 (development, not registered: a measurement the KempnerForge loss's memory term is read from):
# bytes per logit an eager cross-entropy holds, bf16 logits and .float() logits, logits kept or deleted through the
# backward (studies/loss_bytes_device.py). Expected ~20-40 s (torch import, 8 measurements of 1-4 G logits).
#   MAIN_COMMIT=<main> bash calibration/h200x1-lossbytes58-2026-12-02/device_run.sh   (nvidia-h200, one GPU)
W=/tmp/lossbytes58
BUDGET_S=${BUDGET_S:-120}
. calibration/device_lib.sh
export CUDA_VISIBLE_DEVICES=0
guarded loss_bytes 120 python3 studies/loss_bytes_device.py
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
