#!/bin/bash
# Issue 44, session 44 (REGISTERED before this ran: registered.yaml beside this script, validation/hostsingle.py): the
# single-GPU eager regimes that miss the 8% target (single+host-bound, single+sac-op, single+sac-op+host-bound), lease /
# process noise or a model term. One lease, ONE GPU (CUDA_VISIBLE_DEVICES=0, llm-step --mode single): four shapes new to
# calibration/, one shape per process, in turn, three rounds; rounds 1 and 2 led by this lease's hidden-128 host probe
# (single, then op at 2 and 32 layers: the diagnostic folder's shapes, calibration/h200x1-llm-diag-2026-11-29/host). A
# budget guard stops launching runs after BUDGET_S s: worst case BUDGET_S + 60 s = 285 s; about 210 s expected (a
# process 10-15 s, a probe run 11-18 s).
#   MAIN_COMMIT=<main> bash calibration/h200x2-hostsingle-2026-11-30/device_run.sh   (nvidia-h200-x2)
W=/tmp/hostsingle
BUDGET_S=${BUDGET_S:-225}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
one="env CUDA_VISIBLE_DEVICES=0 python3 -m simcluster.runner.llm_step --mode single"
step="--warmup 5 --steps 20 --profile 0"
probe="--preset tiny --shapes 128:1 --warmup 3 --steps 20 --profile 1"
mkdir -p "$B/host"
for r in 1 2 3; do
  [ $r -eq 1 ] && for layers in 2 32; do guarded host/single-L$layers 60 $one $probe --layers $layers; done
  [ $r -eq 2 ] && for layers in 2 32; do guarded host/op-L$layers 60 $one $probe --layers $layers --ac-mode op; done
  guarded hb-1.1b-r$r 60 $one $step --preset 1.1b --shapes 1344:1
  guarded hb-0.3b-r$r 60 $one $step --preset 0.3b --shapes 2624:2
  guarded op-1b-r$r 60 $one $step --preset 1b --shapes 1856:4 --ac-mode op
  guarded ophb-0.8b-r$r 60 $one $step --preset 0.8b --shapes 1216:2 --ac-mode op
done
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
