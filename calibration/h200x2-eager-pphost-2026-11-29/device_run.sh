#!/bin/bash
# Issue 44, session 39 (REGISTERED before this ran: registered.yaml beside this script, validation/eager_pp_host.py):
# the eager pipeline's hosts running ahead of their GPUs (llm/host_ahead.py, llm/free_run.py) and the host-bound flag.
# First this lease's hidden-128 single-mode host runs (runs/host/: the own-fit variant's fit, the 2026-11-23 folder's
# shapes), then the registered rows round-robin, one process per row per round: 2 rounds of every row, a third of
# pp-1f1b-1.1b (the host-bound 1F1B row, 3 processes). A budget guard stops launching runs after BUDGET_S seconds.
#   MAIN_COMMIT=<main> bash calibration/h200x2-eager-pphost-2026-11-29/device_run.sh   (nvidia-h200-x2; about 330 s)
W=/tmp/eager-pphost
. calibration/device_lib.sh
BUDGET_S=${BUDGET_S:-380}
start=$SECONDS
guarded() {   # NAME LIMIT_S COMMAND...: run unless the budget is spent
  if [ $((SECONDS - start)) -ge "$BUDGET_S" ]; then echo "$1 skipped: budget $BUDGET_S s spent" | tee -a "$B/status.txt"; return; fi
  run "$@"
}
step="-m simcluster.runner.llm_step --warmup 3 --steps 10 --profile 0"
mkdir -p "$B/host"
arch="--hidden 128 --ffn 352 --heads 4 --kv-heads 2 --vocab 512 --tied no --shapes 128:1,512:1 --warmup 5 --steps 20 --profile 0"
for layers in 2 8 32; do
  guarded host/single-L$layers 90 python3 -m simcluster.runner.llm_step --layers $layers $arch --mode single
done
pp="--mode pp --microbatches 4 --schedule"
for r in 1 2 3; do
  guarded pp-1f1b-1.1b-r$r 90 $two $step --preset 1.1b --shapes 1280:1 $pp 1f1b
  [ $r -eq 3 ] && break
  guarded pp-gpipe-1.1b-r$r 90 $two $step --preset 1.1b --shapes 1280:1 $pp gpipe
  guarded pp-1f1b-2b-r$r 90 $two $step --preset 2b --shapes 1280:2 $pp 1f1b
  guarded pp-gpipe-2b-r$r 90 $two $step --preset 2b --shapes 1280:2 $pp gpipe
  guarded single-1.1b-r$r 60 python3 $step --preset 1.1b --shapes 768:1 --mode single
  guarded single-0.8b-r$r 60 python3 $step --preset 0.8b --shapes 2560:2 --mode single
  guarded ddp-0.3b-r$r 90 $two $step --preset 0.3b --shapes 1536:1 --mode ddp
  guarded fsdp-2b-r$r 90 $two $step --preset 2b --shapes 2560:2 --mode fsdp
done
echo "total $((SECONDS - start)) s" | tee -a "$B/status.txt"
pack
