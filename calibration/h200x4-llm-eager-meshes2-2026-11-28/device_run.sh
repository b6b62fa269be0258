#!/bin/bash
# Issue 44, the second 4-GPU set: first the host cost of the two-dimensional modes (hidden-128 decoders at 2, 8 and 32
# layers in tp+ddp and tp+fsdp on 4 ranks, and tp on 2 ranks of the same host: host/, what eager.fit_modes fits), then,
# on another call after the predictions are registered (registered.yaml), the presets 0.5b / 2b / 8b at seq 2048 in
# tp+ddp, tp+fsdp, pp over 4 stages (1F1B and interleaved with 2 chunks per rank, 8 micro-batches) and pp+ddp
# (validation/llm_eager_regimes.py --plan meshes2).
#   bash calibration/h200x4-llm-eager-meshes2-2026-11-28/device_run.sh host smoke      # host fits; tiny decoders
#   bash calibration/h200x4-llm-eager-meshes2-2026-11-28/device_run.sh 0.5b 2b 8b      # the registered runs
# (device machine, repository root; $OUT comes back: <part>.tgz)
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
part=$(echo "$*" | tr ' ' '-')
W=/tmp/eager-meshes2
mkdir -p $W/runs $W/host
for B in $W/runs $W/host; do
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $B/nvidia-smi.txt 2>&1
  lscpu > $B/lscpu.txt 2>&1
  python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.device_count())' > $B/torch.txt 2>&1
  git log -1 --format='%H %s' > $B/commit.txt 2>&1 || true
done
common="--warmup 3 --steps 8 --profile 0"
pack() { tar czf $OUT/$part.tgz -C $W runs host; }
run() {   # folder, name, limit (s), command...
  local B=$W/$1 name=$2 limit=$3; shift 3
  local t0=$SECONDS
  timeout $limit "$@" > $B/$name.json 2> $B/$name.stderr.txt
  local rc=$?
  echo "$name exit $rc $((SECONDS - t0)) s" | tee -a $B/status.txt
  grep -h "llm-step:" $B/$name.stderr.txt | tail -2
  [ $rc -ne 0 ] && tail -5 $B/$name.stderr.txt
  pack
}
four="python3 -m torch.distributed.run --standalone --nproc-per-node 4 -m simcluster.runner.llm_step"
two="env CUDA_VISIBLE_DEVICES=0,1 python3 -m torch.distributed.run --standalone --nproc-per-node 2 -m simcluster.runner.llm_step"
layouts() {   # name suffix, then the shape options
  local tag=$1; shift
  run runs tp+ddp-$tag 150 $four "$@" --mode tp+ddp --group 2
  run runs tp+fsdp-$tag 150 $four "$@" --mode tp+fsdp --group 2
  run runs pp4-1f1b-$tag 150 $four "$@" --mode pp --schedule 1f1b --microbatches 8
  run runs pp4-interleaved-$tag 150 $four "$@" --mode pp --schedule interleaved --virtual-stages 2 --microbatches 8
  run runs pp+ddp-$tag 150 $four "$@" --mode pp+ddp --group 2 --schedule 1f1b --microbatches 4
}
arch="--hidden 128 --ffn 352 --heads 4 --kv-heads 2 --vocab 512 --tied no --shapes 128:1,512:1 --warmup 5 --steps 20 --profile 0"
for what in "$@"; do
  case $what in
    host) for layers in 2 8 32; do
            run host tp+ddp-L$layers 90 $four --layers $layers $arch --mode tp+ddp --group 2
            run host tp+fsdp-L$layers 90 $four --layers $layers $arch --mode tp+fsdp --group 2
            run host tp-L$layers 90 $two --layers $layers $arch --mode tp
          done ;;
    smoke) run runs pp4-interleaved-smoke 90 $four --preset tiny --layers 8 --shapes 128:2 --warmup 2 --steps 3 --profile 0 \
             --mode pp --schedule interleaved --virtual-stages 2 --microbatches 8 ;;
    0.5b) layouts 0.5b --preset 0.5b --shapes 2048:4 $common ;;
    2b) layouts 2b --preset 2b --shapes 2048:2 $common ;;
    8b) layouts 8b --preset 8b --shapes 2048:1 $common ;;
    *) echo "unknown part $what"; exit 2 ;;
  esac
done
cat $W/*/status.txt
