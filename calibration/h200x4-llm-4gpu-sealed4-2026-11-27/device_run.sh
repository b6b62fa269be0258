#!/bin/bash
# Session 24's sealed 4-GPU set (registered in docs/models/llm-findings.md before collection). On the device machine,
# repository root; $OUT comes back. The bundle's name says the lease's GPU (h200x4 or h100x4).
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
kind=h200x4; nvidia-smi -L | grep -q H100 && kind=h100x4
W=/tmp/w; mkdir -p $W; B=$kind-llm-4gpu-sealed4-2026-11-27
nvidia-smi -L > $W/smi-L.txt; lscpu > $W/lscpu.txt
python -m simcluster collect --out $W/$B-ddp --tools llm-step --gpus 4 --llm-presets 1b,3b \
    --llm-shapes 2048:2,4096:1 --llm-steps 6 --llm-modes ddp > $W/nv-ddp.log 2>&1
tail -2 $W/nv-ddp.log
python -m simcluster collect --out $W/$B --tools llm-step --gpus 4 --llm-presets 3b,8b \
    --llm-shapes 2048:2,4096:1 --llm-steps 6 --llm-modes fsdp,tp > $W/nv.log 2>&1
tail -2 $W/nv.log
for d in $B-ddp $B; do cp $W/smi-L.txt $W/lscpu.txt $W/$d/; done
cp $W/nv-ddp.log $W/$B-ddp/nv.log; cp $W/nv.log $W/$B/
tar czf $OUT/sealed4.tgz -C $W $B-ddp $B
ls -la $OUT
