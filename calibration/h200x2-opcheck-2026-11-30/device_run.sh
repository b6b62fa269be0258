#!/bin/bash
# Issue 44, session 44 (REGISTERED before this ran: registered.yaml beside this script, validation/opcheck.py): a
# held-out check of the product's ckpt and op host terms (hostproduct's, heldout/eager.MODE_HOST's leases.yaml). One
# lease, ONE GPU (CUDA_VISIBLE_DEVICES=0, llm-step --mode single): FIRST this lease's hidden-128 host probe (single, op,
# ckpt at 2 and 32 layers: the diagnostic folder's shapes, so the guard cannot drop them), then four shapes new to
# calibration/, one shape per process, in turn, three rounds. A budget guard stops launching runs after BUDGET_S s:
# worst case BUDGET_S + 60 s = 310 s; about 250 s expected (a probe run 11-18 s, a process 12-17 s; hostsingle's call:
# 16 runs in 228 s).
#   MAIN_COMMIT=<main> bash calibration/h200x2-opcheck-2026-11-30/device_run.sh   (nvidia-h200-x2)
W=/tmp/opcheck
BUDGET_S=${BUDGET_S:-250}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
one="env CUDA_VISIBLE_DEVICES=0 python3 -m simcluster.runner.llm_step --mode single"
step="--warmup 5 --steps 20 --profile 0"
probe="--preset tiny --shapes 128:1 --warmup 3 --steps 20 --profile 1"
mkdir -p "$B/host"
for layers in 2 32; do guarded host/single-L$layers 60 $one $probe --layers $layers; done
for layers in 2 32; do guarded host/op-L$layers 60 $one $probe --layers $layers --ac-mode op; done
for layers in 2 32; do guarded host/ckpt-L$layers 60 $one $probe --layers $layers --activation-checkpointing; done
for r in 1 2 3; do
  guarded ophb-0.5b-r$r 60 $one $step --preset 0.5b --shapes 1472:2 --ac-mode op
  guarded op-1b-r$r 60 $one $step --preset 1b --shapes 2240:2 --ac-mode op
  guarded ckhb-0.5b-r$r 60 $one $step --preset 0.5b --shapes 960:2 --activation-checkpointing
  guarded ck-0.8b-r$r 60 $one $step --preset 0.8b --shapes 2432:2 --activation-checkpointing
done
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
