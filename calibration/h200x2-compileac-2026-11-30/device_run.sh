#!/bin/bash
# Issue 44, session 46, helper compileac (REGISTERED before this ran: registered.yaml beside this script,
# validation/compileac.py): the compiled + checkpointed step with the model before and after the weight-cast fix
# (framework.casts_in_block). Runs as compilefsdp's (calibration/h200x2-compilefsdp-2026-11-30): one GPU
# (--compile --ac-mode full: torch.utils.checkpoint around each compiled block) on three shapes and FSDP2 on 2 ranks
# (--mode fsdp --compile --compile-scope model --ac-mode full) on one, all new to calibration; one shape per process,
# two rounds (round 2 in the reverse order); 3 warm-up steps (the first holds the compilation) and 5 timed steps.
# A budget guard stops launching runs after BUDGET_S s: worst case BUDGET_S + 90 s = 290 s; about 200 s expected
# (compilefsdp: a one-GPU process 25 s cold, 15 s from Inductor's cache; an FSDP2 process about 40 s).
#   MAIN_COMMIT=<main> bash calibration/h200x2-compileac-2026-11-30/device_run.sh   (nvidia-h200-x2)
W=/tmp/compileac
BUDGET_S=${BUDGET_S:-200}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
common="--warmup 3 --steps 5 --profile 0 --compile --ac-mode full"
single="python3 -m simcluster.runner.llm_step --mode single --compile-scope layer $common"
fsdp="$two -m simcluster.runner.llm_step --mode fsdp --compile-scope model $common"
for r in 1 2; do
  order="1b:3840:2:single 0.8b:1500:4:single 1.1b:3904:3:fsdp 0.5b:1000:8:single"
  [ $r -eq 2 ] && order="0.5b:1000:8:single 1.1b:3904:3:fsdp 0.8b:1500:4:single 1b:3840:2:single"
  for run in $order; do
    IFS=: read -r preset seq mb v <<< "$run"
    if [ "$v" = single ]; then cmd=$single; else cmd=$fsdp; fi
    guarded "$preset-${seq}x$mb-$v-r$r" 90 $cmd --preset "$preset" --shapes "$seq:$mb"
  done
done
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
