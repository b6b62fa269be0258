#!/bin/bash
# Issue 44, session 42 (engineer sacop; REGISTERED before this ran: registered.json beside this script, written by
# validation/llm_sacop.py --register): the one-GPU op-policy checkpointing regime (single+sac-op), model or noise.
# Three op shapes that earlier leases missed in opposite directions (3b 2048x4: sac set, -19%; 0.8b 2048x4 and
# 3b 1024x4: lease3 set, +23 / +20%), now on ONE lease, three processes each, the order rotated per round; the third
# launch of 3b 2048x4 records one profiled step after its timed ones (--profile 1: kernels and their device time).
# One H200 (nvidia-h200). A budget guard stops launching after BUDGET_S s: worst case BUDGET_S + 35 s = 145 s; about
# 120 s expected (earlier op launches of these shapes: 10-18 s each).
#   MAIN_COMMIT=<main> bash calibration/h200x1-eager-sacop-2026-11-30/device_run.sh   (nvidia-h200; about 120 s)
# then: tar xzf runs.tgz -C calibration/h200x1-eager-sacop-2026-11-30 && python validation/llm_sacop.py calibration/h200x1-eager-sacop-2026-11-30
W=/tmp/eager-sacop
BUDGET_S=${BUDGET_S:-110}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
cp calibration/h200x1-eager-sacop-2026-11-30/registered.json "$B/registered.copy.json"
op="python3 -m simcluster.runner.llm_step --mode single --ac-mode op --warmup 3 --steps 10"
A="--preset 3b --shapes 2048:4"; Bs="--preset 0.8b --shapes 2048:4"; C="--preset 3b --shapes 1024:4"
guarded op-3b-2048x4-1 35 $op --profile 0 $A
guarded op-0.8b-2048x4-1 35 $op --profile 0 $Bs
guarded op-3b-1024x4-1 35 $op --profile 0 $C
guarded op-0.8b-2048x4-2 35 $op --profile 0 $Bs
guarded op-3b-1024x4-2 35 $op --profile 0 $C
guarded op-3b-2048x4-2 35 $op --profile 0 $A
guarded op-3b-1024x4-3 35 $op --profile 0 $C
guarded op-3b-2048x4-3 35 $op --profile 1 $A
guarded op-0.8b-2048x4-3 35 $op --profile 0 $Bs
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
