#!/bin/bash
# Issue 44, session 39 fsdpmem (REGISTERED before this ran: registered.yaml beside this script, validation/eager_fsdp_mem.py):
# the runner's FSDP2 peak memory at long sequences after the bf16-block fix, two FSDP2 rows and one DDP control, one
# process each on one 2 x H200 lease, micro-batch 1, torch's default SDPA. A budget guard stops launching runs after BUDGET_S s.
#   MAIN_COMMIT=<main> bash calibration/h200x2-eager-fsdpmem-2026-11-29/device_run.sh   (nvidia-h200-x2; about 150 s)
W=/tmp/eager-fsdpmem
BUDGET_S=${BUDGET_S:-170}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
step="-m simcluster.runner.llm_step --warmup 3 --steps 5 --profile 0"
guarded fsdp-1.1b-r1 90 $two $step --preset 1.1b --shapes 36864:1 --mode fsdp
guarded fsdp-3b-r1 90 $two $step --preset 3b --shapes 18432:1 --mode fsdp
guarded ddp-1.1b-r1 90 $two $step --preset 1.1b --shapes 30720:1 --mode ddp
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
