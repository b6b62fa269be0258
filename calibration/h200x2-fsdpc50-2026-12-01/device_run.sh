#!/bin/bash
# Issue 44, session 50, helper fsdpc50 (REGISTERED before this ran: registered.yaml beside this script,
# validation/fsdpc50.py; the candidates framework.compiled_nock_loss in simcluster/llm/compiled.py and
# compiled_loss_donated in simcluster/llm/memory.py, both OFF). FSDP2 +
# whole-model torch.compile WITHOUT checkpointing (--mode fsdp --compile --compile-scope model, no --ac-mode) on 2 ranks,
# 3 warm-up steps (the first holds the compilation) and 5 timed: 1b 576:24 and 3b 480:16 in two processes each, 1b 416:32
# in one, in the order below (the guard drops the last first).
# Budget (x2set49's and mem49's compiled FSDP2 processes 23-32 s at 115-220 ms steps; these 200-320 ms, 3b's compile
# longer): about 160 s expected. No run is launched after BUDGET_S s; each run at most 90 s: worst case 180 + 90 = 270 s.
# Needs nvidia-h200-x2 (2 GPUs); on a 1-GPU machine torchrun's second rank fails at once and every row reads NO DATA.
#   MAIN_COMMIT=<main> bash calibration/h200x2-fsdpc50-2026-12-01/device_run.sh   (nvidia-h200-x2)
W=/tmp/fsdpc50
BUDGET_S=${BUDGET_S:-180}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
comp="$two -m simcluster.runner.llm_step --warmup 3 --steps 5 --profile 0 --mode fsdp --compile --compile-scope model"
nock() { guarded "$1-${2/:/x}-fsdpnock-r$3" 90 $comp --preset "$1" --shapes "$2"; }   # PRESET SHAPE PROCESS_NUMBER
nock 1b 576:24 1; nock 3b 480:16 1; nock 1b 416:32 1; nock 3b 480:16 2; nock 1b 576:24 2
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
