#!/bin/bash
# gpu-micro's gemm-shapes section on one H100 (the GEMMs of validation/gemm_shapes.py), run from the repository root. The
# cards' times (python validation/gemm_shapes.py --plan) were written to predicted-before.txt before this ran.
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > $OUT/nvidia-smi.txt
mkdir -p $OUT/gpu-micro/gpu-micro
timeout 400 python3 -m simcluster.runner.gpu_micro --sections gemm-shapes --gemm-shapes "$(python3 validation/gemm_shapes.py --shapes-arg)" \
    --preheat 5 > $OUT/gpu-micro/gpu-micro/stdout.txt 2> $OUT/gpu-micro/gpu-micro/stderr.txt
echo "rc=$?" >> $OUT/gpu-micro/gpu-micro/stderr.txt
tail -3 $OUT/gpu-micro/gpu-micro/stderr.txt
