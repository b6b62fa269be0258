#!/bin/bash
# Issue 44 (session 33): torch.compile memory and the op policy's host cost on one H200, HELD OUT: registered before
# this run (registered.json, written by `python validation/llm_compile2.py --register` from the committed model;
# README.md). Runs llm-step directly (only torch is needed; nothing carried), one process per run, one shape,
# no profiled step (--profile 0):
#   compile-*: llm-step --compile (torch.compile per decoder block, Inductor default), 5 untimed + 10 timed steps;
#   op-*-<i>:  llm-step --ac-mode op, 3 untimed + 10 timed steps, three launches per shape, interleaved with the
#              compiled runs so the launches are spread over the call.
# Every run starts only while fewer than its start limit of seconds have passed and is cut at 330 s, so the call stays
# under 345 s; status.txt says what ran; the tgz is rewritten after every run (a cut call still returns what ran).
#   REGISTER_COMMIT=$(git rev-parse HEAD) bash calibration/h200x1-llm-compile2-2026-11-29/device_run.sh
# (device machine, repository root; $OUT comes back: compile2.tgz; unpack and read with validation/llm_compile2.py)
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
W=/tmp/compile2; D=calibration/h200x1-llm-compile2-2026-11-29
mkdir -p $W/runs
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $W/nvidia-smi.txt 2>&1
lscpu > $W/lscpu.txt 2>&1
python3 -c 'import torch, triton; print(torch.__version__, torch.version.cuda, torch.cuda.device_count(), "triton", triton.__version__)' > $W/torch.txt 2>&1
echo "${REGISTER_COMMIT:-$(git rev-parse HEAD 2>/dev/null)}" > $W/commit.txt
cp $D/registered.json $W/ 2>/dev/null
pack() { tar czf $OUT/compile2.tgz -C /tmp compile2 2>/dev/null; }
echo "start $(date -u +%FT%TZ)" > $W/status.txt
S="python3 -m simcluster.runner.llm_step --profile 0 --steps 10"
# go NAME START_LIMIT TIMEOUT ARGS...: one llm-step process (stdout runs/NAME.json, stderr beside)
go() {
  local name=$1 limit=$2 tmo=$3; shift 3
  if (( SECONDS >= limit )); then echo "$name skipped at ${SECONDS} s" | tee -a $W/status.txt; return; fi
  (( tmo > 330 - SECONDS )) && tmo=$((330 - SECONDS))
  local t0=$SECONDS
  timeout $tmo $S "$@" > $W/runs/$name.json 2> $W/runs/$name.stderr.txt
  local rc=$?
  echo "$name exit $rc $((SECONDS - t0)) s (at ${SECONDS} s)" | tee -a $W/status.txt
  [ $rc -ne 0 ] && tail -3 $W/runs/$name.stderr.txt
  pack
}
OP="--ac-mode op --warmup 3"; C="--compile --warmup 5"
go op-0.5b-2048x8-1 200 40 --preset 0.5b --shapes 2048:8 $OP
go op-2b-2048x4-1 200 45 --preset 2b --shapes 2048:4 $OP
go compile-0.5b-2048x4 200 70 --preset 0.5b --shapes 2048:4 $C
go compile-0.8b-1024x8 220 70 --preset 0.8b --shapes 1024:8 $C
go op-0.5b-2048x8-2 270 40 --preset 0.5b --shapes 2048:8 $OP
go op-2b-2048x4-2 275 45 --preset 2b --shapes 2048:4 $OP
go compile-2b-2048x2 240 80 --preset 2b --shapes 2048:2 $C
go compile-1b-L8-4096x2 260 70 --preset 1b --layers 8 --shapes 4096:2 $C
go op-0.5b-2048x8-3 300 30 --preset 0.5b --shapes 2048:8 $OP
go op-2b-2048x4-3 300 30 --preset 2b --shapes 2048:4 $OP
go compile-3b-2048x2 260 70 --preset 3b --shapes 2048:2 $C
echo "end $(date -u +%FT%TZ) at ${SECONDS} s" >> $W/status.txt
pack
ls -la $OUT
