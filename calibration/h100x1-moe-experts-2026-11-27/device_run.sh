#!/bin/bash
# gpu-micro's moe-experts section (the expert GEMMs of the published MoE rows' layers) on one H100, run from the repository
# root. The card's predictions for the same shapes were written to predicted-before.json before this ran.
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > $OUT/nvidia-smi.txt
timeout 400 python3 -m simcluster.runner.gpu_micro --sections moe-experts --preheat 5 > $OUT/stdout.txt 2> $OUT/stderr.txt
echo "rc=$?" >> $OUT/stderr.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv >> $OUT/nvidia-smi.txt
tail -3 $OUT/stderr.txt
python3 -c "
import json, os
d = json.load(open(os.environ['OUT'] + '/stdout.txt'))
print(d['device']['name'], d['torch'], 'records', len(d['gemm']), 'errors', d['errors'])
"
