#!/bin/bash
# Session 30 (moehost): a second Megatron-Core MoE set, registered before the run (registered.yaml, written by
# studies/megatron_moe/register.py at the model's commit). On the device machine (nvidia-h200-x4), repository root, with
# megatron-core 0.14.0's PyPI wheel carried in .device/wheels (not committed; `pip download --no-deps --python-version 3.12
# --only-binary=:all: megatron-core==0.14.0`); $OUT comes back. Four runs of forward + backward steps of a 4-layer MoE
# decoder (median of 8 steps after 3, one profiled step kept as every rank's Chrome trace: which rank the EP
# collectives wait for), each well under a minute. The outputs are written to /tmp/moe2 and packed into $OUT/moe2.tgz
# after each run ($OUT brings back at most 8 files; the lead's edit after the registration, packing only).
W=/tmp/moe2; mkdir -p $W
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
kind=h200; nvidia-smi -L | grep -q H100 && kind=h100
pip install -q --no-deps --target /tmp/mc .device/wheels/megatron_core-0.14.0-*.whl > $W/pip.log 2>&1; echo "pip rc $?"
export PYTHONPATH=/tmp/mc:$PWD
for name in mixtral-like-ep2 qwen3-like-e64-ep2 deepseek-like-e64-top6-ep4 small-e32-top4-ep4; do
  flags=$(python3 studies/megatron_moe/register.py --flags $name)
  timeout 120 python3 -m torch.distributed.run --standalone --nproc-per-node 4 studies/megatron_moe/device.py $flags \
      --warmup 3 --steps 8 --profile 1 --trace $W/trace-$kind-x4-$name-rank{rank}.json.gz \
      > $W/megatron-moe-$kind-x4-$name.json 2> $W/megatron-moe-$kind-x4-$name.stderr.txt
  echo "$name rc $?"; python3 -c "
import json; d=json.load(open('$W/megatron-moe-$kind-x4-$name.json')); r=d['rank0']
print(r['status'], r.get('median_step_s'), r.get('error','')[:300], r.get('where','')[-600:])" 2>&1 | tail -8
  tar czf $OUT/moe2.tgz -C /tmp moe2
done
ls -la $W $OUT
