#!/bin/bash
# Session 25: Megatron-Core's own MoE layer on one node (registered in docs/models/llm-findings.md before the run).
# On the device machine, repository root, with megatron-core 0.14.0's PyPI wheel carried in .device/wheels (not
# committed; `pip download --no-deps --python-version 3.12 --only-binary=:all: megatron-core==0.14.0`); $OUT comes back.
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
kind=h200; nvidia-smi -L | grep -q H100 && kind=h100
pip install -q --no-deps --target /tmp/mc .device/wheels/megatron_core-0.14.0-*.whl > $OUT/pip.log 2>&1; echo "pip rc $?"
export PYTHONPATH=/tmp/mc:$PWD
common="--layers 4 --hidden 2048 --head-dim 128 --vocab 32768 --seq 4096 --micro-batch 1 --warmup 3 --steps 8 --profile 1"
run() {
  name=$1; shift
  timeout 200 python3 -m torch.distributed.run --standalone --nproc-per-node 4 -m simcluster.runner.megatron_moe $common "$@" \
      > $OUT/megatron-moe-$kind-x4-$name.json 2> $OUT/megatron-moe-$kind-x4-$name.stderr.txt
  echo "$name rc $?"; python3 -c "
import json,sys; d=json.load(open('$OUT/megatron-moe-$kind-x4-$name.json')); r=d['rank0']
print(r['status'], r.get('median_step_s'), r.get('error','')[:300], r.get('where','')[-600:])" 2>&1 | tail -8
}
run qwen3-like-ep4 --heads 32 --kv-heads 4 --experts 128 --top-k 8 --expert-ffn 768 --ep 4
run mixtral-like-ep4 --heads 16 --kv-heads 8 --experts 8 --top-k 2 --expert-ffn 5632 --ep 4
run qwen3-like-ep1 --heads 32 --kv-heads 4 --experts 128 --top-k 8 --expert-ffn 768 --ep 1
