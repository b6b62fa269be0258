#!/bin/bash
# What ran on the device machine (the `run` tool) to make this bundle: bash device_run.sh BUNDLE_NAME
# (from the repository root; $OUT is the folder whose files come back).
export PYTHONPATH=$PWD NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 PYTHONUNBUFFERED=1
name=${1:?bundle name}
b=/tmp/$name
nvidia-smi > $OUT/nvidia-smi.txt 2>&1
python3 -c "import torch, yaml, numpy, scipy; print('torch', torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0), 'cudnn', torch.backends.cudnn.version())"
python3 -m simcluster collect --tools gpu-micro --gpu-micro-sections attention-backends --out $b --timeout 540
echo "collect exit $?"
cp $OUT/nvidia-smi.txt $b/ 2>/dev/null
tar czf $OUT/$name.tgz -C /tmp $name
ls -la $OUT
