#!/bin/bash
# Issue 44, session 48, helper tp4 (REGISTERED before this ran: registered.yaml beside this script, validation/tp4.py):
# torch TP x DP on 4 x H200 (the runner's --mode tp+fsdp / tp+ddp --group 2: TP over pairs of ranks, FSDP2 or DDP across
# them), the shipped model and a candidate host term. Three shapes new to calibration, one shape per process, three
# processes each, alternated A B C | C B A | A B C; 3 warm-up and 8 timed steps (--profile 0).
# Budget: the tpdp sets' 4-rank processes (the same runner modes and step counts) took 22-33 s each (their
# runs/status.txt): 9 processes, about 230 s expected. A budget guard stops launching runs after BUDGET_S s: worst case
# BUDGET_S + 90 s = 290 s.
#   MAIN_COMMIT=<main> bash calibration/h200x4-tp4-2026-11-30/device_run.sh   (nvidia-h200-x4)
W=/tmp/tp4
BUDGET_S=${BUDGET_S:-200}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
four="python3 -m torch.distributed.run --standalone --nproc-per-node 4 -m simcluster.runner.llm_step"
common="--warmup 3 --steps 8 --profile 0 --group 2"
for r in 1 2 3; do
  order="0.3b:1184:4:tp+fsdp 1b:2208:2:tp+fsdp 0.5b:1632:2:tp+ddp"
  [ $r -eq 2 ] && order="0.5b:1632:2:tp+ddp 1b:2208:2:tp+fsdp 0.3b:1184:4:tp+fsdp"
  for run in $order; do
    IFS=: read -r preset seq mb mode <<< "$run"
    guarded "$preset-${seq}x$mb-$mode-r$r" 90 $four --preset "$preset" --shapes "$seq:$mb" --mode "$mode" $common
  done
done
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
