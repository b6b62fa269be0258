#!/bin/bash
# Issue 44, session 45 (REGISTERED before this ran: registered.yaml beside this script, validation/ddpaccum.py): torch DDP
# with 4 micro-batches per step, gradients all-reduced every micro-batch (sync, DDP's default) or once a step (no-sync:
# DDP's no_sync() around all but the last backward; simcluster/runner/llm_accum.py). Two GPU-bound shapes new to
# calibration whose fp32 bucket all_reduces are large beside their backward, one shape and variant per process, two
# rounds: round 1 sync then no-sync, round 2 no-sync then sync (drift falls on both variants alike). A budget guard
# stops launching runs after BUDGET_S s: worst case BUDGET_S + 60 s = 280 s; about 190 s expected (a process about
# 15-20 s of start-up plus 9 steps of 0.4-0.7 s).
#   MAIN_COMMIT=<main> bash calibration/h200x2-ddpaccum-2026-11-30/device_run.sh   (nvidia-h200-x2)
W=/tmp/ddpaccum
BUDGET_S=${BUDGET_S:-220}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
ddp="$two -m simcluster.runner.llm_step --warmup 3 --steps 6 --profile 0 --mode ddp --grad-accum 4"
for r in 1 2; do
  variants="sync nosync"
  [ $r -eq 2 ] && variants="nosync sync"
  for shape in 3b:2176:1 2b:2752:1; do
    IFS=: read -r preset seq mb <<< "$shape"
    for v in $variants; do
      flag=""
      [ "$v" = nosync ] && flag="--no-sync"
      guarded "$preset-${seq}x$mb-$v-r$r" 60 $ddp $flag --preset "$preset" --shapes "$seq:$mb"
    done
  done
done
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
