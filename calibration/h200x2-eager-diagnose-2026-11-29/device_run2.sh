#!/bin/bash
# Issue 44, session 37, second diagnostic call (README, "Second call"): does the TP step's host time depend on the tokens
# (GPU work), the hidden size, or the process? The runner's tp mode, no profiler, several shapes per process:
#   2b at 128:1, 2048:1, 128:1 (same process: GPU work x16 between the first and the last shape);
#   the hidden-128 host-fit decoder at 24 layers (2b's count), twice in two processes;
#   2b's hidden / ffn / heads at 8 layers and vocab 512 (hidden size alone), at 128:1 and 2048:1.
#   MAIN_COMMIT=<main> bash calibration/h200x2-eager-diagnose-2026-11-29/device_run2.sh   (2 x H200; $OUT comes back)
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
W=/tmp/eager-diagnose2
B=$W/runs2
mkdir -p $B
echo "${MAIN_COMMIT:-unknown} (main, as given by the caller)" > $B/commit.txt
pack() { tar czf $OUT/runs2.tgz -C $W runs2; }
run() {   # name, limit (s), command...
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout $limit "$@" > $B/$name.json 2> $B/$name.stderr.txt
  local rc=$?
  echo "$name exit $rc $((SECONDS - t0)) s" | tee -a $B/status.txt
  [ $rc -ne 0 ] && tail -15 $B/$name.stderr.txt
  pack
}
tp="python3 -m torch.distributed.run --standalone --nproc-per-node 2 -m simcluster.runner.llm_step --mode tp --warmup 5 --steps 10 --profile 0"
tiny="--hidden 128 --ffn 352 --heads 4 --kv-heads 2 --vocab 512 --tied no"
run tp-2b-tokens 150 $tp --preset 2b --shapes 128:1,2048:1,128:1
run tp-tiny-L24-a 90 $tp --layers 24 $tiny --shapes 128:1,512:1
run tp-wide-L8 120 $tp --layers 8 --hidden 2560 --ffn 6912 --heads 20 --kv-heads 4 --vocab 512 --tied no --shapes 128:1,2048:1
run tp-tiny-L24-b 90 $tp --layers 24 $tiny --shapes 128:1,512:1
run tp-2b-again 120 $tp --preset 2b --shapes 2048:1,128:1
pack
