#!/bin/bash
# A GEMM loop beside NCCL all_reduces of DDP's 25 MiB fp32 buckets on one 2 x H200 pair (NVLink, NCCL_NVLS_ENABLE=0):
# each alone and both together (simcluster/runner/overlap_micro.py), at two GEMM sizes (issue 22, session 21).
#   bash calibration/h200x2-overlap-2026-11-23/device_run.sh   (on the device machine, repository root; $OUT comes back)
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
for cfg in 8192:200 4096:1000; do
  g=${cfg%%:*}; n=${cfg##*:}
  timeout 100 python3 -m torch.distributed.run --standalone --nproc-per-node 2 -m simcluster.runner.overlap_micro \
      --gemm $g --gemms $n > $OUT/overlap-g$g.json 2> $OUT/overlap-g$g.stderr.txt
done
