#!/bin/bash
# Issue 44, session 37: the post sets (validation/llm_eager_regimes.py --plan post and --plan postcp), predictions
# registered in each bundle's registered.yaml before this ran. post: DDP, FSDP2, PP 2 1F1B and GPipe (4 micro-batches)
# at 1.1b 2048:5, 0.8b 2048:1, 2b 2048:3; postcp (calibration/h200x2-llm-eager-postcp-2026-11-29): torch CP over both
# ranks with DDP at 1.1b 32768:1, 2b 32768:1, 0.8b 32768:2. Each run one process, --warmup 3 --steps 10 --profile 0,
# round-robin over the sizes. TP is left out (at the machine's noise: calibration/h200x2-llm-eager-noise-2026-11-29).
#   MAIN_COMMIT=<main> bash calibration/h200x2-llm-eager-post-2026-11-29/device_run.sh   (2 x H200; $OUT comes back)
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
W=/tmp/eager-post
mkdir -p $W/post/runs $W/postcp/runs
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $W/post/runs/nvidia-smi.txt 2>&1
lscpu > $W/post/runs/lscpu.txt 2>&1
echo "${MAIN_COMMIT:-unknown} (main, as given by the caller)" | tee $W/post/runs/commit.txt > $W/postcp/runs/commit.txt
pack() { tar czf $OUT/post.tgz -C $W/post runs; tar czf $OUT/postcp.tgz -C $W/postcp runs; }
run() {   # set, name, limit (s), command...
  local set=$1 name=$2 limit=$3; shift 3
  local t0=$SECONDS
  timeout $limit "$@" > $W/$set/runs/$name.json 2> $W/$set/runs/$name.stderr.txt
  local rc=$?
  echo "$name exit $rc $((SECONDS - t0)) s" | tee -a $W/$set/runs/status.txt
  [ $rc -ne 0 ] && tail -5 $W/$set/runs/$name.stderr.txt
  pack
}
two="python3 -m torch.distributed.run --standalone --nproc-per-node 2 -m simcluster.runner.llm_step"
common="--warmup 3 --steps 10 --profile 0"
for spec in "1.1b 2048:5" "0.8b 2048:1" "2b 2048:3"; do
  set -- $spec
  run post ddp-$1 90 $two --preset $1 --shapes $2 $common --mode ddp
  run post fsdp-$1 90 $two --preset $1 --shapes $2 $common --mode fsdp
  run post pp-1f1b-$1 120 $two --preset $1 --shapes $2 $common --mode pp --schedule 1f1b --microbatches 4
  run post pp-gpipe-$1 120 $two --preset $1 --shapes $2 $common --mode pp --schedule gpipe --microbatches 4
done
for spec in "1.1b 32768:1" "2b 32768:1" "0.8b 32768:2"; do
  set -- $spec
  run postcp cp-$1 120 $two --preset $1 --shapes $2 $common --mode cp
done
cat $W/post/runs/status.txt $W/postcp/runs/status.txt
