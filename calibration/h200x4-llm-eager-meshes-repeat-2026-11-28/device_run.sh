#!/bin/bash
# Issue 44: the lease-to-lease repeat of the host-bound 2-D layouts. tp+ddp and tp+fsdp of two presets of each earlier
# 4-GPU set (1b and 3.1b of h200x4-llm-eager-meshes-2026-11-28, 2b and 8b of ...-meshes2-...), same options, on the
# lease that is warm (it ran on set 2's): how far the same run moves between leases and within one (no prediction).
#   bash calibration/h200x4-llm-eager-meshes-repeat-2026-11-28/device_run.sh   (device machine, repository root)
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
B=/tmp/eager-repeat/runs
mkdir -p $B
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $B/nvidia-smi.txt 2>&1
lscpu > $B/lscpu.txt 2>&1
git log -1 --format='%H %s' > $B/commit.txt 2>&1 || true
common="--warmup 3 --steps 8 --profile 0"
four="python3 -m torch.distributed.run --standalone --nproc-per-node 4 -m simcluster.runner.llm_step"
for spec in "1b 2048:2" "3.1b 2048:1" "2b 2048:2" "8b 2048:1"; do
  set -- $spec
  for mode in tp+ddp tp+fsdp; do
    t0=$SECONDS
    timeout 120 $four --preset $1 --shapes $2 $common --mode $mode --group 2 > $B/$mode-$1.json 2> $B/$mode-$1.stderr.txt
    echo "$mode-$1 exit $? $((SECONDS - t0)) s" | tee -a $B/status.txt
    tar czf $OUT/runs.tgz -C /tmp/eager-repeat runs
  done
done
