#!/bin/bash
# Issue 44, session 47, helper repeats47 (REGISTERED before this ran: registered.yaml beside this script,
# validation/repeats47.py): FSDP2 + whole-model torch.compile + full activation checkpointing on 2 ranks, the shipped
# model held out, with repeats. Runs as the compilefsdp / compileac sets' fsdp variant (--mode fsdp --compile
# --compile-scope model --ac-mode full) on two shapes new to calibration, three processes each, the shapes alternated
# A B | B A | A B; 3 warm-up steps (the first holds the compilation) and 5 timed steps.
# Budget: compileac's and compilefsdp's FSDP2 processes took 35-41 s on a shape's first (cold Inductor) process and
# 26-30 s after (runs/status.txt there): about 190 s of processes plus set-up, about 200 s expected. A budget guard
# stops launching runs after BUDGET_S s: worst case BUDGET_S + 90 s = 330 s.
#   MAIN_COMMIT=<main> bash calibration/h200x2-repeats47-2026-11-30/device_run.sh   (nvidia-h200-x2)
W=/tmp/repeats47
BUDGET_S=${BUDGET_S:-240}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
common="--warmup 3 --steps 5 --profile 0 --compile --ac-mode full"
fsdp="$two -m simcluster.runner.llm_step --mode fsdp --compile-scope model $common"
for r in 1 2 3; do
  order="1b:3744:2 0.5b:1600:6"
  [ $r -eq 2 ] && order="0.5b:1600:6 1b:3744:2"
  for run in $order; do
    IFS=: read -r preset seq mb <<< "$run"
    guarded "$preset-${seq}x$mb-fsdp-r$r" 90 $fsdp --preset "$preset" --shapes "$seq:$mb"
  done
done
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
