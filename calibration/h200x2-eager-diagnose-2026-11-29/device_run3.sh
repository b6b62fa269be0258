#!/bin/bash
# Issue 44, session 37, third diagnostic call (README, "Third call"): the memory timelines again with the replay that
# counts a block out at free_requested as torch's allocated statistic does (cold read A: the first call's replay
# waited for free_completed, so its alive-at-peak lists were not the state at the measured peak): DDP 3b 2048:3 in three
# processes (the first-steps copy came in 1 of 3 processes of the noise set), DDP 0.5b 2048:6 and cp 3b 16384:1 once.
#   MAIN_COMMIT=<main> bash calibration/h200x2-eager-diagnose-2026-11-29/device_run3.sh   (2 x H200; $OUT comes back)
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
W=/tmp/eager-diagnose3
B=$W/runs3
mkdir -p $B
echo "${MAIN_COMMIT:-unknown} (main, as given by the caller)" > $B/commit.txt
pack() { tar czf $OUT/runs3.tgz -C $W runs3; }
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
for r in 1 2 3; do
  run mem-ddp-3b-r$r 120 $two studies/eager_memory_timeline.py --preset 3b --mode ddp --shape 2048:3
done
run mem-ddp-0.5b 120 $two studies/eager_memory_timeline.py --preset 0.5b --mode ddp --shape 2048:6
run mem-cp-3b 150 $two studies/eager_memory_timeline.py --preset 3b --mode cp --shape 16384:1
pack
