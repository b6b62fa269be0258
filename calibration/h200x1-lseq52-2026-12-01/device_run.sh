#!/bin/bash
# Issue 44, session 52 (helper lseq52; REGISTERED before this ran: registered.yaml beside this script, written by
# validation/lseq52.py --register): whole eager training steps at 12K-57K tokens a sequence on ONE H200 (nvidia-h200),
# llm-step --mode single on GPU 0, micro-batch 1, torch's default SDPA, --warmup 2 --steps 4 --profile 0: 0.5b at 23552 /
# 39936 / 57344 plain and 57344 with every block checkpointed (--ac-mode full), 1b at 39936 checkpointed, 3b at 12288
# plain; one shape per process, the six in turn, then again in reverse order (two processes a shape). No host probe.
# Budget: 12 processes; session 39's cudnnstep single processes took 13-29 s (10-12 s start-up beside 8 steps of 0.35-2.1 s);
# these are 6 steps of 0.37-1.9 s (predicted): about 220 s expected. No run starts after BUDGET_S = 300 s; each run is
# killed at 60 s (the longest predicted ~25 s): worst case 300 + 60 + ~10 s (device_lib's records) = 370 s. timeout_s 420.
#   MAIN_COMMIT=<main> bash calibration/h200x1-lseq52-2026-12-01/device_run.sh   (nvidia-h200, timeout_s 420)
# then: tar xzf runs.tgz -C calibration/h200x1-lseq52-2026-12-01 && python validation/lseq52.py calibration/h200x1-lseq52-2026-12-01
W=${W:-/tmp/lseq52}   # the work folder (a test's dry run sets its own)
BUDGET_S=${BUDGET_S:-300}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
one="env CUDA_VISIBLE_DEVICES=0 python3 -m simcluster.runner.llm_step --mode single --warmup 2 --steps 4 --profile 0"
for r in 1 2; do
  order="s23-0.5b:0.5b:23552:none s40-0.5b:0.5b:39936:none s57-0.5b:0.5b:57344:none s57c-0.5b:0.5b:57344:full s40c-1b:1b:39936:full s12-3b:3b:12288:none"
  [ $r -eq 2 ] && order="s12-3b:3b:12288:none s40c-1b:1b:39936:full s57c-0.5b:0.5b:57344:full s57-0.5b:0.5b:57344:none s40-0.5b:0.5b:39936:none s23-0.5b:0.5b:23552:none"
  for run in $order; do
    IFS=: read -r name preset seq ac <<< "$run"
    guarded "$name-r$r" 60 $one --preset "$preset" --shapes "$seq:1" --ac-mode "$ac"
  done
done
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
