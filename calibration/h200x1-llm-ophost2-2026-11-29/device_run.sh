#!/bin/bash
# Issue 44 (session 33, ophost phase 2): the op policy's host cost per phase on one H200, HELD OUT: registered before
# this run (registered.json, written by `python validation/llm_ophost.py --register` from the committed model; README.md).
# llm-step --ac-mode op (torchtitan's op policy), one process per launch, one shape, --profile 0, 3 untimed + 10 timed
# steps; three shapes no op run measured (1b 2048:4, 1.1b 4096:2, 3.1b 1024:8), three launches each, in rounds (every
# shape once, then again) so the launches are spread over the call. Every launch starts only while fewer than its start
# limit of seconds have passed and is cut so the call ends by 145 s; status.txt says what ran or was skipped; the tgz is
# rewritten after every launch. Only torch is needed (nothing carried).
#   REGISTER_COMMIT=$(git rev-parse HEAD) bash calibration/h200x1-llm-ophost2-2026-11-29/device_run.sh
# (device machine, repository root; $OUT comes back: ophost2.tgz; read with validation/llm_ophost.py)
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
W=/tmp/ophost2; D=calibration/h200x1-llm-ophost2-2026-11-29
mkdir -p $W/runs
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $W/nvidia-smi.txt 2>&1
python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.device_count())' > $W/torch.txt 2>&1
(nproc; grep -m1 'model name' /proc/cpuinfo; cat /proc/loadavg) > $W/cpu.txt 2>&1
echo "${REGISTER_COMMIT:-$(git rev-parse HEAD 2>/dev/null)}" > $W/commit.txt
cp $D/registered.json $W/ 2>/dev/null
pack() { tar czf $OUT/ophost2.tgz -C /tmp ophost2 2>/dev/null; }
echo "start $(date -u +%FT%TZ)" > $W/status.txt
S="python3 -m simcluster.runner.llm_step --profile 0 --steps 10 --warmup 3 --ac-mode op"
# go NAME START_LIMIT TIMEOUT ARGS...: one llm-step process (stdout runs/NAME.json, stderr beside)
go() {
  local name=$1 limit=$2 tmo=$3; shift 3
  if (( SECONDS >= limit )); then echo "$name skipped at ${SECONDS} s" | tee -a $W/status.txt; return; fi
  (( tmo > 145 - SECONDS )) && tmo=$((145 - SECONDS))
  local t0=$SECONDS
  timeout $tmo $S "$@" > $W/runs/$name.json 2> $W/runs/$name.stderr.txt
  local rc=$?
  echo "$name exit $rc $((SECONDS - t0)) s (at ${SECONDS} s)" | tee -a $W/status.txt
  [ $rc -ne 0 ] && tail -3 $W/runs/$name.stderr.txt
  pack
}
for i in 1 2 3; do
  lim=$(( i == 3 ? 125 : 100 ))
  go op-1b-2048x4-$i $lim 40 --preset 1b --shapes 2048:4
  go op-1.1b-4096x2-$i $lim 40 --preset 1.1b --shapes 4096:2
  go op-3.1b-1024x8-$i $lim 40 --preset 3.1b --shapes 1024:8
done
echo "end $(date -u +%FT%TZ) at ${SECONDS} s" >> $W/status.txt
pack
ls -la $OUT
