#!/bin/bash
# Issue 44, session 30: per-rank timelines of torch.distributed.pipelining (development data for the interleaved
# schedule's step time: the send/receive waits beside compute and the host-bound warm-up).
#   bash calibration/h200x4-llm-eager-pptrace-2026-11-28/device_run.sh      # on nvidia-h200-x4; $OUT gets trace.tgz
# One profiled step per rank (torch.profiler, CPU + CUDA), kept as gzipped Chrome traces, for 1F1B and interleaved
# 1F1B (2 chunks per rank) at the meshes2 presets 0.5b (micro-batch 4) and 2b (micro-batch 2), 8 micro-batches,
# and interleaved at 16 micro-batches for 0.5b. None of these runs is a registered (held-out) run.
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
W=/tmp/eager-pptrace
mkdir -p $W/runs
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $W/runs/nvidia-smi.txt 2>&1
lscpu > $W/runs/lscpu.txt 2>&1
python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.device_count())' > $W/runs/torch.txt 2>&1
echo "${REGISTER_COMMIT:-unknown}" > $W/runs/commit.txt
pack() { tar czf $OUT/trace.tgz -C $W runs; }
run() {   # name, limit (s), command...
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout $limit "$@" > $W/runs/$name.json 2> $W/runs/$name.stderr.txt
  local rc=$?
  echo "$name exit $rc $((SECONDS - t0)) s" | tee -a $W/runs/status.txt
  [ $rc -ne 0 ] && tail -5 $W/runs/$name.stderr.txt
  pack
}
four="python3 -m torch.distributed.run --standalone --nproc-per-node 4 -m simcluster.runner.llm_step"
for pmm in 0.5b:4:8:1f1b 0.5b:4:8:interleaved 2b:2:8:1f1b 2b:2:8:interleaved 0.5b:4:16:interleaved; do
  IFS=: read p mb m sched <<< "$pmm"
  v=$([ $sched = interleaved ] && echo 2 || echo 1)
  run pp4-$sched-$p-m$m 150 $four --preset $p --shapes 2048:$mb --warmup 3 --steps 8 --profile 1 \
    --trace $W/runs/pp4-$sched-$p-m$m --mode pp --schedule $sched --virtual-stages $v --microbatches $m
done
cat $W/runs/status.txt
