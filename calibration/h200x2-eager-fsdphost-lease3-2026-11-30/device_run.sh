#!/bin/bash
# Issue 44, session 43 (REGISTERED before this ran: registered.yaml beside this script, validation/eager_fsdphost.py):
# eager FSDP2 at 2 ranks when the host issues the step (FSDP+host-bound): model term or lease noise. One lease: three
# of the regime's table shapes, one shape per process, in turn, three rounds, each round led by one hidden-128 FSDP2
# host run (the product host folder's shapes) for this lease's own host fit. A budget guard stops launching runs after
# BUDGET_S s: worst case BUDGET_S + 90 s = 370 s; about 270 s expected (an FSDP2 process about 22 s).
#   MAIN_COMMIT=<main> bash calibration/h200x2-eager-fsdphost-2026-11-30/device_run.sh   (nvidia-h200-x2)
W=/tmp/eager-fsdphost
BUDGET_S=${BUDGET_S:-280}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
fsdp="$two -m simcluster.runner.llm_step --warmup 5 --steps 10 --profile 0 --mode fsdp"
arch="--hidden 128 --ffn 352 --heads 4 --kv-heads 2 --vocab 512 --tied no --shapes 128:1,512:1 --warmup 5 --steps 20 --profile 0"
mkdir -p "$B/host"
r=0
for layers in 2 8 32; do
  r=$((r + 1))
  guarded host/fsdp-L$layers 90 $two -m simcluster.runner.llm_step --layers $layers $arch --mode fsdp
  guarded 0.3b-4096x1-r$r 90 $fsdp --preset 0.3b --shapes 4096:1
  guarded 0.8b-2048x1-r$r 90 $fsdp --preset 0.8b --shapes 2048:1
  guarded 1.1b-1024x4-r$r 90 $fsdp --preset 1.1b --shapes 1024:4
done
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
