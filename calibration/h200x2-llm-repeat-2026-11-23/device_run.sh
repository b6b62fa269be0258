#!/bin/bash
# Launch-to-launch noise of eager 2-GPU steps (issue 22, session 21): the development preset 0.5b at 2048:4 under
# tp (host-bound) and ddp (GPU-bound), and a hidden-128 decoder of 16 layers under tp, each launched three times in a
# row on one 2 x H200 host over NVLink (a fresh torchrun each time). Then (after the timed runs) builds nccl-tests for the next call.
#   bash calibration/h200x2-llm-repeat-2026-11-23/device_run.sh   (on the device machine, repository root; $OUT comes back)
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
mkdir -p $OUT/b
tiny="--layers 16 --hidden 128 --ffn 352 --heads 4 --kv-heads 2 --vocab 512 --tied no --shapes 512:1"
big="--preset 0.5b --shapes 2048:4"
for rep in 1 2 3; do
  for cfg in big:tp big:ddp tiny:tp; do
    arch=${cfg%%:*}; mode=${cfg##*:}; args=${!arch}
    timeout 120 python3 -m torch.distributed.run --standalone --nproc-per-node 2 -m simcluster.runner.llm_step \
        $args --mode $mode --warmup 3 --steps 10 --profile 0 > $OUT/b/$arch-$mode-r$rep.json 2> $OUT/b/$arch-$mode-r$rep.stderr.txt
  done
done
(cd .device/nccl-tests && make -j16 MPI=0 NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" > $OUT/b/nccl-tests-build.log 2>&1; echo "build rc $?" >> $OUT/b/nccl-tests-build.log)
tar czf $OUT/repeat.tgz -C $OUT b
tar czf $OUT/nccl-tests-build.tgz -C .device/nccl-tests build
