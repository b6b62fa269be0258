#!/bin/bash
# Issue 44, session 51 (helper lab1x51; REGISTERED before this ran: registered.yaml beside this script, written by
# validation/lab1x51.py --register): new rows for the thin one-GPU eager regimes single+compile+ckpt and single+sac-op.
# ONE H200 (nvidia-h200), llm-step --mode single on GPU 0, the earlier sets' arguments: part C compiled with every block
# checkpointed (compileac's single variant: --compile --compile-scope layer --ac-mode full, 3 warm-up, 5 timed steps),
# part E selective checkpointing by op (hb49's: --ac-mode op, 5 warm-up, 20 timed steps); --profile 0; one shape per
# process, the five in turn, then again in reverse order (two processes a shape). No host probe.
# Budget: 10 processes; the earlier sets' processes took 18-32 s (compiled, compileac) and 12-17 s (op, hb49, opsplit):
# about 220 s expected. No run starts after BUDGET_S = 300 s; a compiled run is killed at 90 s, an op run at 60 s: worst
# case 300 + 90 s plus device_lib's records (~10 s) = 400 s. Run with timeout_s 420.
#   MAIN_COMMIT=<main> bash calibration/h200x1-lab1x51-2026-12-01/device_run.sh   (nvidia-h200, timeout_s 420)
# then: tar xzf runs.tgz -C calibration/h200x1-lab1x51-2026-12-01 && python validation/lab1x51.py calibration/h200x1-lab1x51-2026-12-01
W=${W:-/tmp/lab1x51}   # the work folder (a test's dry run sets its own)
BUDGET_S=${BUDGET_S:-300}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
one="env CUDA_VISIBLE_DEVICES=0 python3 -m simcluster.runner.llm_step --mode single"
compiled="--compile-scope layer --warmup 3 --steps 5 --profile 0 --compile --ac-mode full"
op="--warmup 5 --steps 20 --profile 0 --ac-mode op"
for r in 1 2; do
  order="c-3b:3b:864:4 op-1b:1b:864:8 c-0.8b:0.8b:928:16 op-2b:2b:736:8 op-0.8b:0.8b:864:16"
  [ $r -eq 2 ] && order="op-0.8b:0.8b:864:16 op-2b:2b:736:8 c-0.8b:0.8b:928:16 op-1b:1b:864:8 c-3b:3b:864:4"
  for run in $order; do
    IFS=: read -r name preset seq mb <<< "$run"
    case $name in
      c-*) guarded "$name-r$r" 90 $one $compiled --preset "$preset" --shapes "$seq:$mb" ;;
      *) guarded "$name-r$r" 60 $one $op --preset "$preset" --shapes "$seq:$mb" ;;
    esac
  done
done
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
