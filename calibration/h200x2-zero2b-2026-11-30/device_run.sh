#!/bin/bash
# Issue 44, session 46, helper zero2b (REGISTERED before this ran: registered.yaml beside this script,
# validation/zero2b.py, its rules validation/zero2.py's): FSDP2 with reshard_after_forward=False (ZeRO-2's layout in
# torch: --reshard-after-forward false) against FSDP2's default (the control), 4 micro-batches per step, gradients
# reduce-scattered every micro-batch (simcluster/runner/llm_accum.py). One shape new to calibration, 8b 448:1 (the
# reduce-scatter long against the micro-batch: the wait the set decides moves the zero2 step +7.9%), one shape per
# process, 4 processes of each variant alternated ABBA: zero2 control control zero2 zero2 control control zero2.
# A budget guard stops launching runs after BUDGET_S s: worst case BUDGET_S + 80 s = 295 s; about 230 s expected
# (8 processes, each about 17 s of start-up and build plus 9 steps of 1.0-1.15 s: the zero2 set's 8b processes took
# 22-32 s for 7 steps).
#   MAIN_COMMIT=<main> bash calibration/h200x2-zero2b-2026-11-30/device_run.sh   (nvidia-h200-x2)
W=/tmp/zero2b
BUDGET_S=${BUDGET_S:-215}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
fsdp="$two -m simcluster.runner.llm_step --warmup 2 --steps 7 --profile 0 --mode fsdp --grad-accum 4"
one() {   # VARIANT PROCESS_NUMBER
  local flag=""
  [ "$1" = zero2 ] && flag="--reshard-after-forward false"
  guarded "8b-448x1-$1-r$2" 80 $fsdp $flag --preset 8b --shapes 448:1
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
