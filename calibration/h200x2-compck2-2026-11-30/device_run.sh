#!/bin/bash
# Issue 44, session 48, helper compck2 (REGISTERED before this ran: registered.yaml beside this script,
# validation/compck2.py): FSDP2 + whole-model torch.compile + full activation checkpointing on 2 ranks, compck's design
# (the shipped model and the candidate framework.whole_model_graph registered side by side) on two new shapes, led by
# this lease's own hidden-128 host runs (single and fsdp at 2 and 32 layers, the product host folder's shapes: runs/host,
# read by validation/compck2.lease_column for the third column). Then the two shapes, three processes each, alternated
# A B | B A | A B; 3 warm-up steps (the first holds the compilation) and 5 timed steps.
# Budget: host runs 10 / 14 s (single L2 / L32: h200x2-ppblock-2026-11-30/runs/status.txt) and 18 / 25 s (fsdp L2 / L32:
# h200x2-eager-fsdphost-lease3-2026-11-30), about 67 s; compck's six processes of this variant 21-31 s, 148 s in all:
# about 220 s expected. A budget guard stops launching runs after BUDGET_S s, each step run at most 60 s, each host run
# 45 s: worst case BUDGET_S + 60 s = 275 s; the last round's processes are the ones a guard would drop first.
#   MAIN_COMMIT=<main> bash calibration/h200x2-compck2-2026-11-30/device_run.sh   (nvidia-h200-x2)
W=/tmp/compck2
BUDGET_S=${BUDGET_S:-215}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
arch="--hidden 128 --ffn 352 --heads 4 --kv-heads 2 --vocab 512 --tied no --shapes 128:1,512:1 --warmup 5 --steps 20 --profile 0"
mkdir -p "$B/host"
for layers in 2 32; do
  guarded host/single-L$layers 45 python3 -m simcluster.runner.llm_step --layers $layers $arch --mode single
  guarded host/fsdp-L$layers 45 $two -m simcluster.runner.llm_step --layers $layers $arch --mode fsdp
done
common="--warmup 3 --steps 5 --profile 0 --compile --ac-mode full"
fsdp="$two -m simcluster.runner.llm_step --mode fsdp --compile-scope model $common"
for r in 1 2 3; do
  order="1b:2528:3 0.5b:2080:5"
  [ $r -eq 2 ] && order="0.5b:2080:5 1b:2528:3"
  for run in $order; do
    IFS=: read -r preset seq mb <<< "$run"
    guarded "$preset-${seq}x$mb-fsdp-r$r" 60 $fsdp --preset "$preset" --shapes "$seq:$mb"
  done
done
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
