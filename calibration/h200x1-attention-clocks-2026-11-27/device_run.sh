#!/bin/bash
# Session 25: causal attention on one H200 at 4K-64K with the SM clock and board power streamed (nvidia-smi every
# 20 ms): is the card's long-sequence miss (calibration/h200x4-cp-attention-2026-11-27: -6..-22% at 32K-64K) the
# power-limited clock? On the device machine, repository root; $OUT comes back.
export PYTHONUNBUFFERED=1
kind=h200; nvidia-smi -L | grep -q H100 && kind=h100
nvidia-smi -L > $OUT/smi-L.txt 2>&1
for hk in 32:8 16:16; do
  h=${hk%%:*}; kv=${hk##*:}
  timeout 200 python3 -m torch.distributed.run --standalone --nproc-per-node 1 -m simcluster.runner.cp_attention \
      --seqs 4096,8192,16384,32768,65536 --heads $h --kv-heads $kv --clocks --single-only \
      > $OUT/attention-clocks-$kind-h$h-kv$kv.json 2> $OUT/attention-clocks-$kind-h$h-kv$kv.stderr.txt
  echo "heads $h/$kv rc $?"
done
