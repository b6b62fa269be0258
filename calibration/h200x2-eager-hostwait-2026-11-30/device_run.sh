#!/bin/bash
# Issue 44, session 42 (hostwait; REGISTERED before this ran: registered.yaml beside this script,
# validation/eager_hostwait.py): which host time leaves out the blocking waits? One 2 x H200 lease: each row once under
# CUDA's default scheduling (--sched auto) and once with the primary context set to blocking sync (--sched blocking),
# the same decoder, 3 warm-up, 10 timed and 1 profiled step; every rank's issue wall, issuing threads' CPU time and
# process CPU per timed step recorded (runner/host_issue.py, host_cpu.py), the profiled step's host window less its waits
# (profile.host). The runs most needed come first; a budget guard launches no run after BUDGET_S s.
#   MAIN_COMMIT=<main> bash calibration/h200x2-eager-hostwait-2026-11-30/device_run.sh   (nvidia-h200-x2; ~160 s, at most 230 s)
W=/tmp/eager-hostwait
BUDGET_S=${BUDGET_S:-170}   # device_lib's guarded: no run launched after BUDGET_S s (then at most 60 s more: <= 230 s)
. calibration/device_lib.sh
step="-m simcluster.runner.llm_step --warmup 3 --steps 10 --profile 1"
tiny="--layers 16 --hidden 128 --ffn 352 --heads 4 --kv-heads 2 --vocab 512 --tied no --shapes 128:1"
for s in auto blocking; do guarded fsdp-0.5b-5120x4-$s 60 $two $step --preset 0.5b --shapes 5120:4 --mode fsdp --sched $s; done
for s in auto blocking; do guarded fsdp-tiny-L16-$s 60 $two $step $tiny --mode fsdp --sched $s; done
for s in auto blocking; do guarded single-0.5b-2048x8-$s 60 python3 $step --preset 0.5b --shapes 2048:8 --sched $s; done
for s in auto blocking; do guarded single-tiny-L16-$s 60 python3 $step $tiny --sched $s; done
for s in auto blocking; do guarded ddp-1b-4096x3-$s 60 $two $step --preset 1b --shapes 4096:3 --mode ddp --sched $s; done
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
