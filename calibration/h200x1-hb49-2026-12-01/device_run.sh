#!/bin/bash
# Issue 44, session 49 (helper hb49; REGISTERED before this ran: registered.yaml beside this script, written by
# validation/hb49.py --register): the one-GPU op host-bound regime's lease term (single+sac-op+host-bound: no shape of it
# had run on two leases) and one new single host-bound shape. ONE H200 (nvidia-h200), llm-step --mode single, the
# earlier sets' arguments (hostsingle / opcheck / opsplit: 5 warm-up, 20 timed steps, --profile 0): three op host-bound
# shapes of earlier sets re-run exactly (opcheck's 0.5b 1472:2, opsplit's 1b 1728:2, hostsingle's 0.8b 1216:2), one op
# host-bound and one single host-bound shape new to calibration/, one shape per process, the five in turn, three rounds.
# No host probe. A budget guard stops launching runs after BUDGET_S s: worst case BUDGET_S + 60 s = 320 s; about 215 s
# expected (15 processes; the earlier sets' processes of these presets took 12-17 s each).
#   MAIN_COMMIT=<main> bash calibration/h200x1-hb49-2026-12-01/device_run.sh   (nvidia-h200, timeout_s 330)
# then: tar xzf runs.tgz -C calibration/h200x1-hb49-2026-12-01 && python validation/hb49.py calibration/h200x1-hb49-2026-12-01
W=/tmp/hb49
BUDGET_S=${BUDGET_S:-260}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
one="env CUDA_VISIBLE_DEVICES=0 python3 -m simcluster.runner.llm_step --mode single"
step="--warmup 5 --steps 20 --profile 0"
for r in 1 2 3; do
  guarded ophb-0.5b-r$r 60 $one $step --preset 0.5b --shapes 1472:2 --ac-mode op
  guarded ophb-1b-r$r 60 $one $step --preset 1b --shapes 1728:2 --ac-mode op
  guarded ophb-0.8b-r$r 60 $one $step --preset 0.8b --shapes 1216:2 --ac-mode op
  guarded ophb-0.3b-r$r 60 $one $step --preset 0.3b --shapes 2336:2 --ac-mode op
  guarded hb-0.8b-r$r 60 $one $step --preset 0.8b --shapes 1696:1
done
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
