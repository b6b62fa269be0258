#!/bin/bash
# Issue 44, session 48, helper zero2e (REGISTERED before this ran: registered.yaml beside this script,
# validation/zero2e.py, its rules validation/zero2.py's, its power validation/zero2b.py and validation/zero2d.py, the candidate
# simcluster/llm/fsdp2_zero2.py): FSDP2 with reshard_after_forward=False (ZeRO-2's layout in torch) in both variants,
# 4 micro-batches per step, gradients reduce-scattered every micro-batch (simcluster/runner/llm_accum.py): regather
# (FSDP2's default reshard after every backward: each micro-batch's forward all-gathers every layer again) against
# gathered (--reshard-after-backward false). Two GPU-bound shapes new to every bundle, 3b 2400:2 (3 processes a variant)
# and 1b 3296:2 (2 a variant), one shape per process, ABBA per shape, the shapes interleaved. A budget guard stops
# launching runs after BUDGET_S s: worst case BUDGET_S + 45 s = 260 s; about 205 s expected (10 processes, each about
# 16 s of start-up and build, as the zero2d set's 8b processes, plus 5 steps of 0.58 s (1b) or 0.99 s (3b) predicted).
#   MAIN_COMMIT=<main> bash calibration/h200x2-zero2e-2026-11-30/device_run.sh   (nvidia-h200-x2)
W=/tmp/zero2e
BUDGET_S=${BUDGET_S:-215}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
fsdp="$two -m simcluster.runner.llm_step --warmup 2 --steps 3 --profile 0 --mode fsdp --grad-accum 4 --reshard-after-forward false"
one() {   # PRESET SHAPE VARIANT PROCESS_NUMBER
  local flag="" stem
  [ "$3" = gathered ] && flag="--reshard-after-backward false"
  stem="$1-${2/:/x}-$3-r$4"
  guarded "$stem" 45 $fsdp $flag --preset "$1" --shapes "$2"
}
one 3b 2400:2 regather 1
one 3b 2400:2 gathered 1
one 1b 3296:2 gathered 1
one 1b 3296:2 regather 1
one 3b 2400:2 gathered 2
one 3b 2400:2 regather 2
one 1b 3296:2 regather 2
one 1b 3296:2 gathered 2
one 3b 2400:2 regather 3
one 3b 2400:2 gathered 3
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
