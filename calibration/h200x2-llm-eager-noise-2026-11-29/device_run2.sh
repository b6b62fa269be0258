#!/bin/bash
# Issue 44, session 37, second call on the noise set's shapes: one profiled step per GPU-bound mode, kept as a Chrome
# trace per rank (README, "Profiled steps"), for the per-class comparison of the model's systematic +3.4..+8.3%:
# DDP 3b 2048:3, FSDP2 3b 2048:3, PP 2 1F1B 3b 2048:3 x 4, cp 1b 32768:1. Not a registered set.
#   MAIN_COMMIT=<main> bash calibration/h200x2-llm-eager-noise-2026-11-29/device_run2.sh   (2 x H200; $OUT comes back)
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
W=/tmp/eager-noise2
B=$W/profiled
mkdir -p $B
echo "${MAIN_COMMIT:-unknown} (main, as given by the caller)" > $B/commit.txt
pack() { tar czf $OUT/profiled.tgz -C $W profiled; }
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
common="--warmup 3 --steps 10 --profile 1"
run ddp-3b 90 $two --preset 3b --shapes 2048:3 $common --mode ddp --trace $B/ddp-3b
run fsdp-3b 90 $two --preset 3b --shapes 2048:3 $common --mode fsdp --trace $B/fsdp-3b
run pp-1f1b-3b 90 $two --preset 3b --shapes 2048:3 $common --mode pp --schedule 1f1b --microbatches 4 --trace $B/pp-1f1b-3b
run cp-1b 90 $two --preset 1b --shapes 32768:1 $common --mode cp --trace $B/cp-1b
run single-3b 90 python3 -m simcluster.runner.llm_step --preset 3b --shapes 2048:3 $common --mode single --trace $B/single-3b
du -sh $B; pack
