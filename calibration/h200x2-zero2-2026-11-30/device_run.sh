#!/bin/bash
# Issue 44, session 46 (REGISTERED before this ran: registered.yaml beside this script, validation/zero2.py): FSDP2 with
# reshard_after_forward=False (ZeRO-2's layout in torch: --reshard-after-forward false) against FSDP2's default (the
# control), 4 micro-batches per step, gradients reduce-scattered every micro-batch (simcluster/runner/llm_accum.py).
# Three shapes new to calibration: 8b 704:1 (the reduce-scatter long against the micro-batch: the wait matters), 0.5b
# 2496:1 (host-bound) and 0.5b 3456:4 (GPU-bound), the two 0.5b shapes timed in one process. Round 1 each preset zero2
# then control, round 2 control then zero2, round 3 the 8b zero2 once more. A budget guard stops launching runs after
# BUDGET_S s: worst case BUDGET_S + 75 s = 275 s; about 225 s expected (9 processes, each about 15 s of start-up, the 8b
# 3 s more to build, plus 7 steps a shape: 8b 1.0-1.1 s, 0.5b 0.39 s and 0.53 s).
#   MAIN_COMMIT=<main> bash calibration/h200x2-zero2-2026-11-30/device_run.sh   (nvidia-h200-x2)
W=/tmp/zero2
BUDGET_S=${BUDGET_S:-200}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
fsdp="$two -m simcluster.runner.llm_step --warmup 2 --steps 5 --profile 0 --mode fsdp --grad-accum 4"
one() {   # VARIANT ROUND PRESET SHAPES STEM
  local flag=""
  [ "$1" = zero2 ] && flag="--reshard-after-forward false"
  guarded "$5-$1-r$2" 75 $fsdp $flag --preset "$3" --shapes "$4"
}
for r in 1 2; do
  variants="zero2 control"
  [ $r -eq 2 ] && variants="control zero2"
  for v in $variants; do one "$v" $r 8b 704:1 8b-704x1; done
  for v in $variants; do one "$v" $r 0.5b 2496:1,3456:4 0.5b-2496x1+3456x4; done
done
one zero2 3 8b 704:1 8b-704x1
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
