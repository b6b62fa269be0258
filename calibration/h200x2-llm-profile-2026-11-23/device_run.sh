#!/bin/bash
# Where the host time of an eager 2-GPU step goes (issue 22, session 21): the CUDA runtime calls per step
# (launches, synchronizations, allocations; llm-step's profile) of the development preset 0.5b at 2048:4 and of a
# hidden-128 decoder of 16 layers, in every mode, on one 2 x H200 host over NVLink. Development data only.
#   bash calibration/h200x2-llm-profile-2026-11-23/device_run.sh   (on the device machine, repository root; $OUT comes back)
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
mkdir -p $OUT/b
tiny="--layers 16 --hidden 128 --ffn 352 --heads 4 --kv-heads 2 --vocab 512 --tied no --shapes 512:1"
big="--preset 0.5b --shapes 2048:4"
for arch in big tiny; do
  args=${!arch}
  python3 -m simcluster.runner.llm_step $args --mode single --warmup 3 --steps 8 --profile 2 > $OUT/b/$arch-single.json 2> $OUT/b/$arch-single.stderr.txt
  for mode in ddp fsdp tp; do
    timeout 120 python3 -m torch.distributed.run --standalone --nproc-per-node 2 -m simcluster.runner.llm_step \
        $args --mode $mode --warmup 3 --steps 8 --profile 2 > $OUT/b/$arch-$mode.json 2> $OUT/b/$arch-$mode.stderr.txt
  done
done
tar czf $OUT/profile.tgz -C $OUT b
