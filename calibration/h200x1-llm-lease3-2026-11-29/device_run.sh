#!/bin/bash
# Issue 44 (session 33, engineer lease3): a second lease for the compiled and op regimes on one H200, HELD OUT:
# registered before this run (registered.json, written by `python validation/llm_lease3.py --register` from the
# committed model; README.md). Modelled on calibration/h200x1-llm-compile2-2026-11-29/device_run.sh: llm-step directly
# (only torch is needed; nothing carried), one process per run, one shape, no profiled step (--profile 0):
#   compile-*: llm-step --compile (torch.compile per decoder block, Inductor default), 5 untimed + 10 timed steps;
#   op-*-<i>:  llm-step --ac-mode op, 3 untimed + 10 timed steps, three launches per shape, interleaved with the
#              compiled runs so the launches are spread over the call.
# Every run starts only while fewer than its start limit of seconds have passed and is cut at CAP = 240 s, so the call
# stays under 250 s; status.txt says what ran or was skipped; the tgz is rewritten after every run.
#   REGISTER_COMMIT=$(git rev-parse HEAD) bash calibration/h200x1-llm-lease3-2026-11-29/device_run.sh
# (device machine, repository root; $OUT comes back: lease3.tgz; unpack and read with validation/llm_lease3.py)
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
W=/tmp/lease3; D=calibration/h200x1-llm-lease3-2026-11-29; CAP=240
mkdir -p $W/runs
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $W/nvidia-smi.txt 2>&1
lscpu > $W/lscpu.txt 2>&1
python3 -c 'import torch, triton; print(torch.__version__, torch.version.cuda, torch.cuda.device_count(), "triton", triton.__version__)' > $W/torch.txt 2>&1
echo "${REGISTER_COMMIT:-$(git rev-parse HEAD 2>/dev/null)}" > $W/commit.txt
cp $D/registered.json $W/ 2>/dev/null
pack() { tar czf $OUT/lease3.tgz -C /tmp lease3 2>/dev/null; }
echo "start $(date -u +%FT%TZ)" > $W/status.txt
S="python3 -m simcluster.runner.llm_step --profile 0 --steps 10"
# go NAME START_LIMIT TIMEOUT ARGS...: one llm-step process (stdout runs/NAME.json, stderr beside)
go() {
  local name=$1 limit=$2 tmo=$3; shift 3
  if (( SECONDS >= limit )); then echo "$name skipped at ${SECONDS} s" | tee -a $W/status.txt; return; fi
  (( tmo > CAP - SECONDS )) && tmo=$((CAP - SECONDS))
  local t0=$SECONDS
  timeout $tmo $S "$@" > $W/runs/$name.json 2> $W/runs/$name.stderr.txt
  local rc=$?
  echo "$name exit $rc $((SECONDS - t0)) s (at ${SECONDS} s)" | tee -a $W/status.txt
  [ $rc -ne 0 ] && tail -3 $W/runs/$name.stderr.txt
  pack
}
OP="--ac-mode op --warmup 3"; C="--compile --warmup 5"
go op-0.8b-2048x4-1 150 35 --preset 0.8b --shapes 2048:4 $OP
go op-3b-1024x4-1 150 35 --preset 3b --shapes 1024:4 $OP
go compile-0.3b-4096x4 150 60 --preset 0.3b --shapes 4096:4 $C
go compile-1.1b-2048x4 170 60 --preset 1.1b --shapes 2048:4 $C
go op-0.8b-2048x4-2 200 35 --preset 0.8b --shapes 2048:4 $OP
go op-3b-1024x4-2 200 35 --preset 3b --shapes 1024:4 $OP
go compile-2b-1024x4 190 60 --preset 2b --shapes 1024:4 $C
go op-0.8b-2048x4-3 215 30 --preset 0.8b --shapes 2048:4 $OP
go op-3b-1024x4-3 215 30 --preset 3b --shapes 1024:4 $OP
go compile-3.1b-1024x4 205 60 --preset 3.1b --shapes 1024:4 $C
echo "end $(date -u +%FT%TZ) at ${SECONDS} s" >> $W/status.txt
pack
ls -la $OUT
