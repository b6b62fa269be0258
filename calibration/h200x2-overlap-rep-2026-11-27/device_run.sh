#!/bin/bash
# Session 24: asked for 2 x H100 (nvidia-h100-x2) to measure the H100 card's comm_overlap; the lease came as 2 x H200, so this
# is a third H200 lease of calibration/h200x2-overlap-2026-11-23's measurement. On the device machine, repository root.
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
O=/tmp/w/h100x2-overlap-2026-11-27; mkdir -p $O
nvidia-smi -L > $O/smi-L.txt; lscpu > $O/lscpu.txt
for cfg in 8192:200 4096:1000; do
  g=${cfg%%:*}; n=${cfg##*:}
  timeout 150 python3 -m torch.distributed.run --standalone --nproc-per-node 2 -m simcluster.runner.overlap_micro \
      --gemm $g --gemms $n > $O/overlap-g$g.json 2> $O/overlap-g$g.stderr.txt
  echo "gemm $g rc $?"
done
tar czf $OUT/overlap.tgz -C /tmp/w h100x2-overlap-2026-11-27
