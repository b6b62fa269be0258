#!/bin/bash
# Issue 44, session 46 (REGISTERED before this ran: registered.yaml beside this script, validation/compilefsdp.py):
# torch.compile with every block checkpointed, on one GPU (--compile --ac-mode full: torch.utils.checkpoint around each
# compiled block) and under FSDP2 on 2 ranks (--mode fsdp --compile --compile-scope model --ac-mode full: each block in
# checkpoint_wrapper, fully_shard per block, the whole model compiled, as KempnerForge's trainer). Two shapes new to
# calibration, one shape and variant per process, two rounds (round 2 in the reverse order). 3 warm-up steps (the first
# holds the compilation; each warm-up step timed apart) and 5 timed steps. A budget guard stops launching runs after
# BUDGET_S s: worst case BUDGET_S + 90 s = 330 s; about 250 s expected (a one-GPU process about 25 s, an FSDP2 one about
# 40 s; round 2 reads Inductor's on-disk cache that round 1 wrote).
#   MAIN_COMMIT=<main> bash calibration/h200x2-compilefsdp-2026-11-30/device_run.sh   (nvidia-h200-x2)
W=/tmp/compilefsdp
BUDGET_S=${BUDGET_S:-240}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
common="--warmup 3 --steps 5 --profile 0 --compile --ac-mode full"
single="python3 -m simcluster.runner.llm_step --mode single --compile-scope layer $common"
fsdp="$two -m simcluster.runner.llm_step --mode fsdp --compile-scope model $common"
for r in 1 2; do
  order="1.1b:3392:2:single 1.1b:3392:2:fsdp 0.5b:3648:2:single 0.5b:3648:2:fsdp"
  [ $r -eq 2 ] && order="0.5b:3648:2:fsdp 0.5b:3648:2:single 1.1b:3392:2:fsdp 1.1b:3392:2:single"
  for run in $order; do
    IFS=: read -r preset seq mb v <<< "$run"
    if [ "$v" = single ]; then cmd=$single; else cmd=$fsdp; fi
    guarded "$preset-${seq}x$mb-$v-r$r" 90 $cmd --preset "$preset" --shapes "$seq:$mb"
  done
done
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
