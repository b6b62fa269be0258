#!/bin/bash
# Issue 44, session 38: the host-bound eager steps' run-to-run noise (README). The post set's host-bound shape (0.8b at
# 2048:1; the host issues 85-94% of each step) in four modes, each in four separate processes, round-robin over the modes
# so that a drift of the lease spreads over all of them: one GPU (single), DDP, FSDP2, PP 2 1F1B x 4 micro-batches. Then
# the hidden-128 host-fit decoders (calibration/h200x2-llm-host-2026-11-23's shapes, 8 and 32 layers) in those modes on
# this lease: the lease's own host fit. Not a registered set: these shapes were measured before (repeats), nothing is
# predicted here; studies/eager_noise_floor.py reads it.
#   MAIN_COMMIT=<main> bash calibration/h200x2-eager-hostbound-noise-2026-11-29/device_run.sh   (2 x H200)
W=/tmp/hostbound-noise
. calibration/device_lib.sh
step="-m simcluster.runner.llm_step --warmup 3 --steps 10 --profile 0"
for r in 1 2 3 4; do
  run single-0.8b-r$r 90 python3 $step --preset 0.8b --shapes 2048:1 --mode single
  run ddp-0.8b-r$r 90 $two $step --preset 0.8b --shapes 2048:1 --mode ddp
  run fsdp-0.8b-r$r 90 $two $step --preset 0.8b --shapes 2048:1 --mode fsdp
  run pp-1f1b-0.8b-r$r 90 $two $step --preset 0.8b --shapes 2048:1 --mode pp --schedule 1f1b --microbatches 4
done
arch="--hidden 128 --ffn 352 --heads 4 --kv-heads 2 --vocab 512 --tied no --shapes 128:1,512:1 --warmup 5 --steps 20 --profile 0"
mkdir -p $B/host
for layers in 2 8 32; do
  run host/single-L$layers 90 python3 -m simcluster.runner.llm_step --layers $layers $arch --mode single
  for mode in ddp fsdp; do
    run host/$mode-L$layers 90 $two -m simcluster.runner.llm_step --layers $layers $arch --mode $mode
  done
done
cat $B/status.txt; pack
