#!/bin/bash
# Issue 44, development probe (NOT registered, nothing judged): why the op policy's host cost per kernel at real shapes
# exceeds the hidden-128 fit (68.7 us per kernel + 5.83 ms per step). hostprobe.py, one process per shape, op then full
# on the same model (3 untimed + 6 timed steps + 1 profiled step each): per-step wall / host issue / issuing thread's CPU
# time, forward / backward / optimizer issue, op-policy calls and Python time, GC pauses, allocator counter deltas
# (cudaMalloc / cudaFree / retries), and a profiled step (top CPU ops by self time, CUDA runtime calls with their long
# ones, kernels, GPU busy union and idle gaps). Shapes: hidden 128 at 24 layers (GPU-trivial, as the fit), 0.5b 2048:8,
# 2b 2048:4 (the compile2 op misses), then 0.5b 2048:2 (same op count as 0.5b 2048:8, a quarter of the bytes: per-op
# against per-byte) if time is left.
# Only torch is needed (nothing carried). Every part starts only while fewer than its start limit of seconds have
# passed (the call stays under ~145 s); status.txt says what ran; ophost.tgz is rewritten after every run.
#   bash calibration/h200x1-llm-ophost-2026-11-29/device_run.sh        (repository root; $OUT comes back: ophost.tgz)
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
W=/tmp/ophost; D=calibration/h200x1-llm-ophost-2026-11-29
mkdir -p $W/runs
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $W/nvidia-smi.txt 2>&1
python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.device_count())' > $W/torch.txt 2>&1
(nproc; grep -m1 'model name' /proc/cpuinfo; cat /proc/loadavg) > $W/cpu.txt 2>&1
git rev-parse HEAD > $W/commit.txt 2>/dev/null
echo "start $(date -u +%FT%TZ)" > $W/status.txt
pack() { tar czf $OUT/ophost.tgz -C /tmp ophost 2>/dev/null; }
# run NAME LIMIT_START TIMEOUT ARGS...: hostprobe.py ARGS (stdout to runs/NAME.json) if fewer than LIMIT_START s passed
run() {
  local name=$1 limit=$2 tmo=$3; shift 3
  if (( SECONDS >= limit )); then echo "$name skipped at ${SECONDS} s" | tee -a $W/status.txt; return; fi
  local t0=$SECONDS
  timeout $tmo python3 $D/hostprobe.py "$@" > $W/runs/$name.json 2> $W/runs/$name.stderr.txt
  echo "$name exit $? $((SECONDS - t0)) s (at ${SECONDS} s)" | tee -a $W/status.txt
  pack
}
run tiny-L24-128x1 10 30 --preset tiny --layers 24 --shape 128:1 --modes op,full
run 0.5b-2048x8 45 40 --preset 0.5b --shape 2048:8 --modes op,full
run 2b-2048x4 85 45 --preset 2b --shape 2048:4 --modes op,full
run 0.5b-2048x2 110 30 --preset 0.5b --shape 2048:2 --modes op,full
echo "end $(date -u +%FT%TZ) at ${SECONDS} s" >> $W/status.txt
pack
ls -la $OUT
