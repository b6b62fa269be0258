#!/bin/bash
# Issue 44, session 37: the 2-GPU eager modes' run-to-run noise (README). Five (mode, shape) pairs of the registered
# 2-GPU sets, each in three separate processes, round-robin over the modes (three rounds) so that a drift of the lease
# spreads over all of them: DDP 3b 2048:3, FSDP2 3b 2048:3, TP 0.5b 2048:6, PP 2 1F1B 3b 2048:3 x 4 micro-batches,
# cp 1b 32768:1. Not a registered set: the shapes were measured before (these are repeats), nothing is predicted here.
#   MAIN_COMMIT=<main> bash calibration/h200x2-llm-eager-noise-2026-11-29/device_run.sh   (2 x H200; $OUT comes back)
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
W=/tmp/eager-noise
B=$W/runs
mkdir -p $B
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $B/nvidia-smi.txt 2>&1
echo "${MAIN_COMMIT:-unknown} (main, as given by the caller)" > $B/commit.txt
pack() { tar czf $OUT/runs.tgz -C $W runs; }
run() {   # name, limit (s), command...
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout $limit "$@" > $B/$name.json 2> $B/$name.stderr.txt
  local rc=$?
  echo "$name exit $rc $((SECONDS - t0)) s" | tee -a $B/status.txt
  [ $rc -ne 0 ] && tail -5 $B/$name.stderr.txt
  pack
}
two="python3 -m torch.distributed.run --standalone --nproc-per-node 2 -m simcluster.runner.llm_step"
common="--warmup 3 --steps 10 --profile 0"
for r in 1 2 3; do
  run ddp-3b-r$r 90 $two --preset 3b --shapes 2048:3 $common --mode ddp
  run fsdp-3b-r$r 90 $two --preset 3b --shapes 2048:3 $common --mode fsdp
  run tp-0.5b-r$r 90 $two --preset 0.5b --shapes 2048:6 $common --mode tp
  run pp-1f1b-3b-r$r 90 $two --preset 3b --shapes 2048:3 $common --mode pp --schedule 1f1b --microbatches 4
  run cp-1b-r$r 90 $two --preset 1b --shapes 32768:1 $common --mode cp
done
cat $B/status.txt
