#!/bin/bash
# Session 25: the two EP 4 configurations of device_run.sh again, keeping rank 0's profiled step as a Chrome trace
# (after the first run's read: which kernels take the GPU time). On the device machine, repository root; $OUT comes back.
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
kind=h200; nvidia-smi -L | grep -q H100 && kind=h100
pip install -q --no-deps --target /tmp/mc .device/wheels/megatron_core-0.14.0-*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/mc:$PWD
common="--layers 4 --hidden 2048 --head-dim 128 --vocab 32768 --seq 4096 --micro-batch 1 --warmup 3 --steps 8 --profile 1"
for cfg in "qwen3-like-ep4:--heads 32 --kv-heads 4 --experts 128 --top-k 8 --expert-ffn 768 --ep 4" \
           "mixtral-like-ep4:--heads 16 --kv-heads 8 --experts 8 --top-k 2 --expert-ffn 5632 --ep 4"; do
  name=${cfg%%:*}; flags=${cfg#*:}
  timeout 200 python3 -m torch.distributed.run --standalone --nproc-per-node 4 -m simcluster.runner.megatron_moe $common $flags \
      --trace $OUT/trace-$kind-x4-$name.json.gz > $OUT/megatron-moe-trace-$kind-x4-$name.json 2> /dev/null
  echo "$name rc $?"
done
ls -la $OUT
