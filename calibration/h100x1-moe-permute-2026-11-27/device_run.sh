#!/bin/bash
# gpu-micro's moe-permute section on one H100, run from the repository root. The model's prices for the same layers
# (python validation/moe_permute.py --plan) were written to predicted-before.txt before this ran.
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > $OUT/nvidia-smi.txt
mkdir -p $OUT/gpu-micro/gpu-micro
timeout 300 python3 -m simcluster.runner.gpu_micro --sections moe-permute --preheat 5 > $OUT/gpu-micro/gpu-micro/stdout.txt 2> $OUT/gpu-micro/gpu-micro/stderr.txt
echo "rc=$?" >> $OUT/gpu-micro/gpu-micro/stderr.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv >> $OUT/nvidia-smi.txt
tail -3 $OUT/gpu-micro/gpu-micro/stderr.txt
python3 -c "
import json, os
d = json.load(open(os.environ['OUT'] + '/gpu-micro/gpu-micro/stdout.txt'))
print(d['device']['name'], d['torch'], 'records', len(d.get('moe_permute', [])), 'errors', d['errors'])
"
