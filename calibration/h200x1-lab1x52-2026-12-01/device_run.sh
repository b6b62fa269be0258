#!/bin/bash
# Issue 44, session 52 (helper lab1x52; REGISTERED before this ran: registered.yaml beside this script, written by
# validation/lab1x52.py --register): new rows for the two host-bound one-GPU eager regimes, single+sac-op+host-bound
# and single+host-bound. ONE H200 (nvidia-h200), llm-step --mode single on GPU 0 with hb49's arguments (5 warm-up, 20
# timed steps, --profile 0; --ac-mode op for the op rows, none for the others), one shape per process, the five in turn,
# three rounds (the second in reverse order): 15 processes, three a shape. No host probe.
# Budget: hb49's 15 processes of this kind took 9-15 s each, 186 s in all: about 195 s expected here. No run starts after
# BUDGET_S = 280 s; each run is killed at 45 s: worst case 280 + 45 s plus device_lib's records (~10 s) = 335 s.
# Run with timeout_s 360.
#   MAIN_COMMIT=<main> bash calibration/h200x1-lab1x52-2026-12-01/device_run.sh   (nvidia-h200, timeout_s 360)
# then: tar xzf runs.tgz -C calibration/h200x1-lab1x52-2026-12-01 && python validation/lab1x52.py calibration/h200x1-lab1x52-2026-12-01
W=${W:-/tmp/lab1x52}   # the work folder (a test's dry run sets its own)
BUDGET_S=${BUDGET_S:-280}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
one="env CUDA_VISIBLE_DEVICES=0 python3 -m simcluster.runner.llm_step --mode single"
step="--warmup 5 --steps 20 --profile 0"
for r in 1 2 3; do
  order="ophb-1b:1b:1056:2:op hb-0.3b:0.3b:1120:2:none ophb-2b:2b:672:2:op hb-1.1b:1.1b:608:4:none hb-3.1b:3.1b:352:2:none"
  [ $r -eq 2 ] && order="hb-3.1b:3.1b:352:2:none hb-1.1b:1.1b:608:4:none ophb-2b:2b:672:2:op hb-0.3b:0.3b:1120:2:none ophb-1b:1b:1056:2:op"
  for run in $order; do
    IFS=: read -r name preset seq mb ac <<< "$run"
    guarded "$name-r$r" 45 $one $step --preset "$preset" --shapes "$seq:$mb" --ac-mode "$ac"
  done
done
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
