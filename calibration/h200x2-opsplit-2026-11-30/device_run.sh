#!/bin/bash
# Issue 44, session 45 (REGISTERED before this ran: registered.yaml beside this script, validation/opsplit.py): the op
# policy's host term, the product against the candidate FrameworkSpec.free_phase_host (the step's host phases issued back
# to back, as torch issues them). One lease, ONE GPU (CUDA_VISIBLE_DEVICES=0, llm-step --mode single --ac-mode op): FIRST
# this lease's hidden-128 host probe (single and op at 2 and 32 layers: the files llm/eager.fit_modes reads) and the op
# policy's per-phase probe (the ophost bundle's hostprobe.py, committed with that bundle: hidden 128 at 24 layers, the
# document llm/eager.op_phase_factors reads, and the host-bound shape 1b 1728:2: forward / backward issue per step), so
# the guard cannot drop them; then three op shapes new to calibration/, one shape per process, in turn, three rounds. A
# budget guard stops launching runs after BUDGET_S s: worst case BUDGET_S + 60 s = 310 s; about 200 s expected (a probe
# run 9-15 s, a hostprobe run 12-15 s, a process 11-16 s: opcheck's call ran 18 such runs in 203 s).
#   MAIN_COMMIT=<main> bash calibration/h200x2-opsplit-2026-11-30/device_run.sh   (nvidia-h200-x2)
W=/tmp/opsplit
BUDGET_S=${BUDGET_S:-250}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
one="env CUDA_VISIBLE_DEVICES=0 python3 -m simcluster.runner.llm_step --mode single"
step="--warmup 5 --steps 20 --profile 0"
probe="--preset tiny --shapes 128:1 --warmup 3 --steps 20 --profile 1"
phase="env CUDA_VISIBLE_DEVICES=0 python3 calibration/h200x1-llm-ophost-2026-11-29/hostprobe.py --modes op"
mkdir -p "$B/host" "$B/phase"
for layers in 2 32; do guarded host/single-L$layers 60 $one $probe --layers $layers; done
for layers in 2 32; do guarded host/op-L$layers 60 $one $probe --layers $layers --ac-mode op; done
guarded phase/tiny-L24-128x1 60 $phase --preset tiny --layers 24 --shape 128:1
guarded phase/ophb-1b 60 $phase --preset 1b --shape 1728:2 --steps 10
for r in 1 2 3; do
  guarded ophb-1b-r$r 60 $one $step --preset 1b --shapes 1728:2 --ac-mode op
  guarded op-1.1b-r$r 60 $one $step --preset 1.1b --shapes 2368:4 --ac-mode op
  guarded op-0.5b-r$r 60 $one $step --preset 0.5b --shapes 3008:4 --ac-mode op
done
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
