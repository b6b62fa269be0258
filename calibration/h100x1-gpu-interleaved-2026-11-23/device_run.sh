#!/bin/bash
# What ran on the device machine (the `run` tool, nvidia-h100-x1) for this bundle, from the repository root, with
# simcluster/runner/gpu_micro.py of branch s16-llm2 carried as .devcarry/llm2/gpu_micro.py:
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > $OUT/nvidia-smi.txt
python3 .devcarry/llm2/gpu_micro.py > $OUT/stdout.txt 2> $OUT/stderr.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv >> $OUT/nvidia-smi.txt
for i in 1 2 3; do
  timeout 120 python3 -m simcluster.runner.llm_step --preset 0.3b --shapes 2048:1,1024:4,2048:2,4096:1 --steps 10 --profile 0 > $OUT/rep03b_$i.json 2>> $OUT/rep.err
done
