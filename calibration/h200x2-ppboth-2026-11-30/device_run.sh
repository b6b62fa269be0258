#!/bin/bash
# Issue 44, session 46 (REGISTERED before this ran: registered.yaml beside this script, validation/ppboth.py): the eager
# pipeline's stage hosts in series, free, or free in the steady state with the shared launch queue (the ppfree term), at
# 2 ranks (PP+host-bound), with NO timeline recorder in any process (the ppfree set's recorder / round confound removed).
# One lease: hidden-128 single-mode host runs (the product host folder's shapes) at 2 and 32 layers first (this lease's
# own single host fit); then one host-bound shape new to calibration/ (0.3b 3264:1) under torch.distributed.pipelining
# 1F1B and GPipe (2 stages, 4 micro-batches), one row per process, five rounds in ABBA order (1F1B first in odd rounds,
# GPipe first in even ones: positions 1,4,5,8,9 and 2,3,6,7,10).
# A budget guard stops launching runs after BUDGET_S s: worst case BUDGET_S + 80 s = 300 s; about 210 s expected (the
# ppfree set's probe and 8 processes of the same steps took 163 s, 16-20 s a process); the last round goes first.
#   MAIN_COMMIT=<main> bash calibration/h200x2-ppboth-2026-11-30/device_run.sh   (nvidia-h200-x2)
W=/tmp/ppboth
BUDGET_S=${BUDGET_S:-220}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
step="-m simcluster.runner.llm_step --warmup 3 --steps 12 --profile 0 --mode pp --microbatches 4 --schedule"
arch="--hidden 128 --ffn 352 --heads 4 --kv-heads 2 --vocab 512 --tied no --shapes 128:1,512:1 --warmup 5 --steps 20 --profile 0"
mkdir -p "$B/host"
host() { guarded host/single-L$1 60 python3 -m simcluster.runner.llm_step --layers $1 $arch --mode single; }
host 2
host 32
for r in 1 2 3 4 5; do
  order="1f1b gpipe"
  [ $((r % 2)) = 0 ] && order="gpipe 1f1b"
  for s in $order; do
    guarded pp-$s-0.3b-r$r 80 $two $step $s --preset 0.3b --shapes 3264:1
  done
done
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
