#!/bin/bash
# Issue 44, session 48, helper compck (REGISTERED before this ran: registered.yaml beside this script,
# validation/compck.py): FSDP2 + whole-model torch.compile + full activation checkpointing on 2 ranks, the shipped model
# and compck's candidate (framework.whole_model_graph) registered side by side. Runs as the repeats47 set's fsdp variant
# (--mode fsdp --compile --compile-scope model --ac-mode full) on two shapes new to calibration, three processes each,
# the shapes alternated A B | B A | A B; 3 warm-up steps (the first holds the compilation) and 5 timed steps.
# Budget: repeats47's six processes of the same variant took 24-38 s each, 172 s in all (its runs/status.txt): about
# 180 s expected with set-up. A budget guard stops launching runs after BUDGET_S s: worst case BUDGET_S + 90 s = 290 s.
#   MAIN_COMMIT=<main> bash calibration/h200x2-compck-2026-11-30/device_run.sh   (nvidia-h200-x2)
W=/tmp/compck
BUDGET_S=${BUDGET_S:-200}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
common="--warmup 3 --steps 5 --profile 0 --compile --ac-mode full"
fsdp="$two -m simcluster.runner.llm_step --mode fsdp --compile-scope model $common"
for r in 1 2 3; do
  order="1b:3872:2 0.5b:3232:3"
  [ $r -eq 2 ] && order="0.5b:3232:3 1b:3872:2"
  for run in $order; do
    IFS=: read -r preset seq mb <<< "$run"
    guarded "$preset-${seq}x$mb-fsdp-r$r" 90 $fsdp --preset "$preset" --shapes "$seq:$mb"
  done
done
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
