#!/bin/bash
# Issue 44, session 44 (REGISTERED before this ran: registered.yaml beside this script, validation/pphost.py): eager
# pipelines at 2 ranks when the host issues the step (PP+host-bound), lease noise or a missing host term. One lease: three
# host-bound shapes new to calibration/ under torch.distributed.pipelining 1F1B and GPipe (2 stages, 4 micro-batches),
# one row per process, the six rows in turn, two rounds; hidden-128 single-mode host runs (the product host folder's
# shapes) for this lease's own single host fit: 2 and 32 layers first (the fit needs two layer counts), 8 last.
# A budget guard stops launching runs after BUDGET_S s: worst case BUDGET_S + 80 s = 345 s; about 255 s expected (a
# pipeline process 16-22 s, a host run 10-17 s: calibration/h200x2-eager-pphost-2026-11-29 and
# h200x2-eager-hostbound-noise-2026-11-29 status.txt); host/single-L8, last, is the run a guard would drop first.
#   MAIN_COMMIT=<main> bash calibration/h200x2-pphost-2026-11-30/device_run.sh   (nvidia-h200-x2)
W=/tmp/pphost
BUDGET_S=${BUDGET_S:-265}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
step="-m simcluster.runner.llm_step --warmup 3 --steps 10 --profile 0 --mode pp --microbatches 4 --schedule"
arch="--hidden 128 --ffn 352 --heads 4 --kv-heads 2 --vocab 512 --tied no --shapes 128:1,512:1 --warmup 5 --steps 20 --profile 0"
mkdir -p "$B/host"
host() { guarded host/single-L$1 60 python3 -m simcluster.runner.llm_step --layers $1 $arch --mode single; }
host 2
host 32
for r in 1 2; do
  for spec in "0.5b 1536:1" "0.8b 1344:1" "2b 896:1"; do
    set -- $spec
    guarded pp-1f1b-$1-r$r 80 $two $step 1f1b --preset $1 --shapes $2
    guarded pp-gpipe-$1-r$r 80 $two $step gpipe --preset $1 --shapes $2
  done
done
host 8
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
