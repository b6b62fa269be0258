#!/bin/bash
# Session 24's sealed 4-GPU socket TP set (registered in docs/models/llm-findings.md before collection). On the device
# machine, repository root; $OUT comes back. The bundle's name says the lease's GPU (h200x4 or h100x4).
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1
kind=h200x4; nvidia-smi -L | grep -q H100 && kind=h100x4
W=/tmp/w; mkdir -p $W; B=$kind-llm-4gpu-sealed5-socket-tp-2026-11-27
nvidia-smi -L > $W/smi-L.txt; lscpu > $W/lscpu.txt
python -m simcluster collect --out $W/$B --tools llm-step --gpus 4 --llm-presets 1b,3b \
    --llm-shapes 2048:2 --llm-steps 6 --llm-modes tp > $W/sock.log 2>&1
tail -2 $W/sock.log
cp $W/smi-L.txt $W/lscpu.txt $W/sock.log $W/$B/
tar czf $OUT/sealed5.tgz -C $W $B
ls -la $OUT
