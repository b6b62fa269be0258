#!/bin/bash
# Issue 44, session 60 (development, not registered: a diagnostic of the GPT-3 175B fp8 rows' level, -13% on NVIDIA's
# MLPerf rows): one GPT-3 TP 4 fp8 layer, op by op back to back and as one sequence, with the SM clock
# (studies/fp8_layer_device.py; the op list ops.json beside this script, from studies/fp8_layer_read.py --ops). ~60-120 s.
#   MAIN_COMMIT=<main> bash calibration/h200x1-fp8layer60-2026-12-02/device_run.sh   (nvidia-h200, one GPU)
W=/tmp/fp8layer60
BUDGET_S=${BUDGET_S:-300}
. calibration/device_lib.sh
export CUDA_VISIBLE_DEVICES=0
HERE=calibration/h200x1-fp8layer60-2026-12-02
guarded fp8-layer-quick 120 python3 studies/fp8_layer_device.py --ops $HERE/ops.json --quick
guarded fp8-layer 300 python3 studies/fp8_layer_device.py --ops $HERE/ops.json
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
