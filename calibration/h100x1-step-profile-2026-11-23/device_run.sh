#!/bin/bash
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $OUT/smi.txt
python3 .devcarry/kernel_profile.py $OUT/kernels.json 2> $OUT/kernels.err
for i in 1 2 3; do
  python3 -m simcluster.runner.llm_step --preset 3b --shapes 2048:2,4096:1 --steps 10 --profile 0 > $OUT/rep3b_$i.json 2>> $OUT/rep.err
  python3 -m simcluster.runner.llm_step --preset 1b --shapes 2048:2 --steps 10 --profile 0 > $OUT/rep1b_$i.json 2>> $OUT/rep.err
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv >> $OUT/smi.txt
ls -la $OUT
