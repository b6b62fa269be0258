#!/bin/bash
# Host (CPU) cost of eager torch training steps under each 2-GPU mode (issue 22): the runner's own decoder
# (simcluster.runner.llm_step) with hidden 128, so GPU work is negligible and the step time is the host issuing
# kernels (and the hooks / DTensor dispatch of the mode), at 2, 8 and 32 layers on one 2 x H200 host, NVLink.
# Slope = host time per layer, intercept = embedding, head, loss, optimizer and step overhead. Mode single is the
# same machine's 1-GPU baseline. Not one of the validated shapes.
#   bash calibration/h200x2-llm-host-2026-11-23/device_run.sh   (on the device machine, repository root; $OUT comes back)
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
mkdir -p $OUT/b
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/b/nvidia-smi.txt 2>&1
lscpu > $OUT/b/lscpu.txt 2>&1
arch="--hidden 128 --ffn 352 --heads 4 --kv-heads 2 --vocab 512 --tied no --shapes 128:1,512:1 --warmup 5 --steps 20"
for layers in 2 8 32; do
  python3 -m simcluster.runner.llm_step --layers $layers $arch --mode single > $OUT/b/single-L$layers.json 2> $OUT/b/single-L$layers.stderr.txt
  for mode in ddp fsdp tp; do
    timeout 120 python3 -m torch.distributed.run --standalone --nproc-per-node 2 -m simcluster.runner.llm_step \
        --layers $layers $arch --mode $mode > $OUT/b/$mode-L$layers.json 2> $OUT/b/$mode-L$layers.stderr.txt
  done
done
tar czf $OUT/host.tgz -C $OUT b
