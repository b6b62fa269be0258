#!/bin/bash
# Issue 44, session 44 (REGISTERED before this ran: registered.yaml beside this script, validation/ppcouple.py): the stage
# hosts' coupling in eager pipelines at 2 ranks (PP+host-bound). One lease: hidden-128 single-mode host runs (the product
# host folder's shapes) at 2 and 32 layers first (this lease's own single host fit needs two layer counts); the same
# decoder as a 2-stage 1F1B pipeline at 4 and 32 layers (the pipeline probe: GPU work negligible, the step is the two
# hosts); then two host-bound shapes new to calibration/ under torch.distributed.pipelining 1F1B and GPipe (2 stages, 4
# micro-batches), one row per process, the four rows in turn, two rounds; last, the launch queue probe
# (simcluster/runner/launch_queue.py: how many launches one stream queues before the host blocks; reported only).
# A budget guard stops launching runs after BUDGET_S s: worst case BUDGET_S + 80 s = 330 s; about 255 s expected (a
# pipeline process 20-24 s, a host run 13-16 s: calibration/h200x2-pphost-2026-11-30/runs/status.txt; the queue probe
# about 10 s); the queue probe and the second round's last rows are the ones a guard would drop first.
#   MAIN_COMMIT=<main> bash calibration/h200x2-ppcouple-2026-11-30/device_run.sh   (nvidia-h200-x2)
W=/tmp/ppcouple
BUDGET_S=${BUDGET_S:-250}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
step="-m simcluster.runner.llm_step --warmup 3 --steps 10 --profile 0 --mode pp --microbatches 4 --schedule"
arch="--hidden 128 --ffn 352 --heads 4 --kv-heads 2 --vocab 512 --tied no --shapes 128:1,512:1 --warmup 5 --steps 20 --profile 0"
tiny="--hidden 128 --ffn 352 --heads 4 --kv-heads 2 --vocab 512 --tied no --shapes 256:1"
mkdir -p "$B/host" "$B/probe" "$B/queue"
host() { guarded host/single-L$1 60 python3 -m simcluster.runner.llm_step --layers $1 $arch --mode single; }
probe() { guarded probe/pp-1f1b-L$1 80 $two $step 1f1b --layers $1 $tiny; }
host 2
host 32
probe 4
probe 32
for r in 1 2; do
  for spec in "0.3b 1792:1" "1.1b 896:1"; do
    set -- $spec
    guarded pp-1f1b-$1-r$r 80 $two $step 1f1b --preset $1 --shapes $2
    guarded pp-gpipe-$1-r$r 80 $two $step gpipe --preset $1 --shapes $2
  done
done
guarded queue/launch-queue 60 python3 -m simcluster.runner.launch_queue --launches 4000 --hold-ms 200 --repeats 3
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
