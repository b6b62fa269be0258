#!/bin/bash
# Issue 44, session 45 (REGISTERED before this ran: registered.yaml beside this script, validation/ppblock.py): where a
# host-bound pipeline's two hosts block, at 2 ranks (PP+host-bound). One lease: hidden-128 single-mode host runs (the
# product host folder's shapes) at 2 and 32 layers first (this lease's own single host fit needs two layer counts); then
# two host-bound shapes new to calibration/ under torch.distributed.pipelining 1F1B and GPipe (2 stages, 4 micro-batches),
# every rank recording its host timeline on every other step (--timeline: simcluster/runner/pp_timeline.py), one row per
# process, the four rows in turn, two rounds.
# A budget guard stops launching runs after BUDGET_S s: worst case BUDGET_S + 80 s = 300 s; about 215 s expected (a
# pipeline process 19-23 s, a host run 11-15 s: calibration/h200x2-ppcouple-2026-11-30/runs/status.txt; 12 timed steps
# here against 10 there, under 1 s more); the second round's last rows are the ones a guard would drop first.
#   MAIN_COMMIT=<main> bash calibration/h200x2-ppblock-2026-11-30/device_run.sh   (nvidia-h200-x2)
W=/tmp/ppblock
BUDGET_S=${BUDGET_S:-220}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
step="-m simcluster.runner.llm_step --warmup 3 --steps 12 --profile 0 --mode pp --microbatches 4 --timeline --schedule"
arch="--hidden 128 --ffn 352 --heads 4 --kv-heads 2 --vocab 512 --tied no --shapes 128:1,512:1 --warmup 5 --steps 20 --profile 0"
mkdir -p "$B/host"
host() { guarded host/single-L$1 60 python3 -m simcluster.runner.llm_step --layers $1 $arch --mode single; }
host 2
host 32
for r in 1 2; do
  for spec in "0.3b 832:1" "0.5b 1984:1"; do
    set -- $spec
    guarded pp-1f1b-$1-r$r 80 $two $step 1f1b --preset $1 --shapes $2
    guarded pp-gpipe-$1-r$r 80 $two $step gpipe --preset $1 --shapes $2
  done
done
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
