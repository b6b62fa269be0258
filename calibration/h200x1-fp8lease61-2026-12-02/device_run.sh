#!/bin/bash
# Issue 44, session 61 (fp8lease61, registered: validation/fp8lease61-registered.txt): on one H200 lease, the GPT-3
# TP 4 fp8 layer of fp8layer60 (its op list, calibration/h200x1-fp8layer60-2026-12-02/ops.json) at the start and the
# end of the call, and between them the card's own fp8 calibration trace (gpu-micro's fp8 and fp8-layers sections, as
# calibration/h200x1-gpu-fp8-2026-11-23 ran them): the lease-to-lease spread of the power-capped fp8 GEMM rate, and a
# card refitted on this lease's trace read against this lease's layer. ~150-200 s.
#   MAIN_COMMIT=<main> bash calibration/h200x1-fp8lease61-2026-12-02/device_run.sh   (nvidia-h200, one GPU)
W=/tmp/fp8lease61
BUDGET_S=${BUDGET_S:-250}
. calibration/device_lib.sh
export CUDA_VISIBLE_DEVICES=0
OPS=calibration/h200x1-fp8layer60-2026-12-02/ops.json
guarded fp8-layer-a 120 python3 studies/fp8_layer_device.py --ops $OPS
guarded gpu-micro-fp8 240 python3 -m simcluster.runner.gpu_micro --sections fp8,fp8-layers --preheat 5
guarded fp8-layer-b 120 python3 studies/fp8_layer_device.py --ops $OPS
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
