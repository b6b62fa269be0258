#!/bin/bash
# Issue 44, session 42 (REGISTERED before this ran: registered.yaml beside this script, validation/eager_tpnoise.py):
# eager DTensor TP at 2 ranks, model error or lease noise. One lease: the 2b preset's sealed shapes 2048:2 and 4096:1 in
# one process, three processes in each order (a: 2048:2 first; b: 4096:1 first), alternating, then 3b 4096:1 in
# separate processes while the budget lasts. A budget guard stops launching runs after BUDGET_S s: worst case
# BUDGET_S + 60 s = 210 s; about 160-190 s expected (a 2-shape TP process about 25 s).
#   MAIN_COMMIT=<main> bash calibration/h200x2-eager-tpnoise-2026-11-30/device_run.sh   (nvidia-h200-x2)
W=/tmp/eager-tpnoise
BUDGET_S=${BUDGET_S:-150}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
tp="$two -m simcluster.runner.llm_step --warmup 5 --steps 10 --profile 0 --mode tp"
guarded a-r1 60 $tp --preset 2b --shapes 2048:2,4096:1
guarded b-r1 60 $tp --preset 2b --shapes 4096:1,2048:2
guarded a-r2 60 $tp --preset 2b --shapes 2048:2,4096:1
guarded b-r2 60 $tp --preset 2b --shapes 4096:1,2048:2
guarded a-r3 60 $tp --preset 2b --shapes 2048:2,4096:1
guarded b-r3 60 $tp --preset 2b --shapes 4096:1,2048:2
guarded 3b-r1 60 $tp --preset 3b --shapes 4096:1
guarded 3b-r2 60 $tp --preset 3b --shapes 4096:1
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
