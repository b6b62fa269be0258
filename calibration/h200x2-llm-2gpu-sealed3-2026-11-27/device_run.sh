#!/bin/bash
# Session 22's sealed 2-GPU set (registered in docs/models/llm-findings.md before collection) and, on the same lease,
# overlap_micro at GEMM 8192 and 4096 (the next bundle). On the device machine, repository root; $OUT comes back.
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
W=/tmp/w; mkdir -p $W
nvidia-smi -L > $W/smi-L.txt; lscpu > $W/lscpu.txt
python -m simcluster collect --out $W/h200x2-llm-2gpu-sealed3-2026-11-27 --tools llm-step --gpus 2 --llm-presets 1.1b,3.1b \
    --llm-shapes 1024:4,3072:2 --llm-steps 6 --llm-modes ddp,fsdp,tp > $W/nv.log 2>&1
tail -3 $W/nv.log
cp $W/smi-L.txt $W/lscpu.txt $W/nv.log $W/h200x2-llm-2gpu-sealed3-2026-11-27/ 2>/dev/null
O=$W/h200x2-overlap-sealed3-2026-11-27; mkdir -p $O
for cfg in 8192:200 4096:1000; do
  g=${cfg%%:*}; n=${cfg##*:}
  timeout 100 python3 -m torch.distributed.run --standalone --nproc-per-node 2 -m simcluster.runner.overlap_micro \
      --gemm $g --gemms $n > $O/overlap-g$g.json 2> $O/overlap-g$g.stderr.txt
done
cp $W/smi-L.txt $O/
tar czf $OUT/sealed3.tgz -C $W h200x2-llm-2gpu-sealed3-2026-11-27 h200x2-overlap-sealed3-2026-11-27
ls -la $OUT
