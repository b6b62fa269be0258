#!/bin/bash
# What ran on the device machine (the `run` tool) to make this bundle: bash device_run.sh BUNDLE_NAME
# (from the repository root; $OUT is the folder whose files come back).
export PYTHONPATH=$PWD NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 PYTHONUNBUFFERED=1
name=${1:?bundle name}
b=/tmp/$name
nvidia-smi > $OUT/nvidia-smi.txt 2>&1
python3 -c "import torch, yaml, numpy, scipy; print('torch', torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))"
python3 -m simcluster collect --tools gpu-micro,llm-step --out $b --timeout 420 \
    --llm-presets 0.3b,0.5b,1b,3b --llm-shapes 2048:1,1024:4,2048:2,4096:1,2048:4,4096:2 --llm-steps 10
echo "collect exit $?"
cp $OUT/nvidia-smi.txt $b/ 2>/dev/null
tar czf $OUT/$name.tgz -C /tmp $name
ls -la $OUT
