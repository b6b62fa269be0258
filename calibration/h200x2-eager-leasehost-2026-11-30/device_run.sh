#!/bin/bash
# Issue 44, session 41 (leasehost; REGISTERED before this ran: registered.yaml beside this script,
# validation/eager_lease_host.py): is FSDP2 0.5b 5120:2 host-bound on a lease whose host is slower than the product fit's?
# One 2 x H200 lease: FIRST the hidden-128 host-fit runs of calibration/h200x2-llm-host-2026-11-23/device_run.sh (same
# decoder, shapes, warm-up and steps; fsdp at 2 / 8 / 32 layers, ddp at 2 / 32; --profile 0: the original's one profiled
# step came after its timed ones), the lease's own host fit; THEN fsdp 0.5b 5120:2 (3 processes), fsdp 0.5b 5120:4
# (2 processes, same kernels, twice the GPU work) and DDP 1b 4096:3 (1 process), round-robin, every rank's host issue
# per step recorded (runner/host_issue.py). A budget guard stops launching runs after BUDGET_S s.
#   MAIN_COMMIT=<main> bash calibration/h200x2-eager-leasehost-2026-11-30/device_run.sh   (nvidia-h200-x2; ~230 s, at most 300 s)
W=/tmp/eager-leasehost
BUDGET_S=${BUDGET_S:-240}   # device_lib's guarded: no run launched after BUDGET_S s (then at most 60 s more: <= 300 s)
. calibration/device_lib.sh
arch="--hidden 128 --ffn 352 --heads 4 --kv-heads 2 --vocab 512 --tied no --shapes 128:1,512:1 --warmup 5 --steps 20 --profile 0"
for layers in 2 8 32; do guarded fsdp-L$layers 60 $two -m simcluster.runner.llm_step --layers $layers $arch --mode fsdp; done
for layers in 2 32; do guarded ddp-L$layers 60 $two -m simcluster.runner.llm_step --layers $layers $arch --mode ddp; done
step="-m simcluster.runner.llm_step --warmup 3 --steps 10 --profile 0"
guarded fsdp-0.5b-5120x2-r1 60 $two $step --preset 0.5b --shapes 5120:2 --mode fsdp
guarded fsdp-0.5b-5120x4-r1 60 $two $step --preset 0.5b --shapes 5120:4 --mode fsdp
guarded fsdp-0.5b-5120x2-r2 60 $two $step --preset 0.5b --shapes 5120:2 --mode fsdp
guarded ddp-1b-4096x3-r1 60 $two $step --preset 1b --shapes 4096:3 --mode ddp
guarded fsdp-0.5b-5120x2-r3 60 $two $step --preset 0.5b --shapes 5120:2 --mode fsdp
guarded fsdp-0.5b-5120x4-r2 60 $two $step --preset 0.5b --shapes 5120:4 --mode fsdp
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
