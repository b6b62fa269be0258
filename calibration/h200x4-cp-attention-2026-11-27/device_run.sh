#!/bin/bash
# Session 25: context-parallel attention on one node (registered in docs/models/llm-findings.md before the run).
# On the device machine, repository root; $OUT comes back. Files are named by the lease's GPU.
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
kind=h200; nvidia-smi -L | grep -q H100 && kind=h100
n=$(nvidia-smi -L | wc -l); O=$OUT; nvidia-smi -L > $O/smi-L.txt
for ranks in 2 4; do
  [ $ranks -le $n ] || continue
  for hk in 32:8 16:16; do
    h=${hk%%:*}; kv=${hk##*:}
    timeout 240 python3 -m torch.distributed.run --standalone --nproc-per-node $ranks -m simcluster.runner.cp_attention \
        --seqs 16384,32768,65536 --heads $h --kv-heads $kv > $O/cp-attention-$kind-x$ranks-h$h-kv$kv.json \
        2> $O/cp-attention-$kind-x$ranks-h$h-kv$kv.stderr.txt
    echo "ranks $ranks heads $h/$kv rc $?"; tail -3 $O/cp-attention-$kind-x$ranks-h$h-kv$kv.stderr.txt | cut -c1-300
  done
done
