#!/bin/bash
# Issue 44 / 41, session 59 (development, not registered: a diagnostic of the mlperf59 rows' miss): GPT-3 175B's TP 4
# weight-gradient GEMMs writing an fp32 main_grad, bf16 and fp8 (studies/fp8_wgrad_device.py). Expected ~60-90 s.
#   MAIN_COMMIT=<main> bash calibration/h200x1-fp8wgrad59-2026-12-02/device_run.sh   (nvidia-h200, one GPU)
W=/tmp/fp8wgrad59
BUDGET_S=${BUDGET_S:-240}
. calibration/device_lib.sh
export CUDA_VISIBLE_DEVICES=0
guarded fp8-wgrad 300 python3 studies/fp8_wgrad_device.py
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
