#!/bin/bash
# Host (CPU) cost of eager torch training steps, for the LLM step model's torch-amp framework (issue 22):
# the runner's own decoder (simcluster.runner.llm_step) with hidden 128, so GPU work is negligible and the
# step time is the host issuing kernels, at 2, 8, 16 and 32 layers (slope = host time per layer, intercept =
# embedding, head, loss, optimizer and step overhead). Not one of the validated shapes (0.3b-3b).
#   bash calibration/llm-host-2026-11-23/device_run.sh   (on the device machine, from the repository root; $OUT comes back)
export PYTHONUNBUFFERED=1
name=${1:?gpu label, e.g. h100}
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/$name-nvidia-smi.txt 2>&1
lscpu > $OUT/$name-lscpu.txt 2>&1
for layers in 2 8 16 32; do
  python3 -m simcluster.runner.llm_step --layers $layers --hidden 128 --ffn 352 --heads 4 --kv-heads 2 --vocab 512 --tied no \
      --shapes 128:1,512:1 --warmup 5 --steps 20 > $OUT/$name-L$layers.json 2> $OUT/$name-L$layers.stderr.txt
done
ls -la $OUT
