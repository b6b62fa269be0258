#!/bin/bash
# Issue 44, session 38 (fa2wave): flash and default (cuDNN) causal SDPA at 62 new shapes + 2 controls (first and last)
# on one H200, against the predictions registered in registered.yaml before the run (README). ~2-3 min of GPU time.
#   MAIN_COMMIT=<main> bash calibration/h200x1-attention-wave-2026-11-29/device_run.sh     (`run` kind nvidia-h200)
# Comes back: $OUT/runs.tgz (runs/wave.json, its stderr with one progress line a record, the machine's record).
W=/tmp/attention-wave
. calibration/device_lib.sh
run wave 230 python3 calibration/h200x1-attention-wave-2026-11-29/device_run.py
