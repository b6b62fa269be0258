#!/bin/bash
# Issue 44: the 4-GPU eager PyTorch layouts on one 4 x H200 host, collected with the repository's runner
# (simcluster.runner.llm_step): tp+ddp and tp+fsdp (DTensor TP inside pairs, DDP / FSDP2 across them), pp over 4 stages
# (1F1B and GPipe, 8 micro-batches) and pp+ddp (2 stages, 1F1B, 4 micro-batches, DDP across the pairs), for the presets
# 0.3b / 1b / 3.1b at seq 2048 (validation/llm_eager_regimes.py --plan meshes; predictions registered in
# registered.yaml before this ran).
#   bash calibration/h200x4-llm-eager-meshes-2026-11-28/device_run.sh smoke          # tiny decoders through every layout
#   bash calibration/h200x4-llm-eager-meshes-2026-11-28/device_run.sh 0.3b 1b 3.1b   # the registered runs
# (device machine, repository root; $OUT comes back: runs-<part>.tgz)
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
B=/tmp/eager-meshes/runs
mkdir -p $B
part=$(echo "$*" | tr ' ' '-')
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $B/nvidia-smi.txt 2>&1
nvidia-smi topo -m >> $B/nvidia-smi.txt 2>&1
lscpu > $B/lscpu.txt 2>&1
python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.device_count())' > $B/torch.txt 2>&1
git log -1 --format='%H %s' > $B/commit.txt 2>&1 || true
common="--warmup 3 --steps 8 --profile 0"
pack() { tar czf $OUT/runs-$part.tgz -C /tmp/eager-meshes runs; }
run() {   # name, limit (s), command...
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout $limit "$@" > $B/$name.json 2> $B/$name.stderr.txt
  local rc=$?
  echo "$name exit $rc $((SECONDS - t0)) s" | tee -a $B/status.txt
  grep -h "llm-step:" $B/$name.stderr.txt | tail -2
  [ $rc -ne 0 ] && tail -5 $B/$name.stderr.txt
  pack
}
four="python3 -m torch.distributed.run --standalone --nproc-per-node 4 -m simcluster.runner.llm_step"
layouts() {   # preset-or-args name-suffix, then the shape options
  local tag=$1; shift
  run tp+ddp-$tag 150 $four "$@" --mode tp+ddp --group 2
  run tp+fsdp-$tag 150 $four "$@" --mode tp+fsdp --group 2
  run pp4-1f1b-$tag 150 $four "$@" --mode pp --schedule 1f1b --microbatches 8
  run pp4-gpipe-$tag 150 $four "$@" --mode pp --schedule gpipe --microbatches 8
  run pp+ddp-$tag 150 $four "$@" --mode pp+ddp --group 2 --schedule 1f1b --microbatches 4
}
for what in "$@"; do
  case $what in
    smoke) layouts smoke --preset tiny --layers 4 --shapes 128:2 --warmup 2 --steps 3 --profile 0 ;;
    0.3b) layouts 0.3b --preset 0.3b --shapes 2048:4 $common ;;
    1b) layouts 1b --preset 1b --shapes 2048:2 $common ;;
    3.1b) layouts 3.1b --preset 3.1b --shapes 2048:1 $common ;;
    *) echo "unknown part $what"; exit 2 ;;
  esac
done
cat $B/status.txt
