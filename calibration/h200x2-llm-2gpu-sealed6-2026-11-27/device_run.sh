#!/bin/bash
# Session 25's sealed 2-GPU set, call B (registered in docs/models/llm-findings.md before collection): llm-step DDP on
# presets 1b and 1.1b, FSDP2 and TP on 2b and 3b, shapes 2048:2 and 4096:1, 6 timed steps, NVLink. On the device
# machine, repository root; $OUT comes back. The bundle's name says the lease's GPU (h100x2 or h200x2).
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
kind=h100x2; nvidia-smi -L | grep -q H200 && kind=h200x2
W=/tmp/w; mkdir -p $W; B=$kind-llm-2gpu-sealed6-2026-11-27
nvidia-smi -L > $W/smi-L.txt; lscpu > $W/lscpu.txt
t0=$(date +%s)
python -m simcluster collect --out $W/$B-ddp --tools llm-step --gpus 2 --llm-presets 1b,1.1b \
    --llm-shapes 2048:2,4096:1 --llm-steps 6 --llm-modes ddp > $W/nv-ddp.log 2>&1
tail -1 $W/nv-ddp.log; echo "ddp $(( $(date +%s) - t0 )) s"
python -m simcluster collect --out $W/$B --tools llm-step --gpus 2 --llm-presets 2b,3b \
    --llm-shapes 2048:2,4096:1 --llm-steps 6 --llm-modes fsdp,tp > $W/nv.log 2>&1
tail -1 $W/nv.log; echo "fsdp,tp $(( $(date +%s) - t0 )) s"
for d in $B-ddp $B; do cp $W/smi-L.txt $W/lscpu.txt $W/$d/; done
cp $W/nv-ddp.log $W/$B-ddp/nv.log; cp $W/nv.log $W/$B/
tar czf $OUT/b.tgz -C $W $B-ddp $B
