#!/bin/bash
# Session 25's sealed 2-GPU set, call A (registered in docs/models/llm-findings.md before collection): the lease's
# comm_overlap (overlap-micro, as calibration/h200x2-overlap-2026-11-23) and its own host-cost folder (hidden-128
# decoders of 2, 8 and 32 layers in each mode, as calibration/h200x2-llm-host-2026-11-23). On the device machine,
# repository root; $OUT comes back. The folder's name says the lease's GPU (h100x2 or h200x2).
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
kind=h100x2; nvidia-smi -L | grep -q H200 && kind=h200x2
H=/tmp/w/$kind-llm-host-2026-11-27; mkdir -p $H
nvidia-smi -L > $H/smi-L.txt; lscpu > $H/lscpu.txt
t0=$(date +%s)
for cfg in 8192:200 4096:1000; do
  g=${cfg%%:*}; n=${cfg##*:}
  timeout 150 python3 -m torch.distributed.run --standalone --nproc-per-node 2 -m simcluster.runner.overlap_micro \
      --gemm $g --gemms $n > $H/overlap-g$g.json 2> $H/overlap-g$g.stderr.txt
  echo "overlap gemm $g rc $? $(( $(date +%s) - t0 )) s"
done
arch="--hidden 128 --ffn 352 --heads 4 --kv-heads 2 --vocab 512 --tied no --shapes 128:1,512:1 --warmup 5 --steps 20"
for layers in 2 8 32; do
  python3 -m simcluster.runner.llm_step --layers $layers $arch --mode single > $H/single-L$layers.json 2> $H/single-L$layers.stderr.txt
  for mode in ddp fsdp tp; do
    timeout 120 python3 -m torch.distributed.run --standalone --nproc-per-node 2 -m simcluster.runner.llm_step \
        --layers $layers $arch --mode $mode > $H/$mode-L$layers.json 2> $H/$mode-L$layers.stderr.txt
  done
  echo "host L$layers $(( $(date +%s) - t0 )) s"
done
tar czf $OUT/a.tgz -C /tmp/w $(basename $H)
