#!/bin/bash
# Issue 44, session 41 (REGISTERED before this ran: registered.yaml beside this script, validation/eager_today.py): the
# eager regimes whose bands were measured on an earlier model (single, single+host-bound, single+compile,
# single+ckpt-every2, single+sac-op, PP) re-measured against today's model's registered steps, on shapes new to
# calibration/. One process a row (op-2b: two), in priority order: one row of each regime first. One-GPU rows on GPU 0
# (CUDA_VISIBLE_DEVICES=0); the 2-stage 1F1B pipeline on both. A budget guard stops launching runs after BUDGET_S s:
# worst case BUDGET_S + 80 s = 285 s.
#   MAIN_COMMIT=<main> bash calibration/h200x2-eager-today-2026-11-30/device_run.sh   (nvidia-h200-x2; about 200 s)
W=/tmp/eager-today
BUDGET_S=${BUDGET_S:-205}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
step="-m simcluster.runner.llm_step --warmup 3 --steps 10 --profile 0"
one="env CUDA_VISIBLE_DEVICES=0 python3 $step"
pp="--mode pp --microbatches 4 --schedule 1f1b"
guarded single-0.5b-r1 60 $one --preset 0.5b --shapes 2816:4 --mode single
guarded compile-1b-r1 80 $one --preset 1b --shapes 1664:2 --mode single --compile
guarded every2-0.8b-r1 60 $one --preset 0.8b --shapes 2944:2 --mode single --ac-mode every:2
guarded op-2b-r1 60 $one --preset 2b --shapes 1408:8 --mode single --ac-mode op
guarded pp-2b-r1 80 $two $step --preset 2b --shapes 1792:1 $pp
guarded hostbound-0.8b-r1 60 $one --preset 0.8b --shapes 3328:1 --mode single
guarded single-1.1b-r1 60 $one --preset 1.1b --shapes 1920:2 --mode single
guarded compile-0.3b-r1 80 $one --preset 0.3b --shapes 3584:4 --mode single --compile
guarded pp-0.8b-r1 80 $two $step --preset 0.8b --shapes 1152:4 $pp
guarded single-0.8b-r1 60 $one --preset 0.8b --shapes 3328:4 --mode single
guarded op-2b-r2 60 $one --preset 2b --shapes 1408:8 --mode single --ac-mode op
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
