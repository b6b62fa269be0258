#!/bin/bash
# Issue 44, session 49, helper mem49 (REGISTERED before this ran: registered.yaml beside this script,
# validation/mem49.py; the term framework.compiled_nock_memory in simcluster/llm/compiled.py). FSDP2 + whole-model
# torch.compile WITHOUT checkpointing (--mode fsdp --compile --compile-scope model, no --ac-mode) on 2 ranks, 3 warm-up
# steps (the first holds the compilation) and 5 timed: 1b 3104:4 in two processes, 2b 3104:2 in one.
# Budget (x2set49's compiled FSDP2 processes 24-35 s at 115-125 ms steps; these steps 180-220 ms): about 95 s expected.
# A budget guard stops launching runs after BUDGET_S s; each run at most 60 s: worst case 90 + 60 = 150 s.
#   MAIN_COMMIT=<main> bash calibration/h200x2-mem49-2026-12-01/device_run.sh   (nvidia-h200-x2)
W=/tmp/mem49
BUDGET_S=${BUDGET_S:-90}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
comp="$two -m simcluster.runner.llm_step --warmup 3 --steps 5 --profile 0 --mode fsdp --compile --compile-scope model"
nock() { guarded "$1-${2/:/x}-fsdpnock-r$3" 60 $comp --preset "$1" --shapes "$2"; }   # PRESET SHAPE PROCESS_NUMBER
nock 1b 3104:4 1; nock 2b 3104:2 1; nock 1b 3104:4 2
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
