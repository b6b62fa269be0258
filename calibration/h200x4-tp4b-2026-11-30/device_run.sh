#!/bin/bash
# Issue 44, session 48, helper tp4b (REGISTERED before this ran: registered.yaml beside this script, validation/tp4b.py):
# 4-GPU torch TP x DP, host runs and steps on ONE lease. First this lease's own host runs (runs/host/): hidden-128
# decoders in tp+ddp and tp+fsdp on 4 ranks (--group 2) at 2 and 32 layers, the tpdp2 bundle's decoder and shapes
# (calibration/h200x4-llm-eager-tpdp2-2026-11-28/device_run.sh) with 3 warm-up and 10 timed steps in place of its 5 and
# 20 (studies/tpdp_host_split.txt part 4: 2 and 32 layers reproduce the three-count fit, 2 and 8 do not); then two
# shapes new to calibration, one shape per process, three processes each, alternated A B | B A | A B; 3 warm-up and 8
# timed steps (--profile 0).
# Budget: tpdp2's host runs took 22-24 s at 2 layers and 46-51 s at 32 (50 steps of about 0.6 s there, so about 20 s
# of start-up): with 26 steps about 21 and 36 s; tp4's step processes 16-21 s: 4 + 6 processes, about 222 s expected.
# Each host run is limited to 60 s (the 32-layer one: 1.7 x its expected 36 s; the four end by 240 s), each step
# process to 40 s (tp4's took 16-21 s), and a budget guard stops launching runs after BUDGET_S = 245 s, so the last step
# process (expected to launch near 204 s) has 41 s of room: worst case BUDGET_S + 40 s = 285 s (cold review A48 item 7,
# changed before the run; registered.yaml unchanged).
#   MAIN_COMMIT=<main> bash calibration/h200x4-tp4b-2026-11-30/device_run.sh   (nvidia-h200-x4)
W=/tmp/tp4b
BUDGET_S=${BUDGET_S:-245}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
four="python3 -m torch.distributed.run --standalone --nproc-per-node 4 -m simcluster.runner.llm_step"
arch="--hidden 128 --ffn 352 --heads 4 --kv-heads 2 --vocab 512 --tied no --shapes 128:1,512:1 --warmup 3 --steps 10 --profile 0"
B=$W/runs/host
mkdir -p "$B"
for layers in 2 32; do
  for mode in tp+ddp tp+fsdp; do
    guarded "$mode-L$layers" 60 $four --layers $layers $arch --mode $mode --group 2
  done
done
B=$W/runs
common="--warmup 3 --steps 8 --profile 0 --group 2"
for r in 1 2 3; do
  order="1b:2016:2:tp+fsdp 0.5b:1568:2:tp+ddp"
  [ $r -eq 2 ] && order="0.5b:1568:2:tp+ddp 1b:2016:2:tp+fsdp"
  for run in $order; do
    IFS=: read -r preset seq mb mode <<< "$run"
    guarded "$preset-${seq}x$mb-$mode-r$r" 40 $four --preset "$preset" --shapes "$seq:$mb" --mode "$mode" $common
  done
done
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
