#!/bin/bash
# Issue 44 (session 34, engineer eagerfix): the eager step on one H200 after the up-cast and fused-AdamW rates, a second
# eager lease after the loss fix, HELD OUT: registered before this run (registered.json, written by
# `python validation/llm_eager5.py --register` from the committed model; README.md). Modelled on
# calibration/h200x1-llm-compile4-2026-11-29/device_run.sh: llm-step directly (only torch is needed; nothing carried),
# one process per run, one shape, one launch each:
#   eager-*: llm-step (mode single, no --compile, no checkpointing), 5 untimed + 10 timed steps, then ONE profiled step
#            (--profile 1, after the timed steps and their memory peaks: not judged) kept as a gzipped Chrome trace in
#            traces/ (per-kernel GPU time, development only).
# Every run starts only while fewer than its start limit of seconds have passed and is cut at CAP = 210 s, so the call
# stays under 220 s; status.txt says what ran or was skipped; the tgz is rewritten after every run.
#   REGISTER_COMMIT=$(git rev-parse HEAD) bash calibration/h200x1-llm-eager5-2026-11-29/device_run.sh
# (device machine, repository root; $OUT comes back: eager5.tgz; unpack and read with validation/llm_eager5.py)
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
W=/tmp/eager5; D=calibration/h200x1-llm-eager5-2026-11-29; CAP=210
mkdir -p $W/runs $W/traces
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $W/nvidia-smi.txt 2>&1
lscpu > $W/lscpu.txt 2>&1
python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.device_count())' > $W/torch.txt 2>&1
echo "${REGISTER_COMMIT:-$(git rev-parse HEAD 2>/dev/null)}" > $W/commit.txt
cp $D/registered.json $W/ 2>/dev/null
pack() { tar czf $OUT/eager5.tgz -C /tmp eager5 2>/dev/null; }
echo "start $(date -u +%FT%TZ)" > $W/status.txt
S="python3 -m simcluster.runner.llm_step --steps 10"
# go NAME START_LIMIT TIMEOUT ARGS...: one llm-step process (stdout runs/NAME.json, stderr beside)
go() {
  local name=$1 limit=$2 tmo=$3; shift 3
  if (( SECONDS >= limit )); then echo "$name skipped at ${SECONDS} s" | tee -a $W/status.txt; return; fi
  (( tmo > CAP - SECONDS )) && tmo=$((CAP - SECONDS))
  local t0=$SECONDS
  timeout $tmo $S "$@" --trace $W/traces/$name > $W/runs/$name.json 2> $W/runs/$name.stderr.txt
  local rc=$?
  echo "$name exit $rc $((SECONDS - t0)) s (at ${SECONDS} s)" | tee -a $W/status.txt
  [ $rc -ne 0 ] && tail -3 $W/runs/$name.stderr.txt
  pack
}
C="--warmup 5 --profile 1"
go eager-1.1b-1024x2 120 45 --preset 1.1b --shapes 1024:2 $C
go eager-0.8b-1024x4 140 45 --preset 0.8b --shapes 1024:4 $C
go eager-0.5b-4096x4 160 50 --preset 0.5b --shapes 4096:4 $C
go eager-2b-1024x8 175 50 --preset 2b --shapes 1024:8 $C
go eager-3.1b-4096x1 190 50 --preset 3.1b --shapes 4096:1 $C
echo "end $(date -u +%FT%TZ) at ${SECONDS} s" >> $W/status.txt
pack
ls -la $OUT
