#!/bin/bash
# Issue 44, session 47, helper zero2d (REGISTERED before this ran: registered.yaml beside this script,
# validation/zero2d.py, its rules validation/zero2.py's, its regather column validation/zero2b.py's): FSDP2 with
# reshard_after_forward=False (ZeRO-2's layout in torch) in both variants, 4 micro-batches per step, gradients
# reduce-scattered every micro-batch (simcluster/runner/llm_accum.py): regather (FSDP2's default reshard after every
# backward: each micro-batch's forward all-gathers every layer again) against gathered (--reshard-after-backward false:
# set_reshard_after_backward(False) on every micro-batch but the step's last, no re-gather). One GPU-bound shape new to
# calibration, 8b 2912:1 (the regather registered +2.7%), one shape per process, 4 processes of each variant alternated
# ABBA: regather gathered gathered regather regather gathered gathered regather. A budget guard stops launching runs
# after BUDGET_S s: worst case BUDGET_S + 60 s = 275 s; about 230 s expected (8 processes, each about 21 s of start-up
# and build plus 5 steps of 1.40-1.44 s predicted: the zero2c set's 8b processes took 30-35 s for 7 steps of 1.36-1.47 s).
#   MAIN_COMMIT=<main> bash calibration/h200x2-zero2d-2026-11-30/device_run.sh   (nvidia-h200-x2)
W=/tmp/zero2d
BUDGET_S=${BUDGET_S:-215}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
fsdp="$two -m simcluster.runner.llm_step --warmup 2 --steps 3 --profile 0 --mode fsdp --grad-accum 4 --reshard-after-forward false"
one() {   # VARIANT PROCESS_NUMBER
  local flag=""
  [ "$1" = gathered ] && flag="--reshard-after-backward false"
  guarded "8b-2912x1-$1-r$2" 60 $fsdp $flag --preset 8b --shapes 2912:1
}
one regather 1
one gathered 1
one gathered 2
one regather 2
one regather 3
one gathered 3
one gathered 4
one regather 4
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
