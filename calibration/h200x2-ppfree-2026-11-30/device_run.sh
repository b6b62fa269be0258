#!/bin/bash
# Issue 44, session 45 (REGISTERED before this ran: registered.yaml beside this script, validation/ppfree.py): the eager
# pipeline's stage hosts in series, free, or free in the steady state with the shared launch queue (the ppfree term), at
# 2 ranks (PP+host-bound). One lease: hidden-128 single-mode host runs (the product host folder's shapes) at 2 and 32
# layers first (this lease's own single host fit); then two host-bound shapes new to calibration/ under
# torch.distributed.pipelining 1F1B and GPipe (2 stages, 4 micro-batches), one row per process, the four rows in turn,
# two rounds; round 1's processes record their host timeline on every other step (--timeline, pp_timeline.py), round
# 2's do not (the recorder costs ~2.5%: the ppblock set's V).
# A budget guard stops launching runs after BUDGET_S s: worst case BUDGET_S + 80 s = 280 s; about 170 s expected (the
# ppblock set's probe and 8 processes of the same steps took 166 s); the second round's last rows go first.
#   MAIN_COMMIT=<main> bash calibration/h200x2-ppfree-2026-11-30/device_run.sh   (nvidia-h200-x2)
W=/tmp/ppfree
BUDGET_S=${BUDGET_S:-200}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
step="-m simcluster.runner.llm_step --warmup 3 --steps 12 --profile 0 --mode pp --microbatches 4 --schedule"
arch="--hidden 128 --ffn 352 --heads 4 --kv-heads 2 --vocab 512 --tied no --shapes 128:1,512:1 --warmup 5 --steps 20 --profile 0"
mkdir -p "$B/host"
host() { guarded host/single-L$1 60 python3 -m simcluster.runner.llm_step --layers $1 $arch --mode single; }
host 2
host 32
for r in 1 2; do
  tl=""
  [ "$r" = 1 ] && tl="--timeline"
  for spec in "0.3b 3136:1" "1.1b 640:1"; do
    set -- $spec
    guarded pp-1f1b-$1-r$r 80 $two $step 1f1b --preset $1 --shapes $2 $tl
    guarded pp-gpipe-$1-r$r 80 $two $step gpipe --preset $1 --shapes $2 $tl
  done
done
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
