#!/bin/bash
# Issue 44, session 36: a held-out 2-GPU set (validation/llm_eager_regimes.py --plan two): DDP, FSDP2 and TP over 2 ranks
# and torch.distributed.pipelining over 2 stages (GPipe, 1F1B; 4 micro-batches) at 0.5b x 6, 2b x 1 and 3b x 3, seq 2048,
# with the repository's runner (simcluster.runner.llm_step); predictions registered in registered.yaml before this ran.
#   MAIN_COMMIT=<main's commit> bash calibration/h200x2-llm-eager-two-2026-11-29/device_run.sh   (2 x H200; $OUT comes back)
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
W=/tmp/eager-two
B=$W/runs
mkdir -p $B
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $B/nvidia-smi.txt 2>&1
nvidia-smi topo -m >> $B/nvidia-smi.txt 2>&1
lscpu > $B/lscpu.txt 2>&1
python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.device_count())' > $B/torch.txt 2>&1
echo "${MAIN_COMMIT:-unknown} (main, as given by the caller; the device copy's .git may lag)" > $B/commit.txt
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
for spec in "0.5b 2048:6" "2b 2048:1" "3b 2048:3"; do   # heldout/eager.py SIZES5
  set -- $spec
  run ddp-$1 120 $two --preset $1 --shapes $2 $common --mode ddp
  run fsdp-$1 120 $two --preset $1 --shapes $2 $common --mode fsdp
  run tp-$1 120 $two --preset $1 --shapes $2 $common --mode tp
  run pp-gpipe-$1 150 $two --preset $1 --shapes $2 $common --mode pp --schedule gpipe --microbatches 4
  run pp-1f1b-$1 150 $two --preset $1 --shapes $2 $common --mode pp --schedule 1f1b --microbatches 4
done
cat $B/status.txt
