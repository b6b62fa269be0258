#!/bin/bash
# Issue 44, session 47, helper zero2c (REGISTERED before this ran: registered.yaml beside this script,
# validation/zero2c.py, its rules validation/zero2.py's, its regather column validation/zero2b.py's): FSDP2 with
# reshard_after_forward=False (ZeRO-2's layout in torch: --reshard-after-forward false) against FSDP2's default (the
# control), 4 micro-batches per step, gradients reduce-scattered every micro-batch (simcluster/runner/llm_accum.py).
# One GPU-bound shape new to calibration, 8b 1440:2 (the reduce-scatters end inside each backward, the wait +0.0%; the
# forward re-gather the set decides moves the zero2 step +2.7%), one shape per process, 4 processes of each variant
# alternated ABBA: zero2 control control zero2 zero2 control control zero2. A budget guard stops launching runs after
# BUDGET_S s: worst case BUDGET_S + 75 s = 290 s; about 230 s expected (8 processes, each about 17 s of start-up and
# build plus 7 steps of 1.36-1.41 s predicted: session 46's zero2b 8b processes took 25-30 s for 9 steps of 0.9-1.2 s).
#   MAIN_COMMIT=<main> bash calibration/h200x2-zero2c-2026-11-30/device_run.sh   (nvidia-h200-x2)
W=/tmp/zero2c
BUDGET_S=${BUDGET_S:-215}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
fsdp="$two -m simcluster.runner.llm_step --warmup 2 --steps 5 --profile 0 --mode fsdp --grad-accum 4"
one() {   # VARIANT PROCESS_NUMBER
  local flag=""
  [ "$1" = zero2 ] && flag="--reshard-after-forward false"
  guarded "8b-1440x2-$1-r$2" 75 $fsdp $flag --preset 8b --shapes 1440:2
}
one zero2 1
one control 1
one control 2
one zero2 2
one zero2 3
one control 3
one control 4
one zero2 4
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
