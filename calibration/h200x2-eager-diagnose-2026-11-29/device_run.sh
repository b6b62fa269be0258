#!/bin/bash
# Issue 44, session 37: two diagnostics on 2 x H200, no registered prediction (README).
#  1. memory: the allocator's history over the first three steps of DDP 3b 2048:3 and 0.5b 2048:6 and of cp 3b 16384:1
#     (studies/eager_memory_timeline.py): what is alive at each iteration's peak, by the Python frame that allocated it.
#  2. TP host: the runner's tp mode at 2b 2048:1 (a registered shape of the 'two' set, the model's worst TP miss) and at
#     the host-fit decoder (hidden 128, 8 layers, 512:1; calibration/h200x2-llm-host-2026-11-23), each with one profiled
#     step kept as a Chrome trace per rank: where the host's time per step goes at a real shape and at the fit's shape.
#   MAIN_COMMIT=<main> bash calibration/h200x2-eager-diagnose-2026-11-29/device_run.sh   (2 x H200; $OUT comes back)
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
W=/tmp/eager-diagnose
B=$W/runs
mkdir -p $B
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $B/nvidia-smi.txt 2>&1
lscpu > $B/lscpu.txt 2>&1
python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.device_count())' > $B/torch.txt 2>&1
echo "${MAIN_COMMIT:-unknown} (main, as given by the caller)" > $B/commit.txt
pack() { tar czf $OUT/runs.tgz -C $W runs; }
run() {   # name, limit (s), command...
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout $limit "$@" > $B/$name.json 2> $B/$name.stderr.txt
  local rc=$?
  echo "$name exit $rc $((SECONDS - t0)) s" | tee -a $B/status.txt
  [ $rc -ne 0 ] && tail -15 $B/$name.stderr.txt
  pack
}
two="python3 -m torch.distributed.run --standalone --nproc-per-node 2"
run mem-ddp-3b 150 $two studies/eager_memory_timeline.py --preset 3b --mode ddp --shape 2048:3
run mem-ddp-0.5b 120 $two studies/eager_memory_timeline.py --preset 0.5b --mode ddp --shape 2048:6
run mem-cp-3b 150 $two studies/eager_memory_timeline.py --preset 3b --mode cp --shape 16384:1
run tp-2b 120 $two -m simcluster.runner.llm_step --preset 2b --mode tp --shapes 2048:1 --warmup 5 --steps 10 --profile 1 --trace $B/tp-2b
run tp-L8 120 $two -m simcluster.runner.llm_step --layers 8 --hidden 128 --ffn 352 --heads 4 --kv-heads 2 --vocab 512 --tied no \
  --mode tp --shapes 512:1 --warmup 5 --steps 20 --profile 1 --trace $B/tp-L8
run tp-2b-repeat 120 $two -m simcluster.runner.llm_step --preset 2b --mode tp --shapes 2048:1 --warmup 5 --steps 10 --profile 1
du -sh $B; pack
