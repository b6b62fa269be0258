#!/bin/bash
# Issue 44, session 40 (lead), second call of the fsdpnoise diagnostic: where the noisy FSDP2 0.5b 5120:2 step loses its
# time. Both ranks' Chrome traces of two steps (runner --profile 1 --trace) in two processes of fsdp 0.5b 5120:2 and one of
# fsdp 0.8b 4096:3 (the row at the noise, for contrast). Not registered: repeats of measured shapes, nothing predicted.
#   MAIN_COMMIT=<main> bash calibration/h200x2-eager-fsdpnoise-2026-11-30/device_run_trace.sh   (2 x H200; about 90 s)
W=/tmp/fsdpnoise-trace
BUDGET_S=${BUDGET_S:-120}
. calibration/device_lib.sh
mkdir -p "$B/traces"
prof="-m simcluster.runner.llm_step --warmup 3 --steps 2 --profile 1"
guarded trace-fsdp-0.5b-r1 60 $two $prof --trace "$B/traces/fsdp-0.5b-r1" --preset 0.5b --shapes 5120:2 --mode fsdp
guarded trace-fsdp-0.8b-r1 60 $two $prof --trace "$B/traces/fsdp-0.8b-r1" --preset 0.8b --shapes 4096:3 --mode fsdp
guarded trace-fsdp-0.5b-r2 60 $two $prof --trace "$B/traces/fsdp-0.5b-r2" --preset 0.5b --shapes 5120:2 --mode fsdp
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
