#!/bin/bash
# Issue 44 (session 35): activation checkpointing in eager PyTorch on one H200, registered before this run
# (SET/registered.json, written by `python validation/llm_ac6.py --register SET` from the committed model; README.md).
# Runs exactly the registered runs, in their order: llm-step --ac-mode none / full / every:2, one process per run, one
# shape, 3 untimed + 10 timed steps, no profiled step (the sac set's launch). Only torch is needed on the machine.
#   AC_SET=ac6a REGISTER_COMMIT=<full sha> bash calibration/h200x1-llm-ac6a-2026-11-29/device_run.sh
# (eager7, session 35: the same launch for calibration/h200x1-llm-eager7-2026-11-29, its README; eager8 likewise)
# (device machine, repository root; $OUT comes back: $AC_SET.tgz, unpack and read with validation/llm_ac6.py)
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
case "$AC_SET" in ac6a|ac6b|eager7|eager8) ;; *) echo "AC_SET must be ac6a, ac6b, eager7 or eager8" >&2; exit 2;; esac
SRC=calibration/h200x1-llm-$AC_SET-2026-11-29
W=/tmp/$AC_SET
CAP=270   # seconds: a run starts only before this (the call's limit is 300 s)
mkdir -p $W/runs
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $W/nvidia-smi.txt 2>&1
lscpu > $W/lscpu.txt 2>&1
python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.device_count())' > $W/torch.txt 2>&1
echo "${REGISTER_COMMIT:-unknown}" > $W/commit.txt
cp $SRC/registered.json $W/
pack() { tar czf $OUT/$AC_SET.tgz -C /tmp $AC_SET 2>/dev/null; }
echo "start $(date -u +%FT%TZ)" > $W/status.txt
python3 -c "
import json
for r in json.load(open('$SRC/registered.json'))['runs']:
    print(r['run'], r['preset'], r['seq'], r['micro_batch'], r['ac_mode'])" > $W/plan.txt
while read -r name preset seq mb mode; do
  if [ $SECONDS -ge $CAP ]; then echo "$name skipped: $SECONDS s >= $CAP s" | tee -a $W/status.txt; continue; fi
  t0=$SECONDS
  timeout 80 python3 -m simcluster.runner.llm_step --preset "$preset" --shapes "$seq:$mb" --ac-mode "$mode" --warmup 3 \
    --steps 10 --profile 0 > $W/runs/$name.json 2> $W/runs/$name.stderr.txt
  rc=$?
  echo "$name exit $rc $((SECONDS - t0)) s" | tee -a $W/status.txt
  [ $rc -ne 0 ] && tail -3 $W/runs/$name.stderr.txt
  pack
done < $W/plan.txt
echo "end $(date -u +%FT%TZ)" >> $W/status.txt
pack
