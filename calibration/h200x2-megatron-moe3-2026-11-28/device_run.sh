#!/bin/bash
# Issue 44 (moelab3): is the late rank launch hygiene? On the device machine (nvidia-h200-x2), repository root, with
# megatron-core 0.14.0's PyPI wheel carried in .device/wheels (not committed; `pip download --no-deps --python-version 3.12
# --only-binary=:all: megatron-core==0.14.0`); $OUT comes back. Registered before the run: registered.yaml (written by
# `python studies/megatron_moe/register.py --set moe3`), the reading rule in README.md. Four configurations at EP 2, each
# in two arms (register.py ARMS): A as moe2 was launched (no pinning, lazy module loading, warm-up 3), B pinned
# (device.py --pin: each rank on its own physical cores of its GPU's NUMA node), CUDA_MODULE_LOADING=EAGER, warm-up 10;
# 8 timed steps, one profiled step kept as every rank's Chrome trace. The arms alternate in order (A B, B A, ...) so
# that drift over the lease does not fall on one arm. Everything goes to /tmp/moe3 ($MOE3_WORK if set), packed into
# $OUT/$SET.tgz after each run (at most 8 files come back); a run is not started once 260 s have passed and is cut at
# 90 s (the call: ~230-290 s, at most ~350 s).
SET=${MOE_SET:-moe3}   # moe4 (1 GPU) runs this script with MOE_SET=moe4: the set, its work folder and its tgz
W=${MOE3_WORK:-/tmp/$SET}; mkdir -p $W; start=$SECONDS
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
unset CUDA_MODULE_LOADING
kind=h200; nvidia-smi -L | grep -q H100 && kind=h100
gpus=$(nvidia-smi -L | wc -l); echo "gpus $gpus ($kind)"
pip install -q --no-deps --target /tmp/mc .device/wheels/megatron_core-0.14.0-*.whl > $W/pip.log 2>&1; echo "pip rc $?"
export PYTHONPATH=/tmp/mc:$PWD
R=studies/megatron_moe
{ echo "## nvidia-smi topo -m"; nvidia-smi topo -m; echo "## lscpu"; lscpu; echo "## nproc $(nproc)"
  echo "## the pinning plan (arm B; studies/megatron_moe/pinning.py)"; python3 $R/pinning.py $gpus; } > $W/host.txt 2>&1
python3 $R/pinning.py --brief $gpus
i=0
for name in $(python3 $R/register.py --names $SET); do
  arms="A B"; [ $((i % 2)) = 1 ] && arms="B A"; i=$((i + 1))
  for arm in $arms; do
    tag=$kind-x$gpus-$name-arm$arm
    if [ $((SECONDS - start)) -gt 260 ]; then echo "$tag skipped: $((SECONDS - start)) s have passed"; continue; fi
    flags=$(python3 $R/register.py --flags $name --arm $arm); armenv=$(python3 $R/register.py --env $arm)
    echo "$tag: ${armenv:+$armenv }device.py $flags"
    env $armenv timeout 90 python3 -m torch.distributed.run --standalone --nproc-per-node $gpus \
        $R/device.py $flags --trace $W/trace-$tag-rank{rank}.json.gz > $W/megatron-moe-$tag.json 2> $W/megatron-moe-$tag.stderr.txt
    echo "$tag rc $? at $((SECONDS - start)) s"; python3 -c "
import json; d=json.load(open('$W/megatron-moe-$tag.json')); r=d['rank0']
print(' ', r['status'], 'median step ms', [round(x * 1e3, 2) if x else x for x in d['median_step_s_per_rank']],
      'host issue ms', [round(x * 1e3, 2) if x else x for x in d['median_host_issue_s_per_rank']], d['launch'],
      'cpus', [(p or {}).get('cpus_after', (p or {}).get('error')) for p in d['pin_per_rank']],
      'threads', d['threads_per_rank'], r.get('error', '')[:300], r.get('where', '')[-600:])" 2>&1 | tail -8
    tar czf $OUT/$SET.tgz -C $(dirname $W) $(basename $W)
  done
done
ls -la $W $OUT; echo "total $((SECONDS - start)) s"
