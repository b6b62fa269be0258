#!/bin/bash
# What ran on the device machine (the `run` tool, nvidia-h200) for this bundle, from the repository root, with
# simcluster/runner/gpu_micro.py of branch s16-llm2 carried as .devcarry/llm2/gpu_micro.py:
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > $OUT/nvidia-smi.txt
python3 .devcarry/llm2/gpu_micro.py > $OUT/stdout.txt 2> $OUT/stderr.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv >> $OUT/nvidia-smi.txt
