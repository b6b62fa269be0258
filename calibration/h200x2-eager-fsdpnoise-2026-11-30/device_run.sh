#!/bin/bash
# Issue 44, session 40 (lead): the GPU-bound FSDP2 steps' run-to-run noise. The registered fsdpstep set
# (calibration/h200x2-eager-fsdpstep-2026-11-30) ran fsdp-0.5b at 5120:2 in two processes 13.6% apart (121.3 / 137.8 ms),
# the largest process spread of a GPU-bound eager row so far, where the session 37 noise set read GPU-bound spreads of
# 0.1-3%. Here: the same two shapes of that set (fsdp 0.5b 5120:2 and 0.8b 4096:3), each in four separate processes,
# round-robin so that a drift of the lease spreads over both, and DDP 1b 4096:3 (the set's control) in two. Not a
# registered set: repeats of measured shapes, nothing predicted here; studies/eager_noise_floor.py reads it (its model
# column is today's model, seen data).
#   MAIN_COMMIT=<main> bash calibration/h200x2-eager-fsdpnoise-2026-11-30/device_run.sh   (2 x H200; about 200 s)
W=/tmp/fsdpnoise
BUDGET_S=${BUDGET_S:-200}   # device_lib's guarded: no run launched after BUDGET_S s (each at most 60 s more)
. calibration/device_lib.sh
step="-m simcluster.runner.llm_step --warmup 3 --steps 10 --profile 0"
for r in 1 2 3 4; do
  guarded fsdp-0.5b-r$r 60 $two $step --preset 0.5b --shapes 5120:2 --mode fsdp
  guarded fsdp-0.8b-r$r 60 $two $step --preset 0.8b --shapes 4096:3 --mode fsdp
  if [ $r -le 2 ]; then guarded ddp-1b-r$r 60 $two $step --preset 1b --shapes 4096:3 --mode ddp; fi
done
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
