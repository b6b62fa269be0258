#!/bin/bash
# Issue 44, session 38 (fa2adopt): flash and default (cuDNN) NON-causal SDPA at 17 shapes + 2 causal controls (first
# and last) on one H200, against the predictions registered in registered.yaml before the run (README). ~1-2 min of GPU.
#   MAIN_COMMIT=<main> bash calibration/h200x1-attention-noncausal-2026-11-29/device_run.sh     (`run` kind nvidia-h200)
# Comes back: $OUT/runs.tgz (runs/noncausal.json, its stderr with one progress line a record, the machine's record).
W=/tmp/attention-noncausal
. calibration/device_lib.sh
run noncausal 200 python3 calibration/h200x1-attention-noncausal-2026-11-29/device_run.py
