#!/bin/bash
# Held-out 1-GPU training steps at the layer shapes of large models (issue 22): 4 layers of Llama-3-8B
# (hidden 4096, GQA 32/8, ffn 14336, vocab 128256) and 2 layers of Llama-3-70B (hidden 8192, GQA 64/8, ffn
# 28672; vocab 32000 tied so it fits), with the runner's decoder (simcluster.runner.llm_step, amp).
#   bash calibration/h200x1-llm-shapes-2026-11-23/device_run.sh   (on the device machine, repository root; $OUT comes back)
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $OUT/nvidia-smi.txt 2>&1
python3 -m simcluster.runner.llm_step --layers 4 --hidden 4096 --ffn 14336 --heads 32 --kv-heads 8 --vocab 128256 --tied no \
    --shapes 4096:1,8192:1,2048:4 --warmup 3 --steps 10 > $OUT/8b-4L.json 2> $OUT/8b-4L.stderr.txt
python3 -m simcluster.runner.llm_step --layers 2 --hidden 8192 --ffn 28672 --heads 64 --kv-heads 8 --vocab 32000 --tied yes \
    --shapes 4096:1,2048:2,8192:1 --warmup 3 --steps 10 > $OUT/70b-2L.json 2> $OUT/70b-2L.stderr.txt
ls -la $OUT
