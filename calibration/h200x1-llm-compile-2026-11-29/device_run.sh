#!/bin/bash
# Issue 44: torch.compile in eager PyTorch on one H200, with the runner (simcluster collect --tools llm-step
# --llm-compile both: every run eager and with llm-step --compile, torch.compile per decoder layer). REGISTERED before
# the run (README.md; the rule and the read-out: validation/llm_compile.py).
# Bundle `host`: hidden-128 decoders (preset tiny) of 2, 8 and 32 layers, single mode, eager and compiled, shape 128:1,
# 20 timed steps: the host seconds per kernel of each (eager.fit_modes 'single' and 'compile').
# Bundles `check/<preset>`: one judged shape per process, eager then compiled, 10 timed steps; predicted from the host
# bundle's fits, never fitted on. A preset starts only while fewer than 390 s have passed, its two processes limited
# to what is left before 515 s (the call stays under 540 s); status.txt names each one run or skipped; the tgz is
# rewritten after every bundle.
#   bash calibration/h200x1-llm-compile-2026-11-29/device_run.sh NAME   (repository root; $OUT comes back)
# Carried (ignored, not committed): .device-wheels (simpy, which the collect command imports; only it is installed).
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
name=${1:?bundle name}
if ! python3 -c "import simpy" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .device-wheels/simpy-*.whl \
    > $OUT/pip.log 2>&1 || { echo "pip failed"; tail -3 $OUT/pip.log; }
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
b=/tmp/$name; mkdir -p $b/check
nvidia-smi > $b/nvidia-smi.txt 2>&1; lscpu > $b/lscpu.txt 2>&1
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee $b/versions.txt
keep() { tar czf $OUT/$name.tgz -C /tmp $name; cp $b/status.txt $OUT/; }   # after every bundle: a killed call returns the rest
timeout 300 python3 -m simcluster collect --tools llm-step --out $b/host --timeout 90 --llm-presets tiny --llm-layers 2,8,32 \
    --llm-compile both --llm-shapes 128:1 --llm-steps 20
echo "host exit $? at ${SECONDS} s" | tee -a $b/status.txt; keep
for spec in 0.3b:2048:4 1b:2048:2 1.1b:4096:1 3b:4096:1 3.1b:2048:2; do
  preset=${spec%%:*}; shape=${spec#*:}; left=$((515 - SECONDS))
  if (( SECONDS >= 390 )); then echo "check $preset $shape skipped at ${SECONDS} s" | tee -a $b/status.txt; continue; fi
  # two processes (eager, compiled), each at most half of what is left before 515 s, 200 s at most
  python3 -m simcluster collect --tools llm-step --out $b/check/$preset --timeout $(( left / 2 < 200 ? left / 2 : 200 )) \
      --llm-presets $preset --llm-compile both --llm-shapes $shape --llm-steps 10
  echo "check $preset $shape exit $? at ${SECONDS} s" | tee -a $b/status.txt; keep
done
ls -la $OUT
