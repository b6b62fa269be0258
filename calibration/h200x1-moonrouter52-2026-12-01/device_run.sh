#!/bin/bash
# Issue 44, session 52 (moonrouter52; REGISTERED before this ran: registered.yaml beside this script, validation/moonrouter52.py):
# Megatron-Core 24bad8e6's unfused TopKRouter (megatron/core of NVIDIA/Megatron-LM 24bad8e6, carried as the ignored
# .device/mcore-24bad8e6.tar.gz, sha256 in registered.yaml; no Transformer Engine) on Moonlight 16B's MoE layer
# (moonlight-ep8 at 2,048 tokens) in the Megatron-Bridge recipe's router configuration and two others, beside moeker50's
# plain-torch chain, forward and forward + backward: kernels, events and host clocks, in one process on ONE GPU
# (studies/moonrouter52_device.py -> runs/moonrouter52.json); then the CPU dry run.
# Expected ~40-80 s in all: the unpack ~2 s; torch + megatron-core import, CUDA / CUPTI start and torch.compile of
# Megatron's _apply_expert_bias ~20-50 s; 4 implementations x 2 passes x (10 events samples of 5 calls, 3 profiled runs
# of 5 calls, 10 host samples) at 0.1-2 ms a call ~10 s; the CPU dry run ~15 s. Worst case ~190 s: device_lib's records
# ~5 s, the unpack cut at 30 s, the measurement cut at 150 s; the CPU dry run (limit 40 s) is not launched after
# BUDGET_S = 90 s, so it adds at most 40 s to a measurement that ended before 90 s.
#   MAIN_COMMIT=<main> bash calibration/h200x1-moonrouter52-2026-12-01/device_run.sh   (nvidia-h200, carry .device/mcore-24bad8e6.tar.gz)
W=/tmp/moonrouter52
BUDGET_S=${BUDGET_S:-90}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
sha256sum .device/mcore-24bad8e6.tar.gz > "$B/mcore-tarball.txt" 2>&1
mkdir -p /tmp/mc24 && timeout 30 tar xzf .device/mcore-24bad8e6.tar.gz -C /tmp/mc24; echo "unpack rc $?" | tee -a "$B/status.txt"
export PYTHONPATH=/tmp/mc24:$PWD CUDA_VISIBLE_DEVICES=0
guarded moonrouter52 150 python3 studies/moonrouter52_device.py --device cuda --repeats 10 --prof-repeats 3 --warmup 3
guarded moonrouter52-cpu-quick 40 python3 studies/moonrouter52_device.py --device cpu --quick --repeats 2 --prof-repeats 1 --warmup 1
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
