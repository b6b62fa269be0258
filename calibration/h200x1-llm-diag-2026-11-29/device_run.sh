#!/bin/bash
# Issue 44, development diagnostic (NOT registered, nothing judged): two open questions on one H200.
#  (a) compiled memory: memdiag.py at 1b 2048:2 (then 0.3b 2048:4 if time is left), eager and compiled (one process
#      each): per-block forward memory, the saved tensors of blocks 0 and L/2, and what is alive at the allocated peak
#      (memory history replayed on the device; only a small JSON comes back).
#  (b) op-policy host cost: hidden-128 decoders (preset tiny), shape 128:1, 3 untimed + 20 timed steps, one profiled
#      step: op at 2, 8, 32 layers, full (ckpt) and none (single) at 2 and 32 (the fit files eager.fit_modes reads:
#      MODE-L<n>.json); then 3 launches of the registered op shape 0.3b 2048:16 (3 + 10 steps, --profile 0, as the sac
#      set ran it) for the launch-to-launch spread.
# Only torch is needed (no simcluster collect, nothing carried). Every part starts only while fewer than its start
# limit of seconds have passed, so the call stays under 235 s; status.txt says what ran; the tgz is rewritten after
# every run (a cut call still returns what ran).
#   bash calibration/h200x1-llm-diag-2026-11-29/device_run.sh        (repository root; $OUT comes back: diag.tgz)
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
W=/tmp/diag; D=calibration/h200x1-llm-diag-2026-11-29
mkdir -p $W/mem $W/host $W/repeat
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $W/nvidia-smi.txt 2>&1
python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.device_count())' > $W/torch.txt 2>&1
git rev-parse HEAD > $W/commit.txt 2>/dev/null
echo "start $(date -u +%FT%TZ)" > $W/status.txt
pack() { tar czf $OUT/diag.tgz -C /tmp diag 2>/dev/null; }
# run NAME LIMIT_START TIMEOUT CMD...: runs CMD (stdout to NAME.json, stderr beside) if fewer than LIMIT_START s passed
run() {
  local name=$1 limit=$2 tmo=$3; shift 3
  if (( SECONDS >= limit )); then echo "$name skipped at ${SECONDS} s" | tee -a $W/status.txt; return; fi
  local t0=$SECONDS
  timeout $tmo "$@" > $W/$name.json 2> $W/$name.stderr.txt
  echo "$name exit $? $((SECONDS - t0)) s (at ${SECONDS} s)" | tee -a $W/status.txt
  pack
}
# (a) compiled memory (eager ~15 s, compiled ~35 s cold)
run mem/1b-eager 60 40 python3 $D/memdiag.py --preset 1b --shape 2048:2
run mem/1b-compile 80 70 python3 $D/memdiag.py --preset 1b --shape 2048:2 --compile
# (b) host cost of the op policy, hidden 128 (GPU-trivial): op first, then the same-lease full and none
S="python3 -m simcluster.runner.llm_step --preset tiny --shapes 128:1 --warmup 3 --steps 20 --profile 1"
run host/op-L2 150 30 $S --layers 2 --ac-mode op
run host/op-L32 160 30 $S --layers 32 --ac-mode op
run host/ckpt-L2 165 30 $S --layers 2 --ac-mode full
run host/ckpt-L32 170 30 $S --layers 32 --ac-mode full
run host/single-L2 175 30 $S --layers 2
run host/single-L32 180 30 $S --layers 32
run host/op-L8 185 30 $S --layers 8 --ac-mode op
# launch-to-launch spread of the registered op shape (~16 s each)
R="python3 -m simcluster.runner.llm_step --preset 0.3b --shapes 2048:16 --ac-mode op --warmup 3 --steps 10 --profile 0"
for i in 1 2 3; do run repeat/0.3b-op-$i 205 25 $R; done
# (a) second shape if time is left
run mem/0.3b-eager 205 25 python3 $D/memdiag.py --preset 0.3b --shape 2048:4
run mem/0.3b-compile 205 28 python3 $D/memdiag.py --preset 0.3b --shape 2048:4 --compile
echo "end $(date -u +%FT%TZ) at ${SECONDS} s" >> $W/status.txt
pack
ls -la $OUT
