#!/bin/bash
# Issue 44, session 45 (REGISTERED before this ran: registered.yaml beside this script, validation/nosync.py): FSDP2 with
# 4 micro-batches per step, gradients reduce-scattered every micro-batch (sync, FSDP2's default) or once a step
# (no-sync: set_requires_gradient_sync(False) on all but the last; simcluster/runner/llm_accum.py). Three shapes new to
# calibration (one GPU-bound, two host-bound), one shape and variant per process, two rounds: round 1 sync then no-sync,
# round 2 no-sync then sync (drift falls on both variants alike). A budget guard stops launching runs after BUDGET_S s:
# worst case BUDGET_S + 60 s = 290 s; about 230 s expected (a process about 15 s of start-up plus 9 steps of 0.35-0.7 s).
#   MAIN_COMMIT=<main> bash calibration/h200x2-nosync-2026-11-30/device_run.sh   (nvidia-h200-x2)
W=/tmp/nosync
BUDGET_S=${BUDGET_S:-230}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
fsdp="$two -m simcluster.runner.llm_step --warmup 3 --steps 6 --profile 0 --mode fsdp --grad-accum 4"
for r in 1 2; do
  variants="sync nosync"
  [ $r -eq 2 ] && variants="nosync sync"
  for shape in 1b:2112:4 1.1b:1088:1 0.5b:2688:1; do
    IFS=: read -r preset seq mb <<< "$shape"
    for v in $variants; do
      flag=""
      [ "$v" = nosync ] && flag="--no-sync"
      guarded "$preset-${seq}x$mb-$v-r$r" 60 $fsdp $flag --preset "$preset" --shapes "$seq:$mb"
    done
  done
done
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
