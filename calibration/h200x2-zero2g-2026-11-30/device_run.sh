#!/bin/bash
# Issue 44, session 48, helper zero2g (REGISTERED before this ran: registered.yaml beside this script,
# validation/zero2g.py, its rules validation/zero2.py's, validation/zero2e.py's and validation/zero2f.py's, the candidate
# simcluster/llm/fsdp2_zero2.py with FrameworkSpec.zero2_fsdp2, zero2_regather, zero2_exposed and zero2_bf16_weights all
# on): FSDP2 with reshard_after_forward=False (ZeRO-2's layout in torch) in both variants, 4 micro-batches per step,
# gradients reduce-scattered every micro-batch (simcluster/runner/llm_accum.py): regather (FSDP2's default reshard after
# every backward: each micro-batch's forward all-gathers every layer again) against gathered (--reshard-after-backward
# false). Two GPU-bound shapes new to every bundle, 8b 2656:1 and 3b 2656:2 (2 processes a variant each), one shape per
# process, ABBA per shape, the shapes interleaved. A budget guard stops launching runs after BUDGET_S s: worst case
# BUDGET_S + 45 s = 235 s; about 170 s expected (8 processes: the zero2f set's 8b processes took 22-29 s, its 3b
# ones 16-18 s; 10 of them took 202 s in all).
#   MAIN_COMMIT=<main> bash calibration/h200x2-zero2g-2026-11-30/device_run.sh   (nvidia-h200-x2)
W=/tmp/zero2g
BUDGET_S=${BUDGET_S:-190}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
fsdp="$two -m simcluster.runner.llm_step --warmup 2 --steps 3 --profile 0 --mode fsdp --grad-accum 4 --reshard-after-forward false"
one() {   # PRESET SHAPE VARIANT PROCESS_NUMBER
  local flag="" stem
  [ "$3" = gathered ] && flag="--reshard-after-backward false"
  stem="$1-${2/:/x}-$3-r$4"
  guarded "$stem" 45 $fsdp $flag --preset "$1" --shapes "$2"
}
one 8b 2656:1 regather 1
one 8b 2656:1 gathered 1
one 3b 2656:2 gathered 1
one 3b 2656:2 regather 1
one 8b 2656:1 gathered 2
one 8b 2656:1 regather 2
one 3b 2656:2 regather 2
one 3b 2656:2 gathered 2
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
