#!/bin/bash
# fp8lease61b (issue 44, session 61; development, after fp8lease61's Q2 FAILed): the GPT-3 TP 4 layer's 12 fp8 GEMM
# shapes, four Llama-405B layer shapes of the card's fit trace and the 8192 square, timed by gpu-micro's gemm-shapes
# section with records long enough for the SM clock to be sampled (--min-batch 0.05: a record >= 0.5 s), once after
# 5 s of preheat (cool) and once after 90 s (hot): does the power-capped fp8 rate follow the shape or the GPU's
# thermal history (the card's trace ran its hidden-16384 shapes ~40-80 s into an 81 s sweep at 1,230-1,365 MHz; the
# layer study's GEMMs ran 10-20 s in, at 1,425 MHz)? ~150 s.
#   MAIN_COMMIT=<main> bash calibration/h200x1-fp8lease61-2026-12-02/device_run_b.sh   (nvidia-h200, one GPU)
W=/tmp/fp8lease61b
BUDGET_S=${BUDGET_S:-200}
. calibration/device_lib.sh
export CUDA_VISIBLE_DEVICES=0
S=4096:9216:12288:gpt3-qkv,4096:12288:3072:gpt3-attn_out,4096:12288:12288:gpt3-up,4096:12288:12288:gpt3-down
S=$S,4096:12288:9216:gpt3-qkv.dgrad,12288:9216:4096:gpt3-qkv.wgrad,4096:3072:12288:gpt3-attn_out.dgrad
S=$S,3072:12288:4096:gpt3-attn_out.wgrad,4096:12288:12288:gpt3-up.dgrad,12288:12288:4096:gpt3-up.wgrad
S=$S,4096:12288:12288:gpt3-down.dgrad,12288:12288:4096:gpt3-down.wgrad,4096:106496:16384:llama405-fwd-up
S=$S,4096:16384:106496:llama405-dgrad-up,4096:16384:16384:llama405-fwd-out,16384:16384:4096:llama405-wgrad-out
S=$S,8192:8192:8192:square
guarded shapes-cool 150 python3 -m simcluster.runner.gpu_micro --sections gemm-shapes --gemm-shapes "$S" --preheat 5 --min-batch 0.05
guarded shapes-hot 240 python3 -m simcluster.runner.gpu_micro --sections gemm-shapes --gemm-shapes "$S" --preheat 90 --min-batch 0.05
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
