#!/bin/bash
# Issue 44, session 38: why the host-bound eager steps issue slower than the hidden-128 host fits say (a diagnostic,
# no registered prediction; README). The post set's 0.8b 2048:1 runs took 121 ms (FSDP2) / 83 ms (DDP) to issue a step
# the fits price at 97 / 64 ms. Three questions, on 2 x H200:
#  1. tokens: does the issue time at the 0.8b preset move with the step's tokens (128:1 ... 2048:2)? (a host blocked on
#     the GPU would) -- fsdp, ddp, and one GPU (single)
#  2. size: 20 layers at hidden 128 / 512 / 1024 / 1792 (0.8b's), 128 tokens: does the host time per layer grow with
#     the hidden size at a GPU-negligible shape? -- fsdp and ddp
#  3. where: one profiled step of fsdp and ddp at 0.8b 2048:1 and of fsdp at hidden 128, 20 layers (Chrome traces,
#     read with studies/tp_host_ops.py)
#   MAIN_COMMIT=<main> bash calibration/h200x2-eager-host-diagnose-2026-11-29/device_run.sh
W=/tmp/host-diagnose
. calibration/device_lib.sh
step="-m simcluster.runner.llm_step --warmup 3 --steps 10"
for mode in fsdp ddp; do
  run $mode-0.8b-tokens 150 $two $step --preset 0.8b --mode $mode --shapes 128:1,512:1,2048:1,2048:2 --profile 0
done
run single-0.8b-tokens 120 python3 $step --preset 0.8b --mode single --shapes 128:1,512:1,2048:1,2048:2 --profile 0
size() { case $1 in 128) echo "--ffn 352 --heads 4";; 512) echo "--ffn 1408 --heads 4";;
  1024) echo "--ffn 2816 --heads 8";; 1792) echo "--ffn 4864 --heads 14";; esac; }
for mode in fsdp ddp; do
  for h in 128 512 1024 1792; do
    run $mode-L20-h$h 120 $two $step --layers 20 --hidden $h $(size $h) --kv-heads 2 --vocab 512 --tied no \
      --mode $mode --shapes 128:1 --profile 0
  done
done
for mode in fsdp ddp; do
  run $mode-0.8b-trace 150 $two $step --preset 0.8b --mode $mode --shapes 2048:1 --profile 1 --trace $B/$mode-0.8b
done
run fsdp-L20-h128-trace 120 $two $step --layers 20 --hidden 128 $(size 128) --kv-heads 2 --vocab 512 --tied no \
  --mode fsdp --shapes 128:1 --profile 1 --trace $B/fsdp-L20-h128
du -sh $B; pack
