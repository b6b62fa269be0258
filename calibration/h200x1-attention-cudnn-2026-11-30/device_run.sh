#!/bin/bash
# Issue 44, session 39 (cudnnwave): torch's default SDPA backend (cuDNN) and flash at 57 new shapes + 2 controls (first
# and last) on one H200, against the predictions registered in registered.yaml before the run (README). ~1-2 min of GPU.
#   MAIN_COMMIT=<main> bash calibration/h200x1-attention-cudnn-2026-11-30/device_run.sh     (`run` kind nvidia-h200)
# Comes back: $OUT/runs.tgz (runs/cudnn.json, its stderr with one progress line a record, the machine's record).
W=/tmp/attention-cudnn
. calibration/device_lib.sh
run cudnn 240 python3 calibration/h200x1-attention-cudnn-2026-11-30/device_run.py
