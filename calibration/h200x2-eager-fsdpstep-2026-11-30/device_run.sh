#!/bin/bash
# Issue 44, session 40 fsdp2time (REGISTERED before this ran: registered.yaml beside this script, validation/eager_fsdp_step.py):
# FSDP2's step time, the kept model against the bf16-block candidate (eager.bf16_step): four FSDP2 rows (the first in two
# processes, the set's own spread) and one DDP control, and a profiled step of one FSDP2 row, one 2 x H200 lease, torch's default SDPA. A budget guard stops
# launching runs after BUDGET_S s.
#   MAIN_COMMIT=<main> bash calibration/h200x2-eager-fsdpstep-2026-11-30/device_run.sh   (nvidia-h200-x2; about 170 s, at most 200 s)
W=/tmp/eager-fsdpstep
BUDGET_S=${BUDGET_S:-140}   # device_lib's guarded: no run launched after BUDGET_S s (then at most 60 s more: <= 200 s)
. calibration/device_lib.sh
step="-m simcluster.runner.llm_step --warmup 3 --steps 5 --profile 0"
guarded fsdp-0.5b-r1 60 $two $step --preset 0.5b --shapes 5120:2 --mode fsdp
guarded fsdp-1.1b-r1 60 $two $step --preset 1.1b --shapes 4096:3 --mode fsdp
guarded fsdp-0.8b-r1 60 $two $step --preset 0.8b --shapes 4096:3 --mode fsdp
guarded fsdp-2b-r1 60 $two $step --preset 2b --shapes 4096:3 --mode fsdp
guarded ddp-1b-r1 60 $two $step --preset 1b --shapes 4096:3 --mode ddp
guarded fsdp-0.5b-r2 60 $two $step --preset 0.5b --shapes 5120:2 --mode fsdp
mkdir -p "$B/traces"   # one more process of fsdp-0.8b, profiled: the kernel classes (reported, not judged)
guarded fsdp-0.8b-trace-r1 60 $two -m simcluster.runner.llm_step --warmup 3 --steps 2 --profile 1 --trace "$B/traces/fsdp-0.8b" --preset 0.8b --shapes 4096:3 --mode fsdp
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
