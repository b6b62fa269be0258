#!/bin/bash
# Issue 44 (session sac): selective activation checkpointing in eager PyTorch on one H200, registered before this run
# (registered.json, written by `python validation/llm_sac.py --register` from the committed model; README.md).
# Presets 0.3b / 1b / 3b at seq 2048, micro-batch 16 / 8 / 4, each with llm-step --ac-mode none, full, every:2, op:
# one process per run, one shape, 3 untimed + 10 timed steps, no profiled step (--profile 0: a profiled step slows the
# host of a process's later steps, calibration/h200x1-llm-ckpt-host-2026-11-28). Only torch is needed on the machine.
#   REGISTER_COMMIT=$(git rev-parse HEAD) bash calibration/h200x1-llm-sac-2026-11-29/device_run.sh
# (device machine, repository root; $OUT comes back: sac.tgz, unpack and read with validation/llm_sac.py)
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
W=/tmp/sac
mkdir -p $W/runs
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $W/nvidia-smi.txt 2>&1
lscpu > $W/lscpu.txt 2>&1
python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.device_count())' > $W/torch.txt 2>&1
echo "${REGISTER_COMMIT:-unknown}" > $W/commit.txt
cp calibration/h200x1-llm-sac-2026-11-29/registered.json $W/ 2>/dev/null
pack() { tar czf $OUT/sac.tgz -C /tmp sac 2>/dev/null; }
echo "start $(date -u +%FT%TZ)" > $W/status.txt
for pm in 0.3b:16 1b:8 3b:4; do
  p=${pm%:*}; mb=${pm#*:}
  for mode in none full every:2 op; do
    name=$p-${mode/:/}
    t0=$SECONDS
    timeout 70 python3 -m simcluster.runner.llm_step --preset $p --shapes 2048:$mb --ac-mode $mode --warmup 3 \
      --steps 10 --profile 0 > $W/runs/$name.json 2> $W/runs/$name.stderr.txt
    rc=$?
    echo "$name exit $rc $((SECONDS - t0)) s" | tee -a $W/status.txt
    [ $rc -ne 0 ] && tail -3 $W/runs/$name.stderr.txt
    pack
  done
done
echo "end $(date -u +%FT%TZ)" >> $W/status.txt
pack
