#!/bin/bash
# Issue 44, session 40 (cudnnd128): torch's default SDPA backend (cuDNN) at 18 new shapes and the cudnnstep set's 9 call
# shapes, each in three harnesses (sustained / burst-ones / burst-rand), + 2 controls first and last, on one H200, with
# nvidia-smi's SM clock streamed; against the predictions registered in registered.yaml before the run (README).
#   MAIN_COMMIT=<main> bash calibration/h200x1-attention-cudnnd128-2026-11-30/device_run.sh    (`run` kind nvidia-h200)
# ~100 s of GPU (estimated), capped at 170 s. Comes back: $OUT/runs.tgz (runs/cudnnd128.json, its stderr with one
# progress line a record, the machine's record).
W=/tmp/attention-cudnnd128
. calibration/device_lib.sh
run cudnnd128 170 python3 calibration/h200x1-attention-cudnnd128-2026-11-30/device_run.py
