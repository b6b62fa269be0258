#!/bin/bash
# Issue 44, session 27: the host cost of torch.utils.checkpoint per decoder block on one H200, with the runner
# (simcluster collect --tools llm-step). Bundle `host`: hidden-128 decoders (preset tiny) of 2, 8 and 32 layers, single
# mode, without and with --activation-checkpointing (GPU work negligible: the step is the host; fitted per mode by
# simcluster.llm.eager.fit_modes). Bundle `check`: presets 0.3b, 1b, 3.1b at seq 2048, micro-batch 1, 2 and 4, without
# and with checkpointing: predicted from the host bundle's fit, never fitted on (validation/llm_ckpt_host.py).
#   bash calibration/h200x1-llm-ckpt-host-2026-11-28/device_run.sh NAME   (repository root; $OUT comes back)
export PYTHONPATH=$PWD NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 PYTHONUNBUFFERED=1
name=${1:?bundle name}
b=/tmp/$name; mkdir -p $b
nvidia-smi > $b/nvidia-smi.txt 2>&1; lscpu > $b/lscpu.txt 2>&1
python3 -m simcluster collect --tools llm-step --out $b/host --timeout 120 --llm-presets tiny --llm-layers 2,8,32 \
    --llm-checkpointing both --llm-shapes 128:1,512:1 --llm-steps 20
echo "host exit $?"
python3 -m simcluster collect --tools llm-step --out $b/check --timeout 200 --llm-presets 0.3b,1b,3.1b \
    --llm-checkpointing both --llm-shapes 2048:1,2048:2,2048:4 --llm-steps 10
echo "check exit $?"
tar czf $OUT/$name.tgz -C /tmp $name
ls -la $OUT
