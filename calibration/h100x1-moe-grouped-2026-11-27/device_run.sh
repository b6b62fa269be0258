#!/bin/bash
# gpu-micro's moe-grouped section on one H100, run from the repository root. The card's times for the same groups (batched,
# and per-expert sums) were written to predicted-before.json before this ran.
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > $OUT/nvidia-smi.txt
mkdir -p $OUT/gpu-micro/gpu-micro
timeout 400 python3 -m simcluster.runner.gpu_micro --sections moe-grouped --preheat 5 > $OUT/gpu-micro/gpu-micro/stdout.txt 2> $OUT/gpu-micro/gpu-micro/stderr.txt
echo "rc=$?" >> $OUT/gpu-micro/gpu-micro/stderr.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv >> $OUT/nvidia-smi.txt
tail -3 $OUT/gpu-micro/gpu-micro/stderr.txt
python3 -c "
import json, os
d = json.load(open(os.environ['OUT'] + '/gpu-micro/gpu-micro/stdout.txt'))
g = d['moe_grouped']
print(d['device']['name'], d['torch'], 'groups', len(g), 'failed', [(r['mode'], r['error'][:80]) for r in g if 'error' in r][:3], 'errors', d['errors'])
"
