#!/bin/bash
# Issue 44: eager PyTorch regimes on one 2-GPU host, collected with the repository's runner (simcluster.runner.llm_step):
# activation checkpointing on one GPU and torch.distributed.pipelining (2 stages, GPipe and 1F1B, 4 micro-batches) on
# two, for the presets 0.3b / 1b / 3.1b at seq 2048 (validation/llm_eager_regimes.py: PLAN; predictions registered in
# registered.yaml before this ran). Also the lease's own hidden-128 single-mode host runs (host-L*.json: diagnostics,
# not used by the registered predictions) and a tiny pipeline smoke run.
#   bash calibration/llm-eager-regimes-2026-11-28/device_run.sh   (device machine, repository root; $OUT comes back)
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
B=/tmp/eager-regimes/runs
mkdir -p $B
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $B/nvidia-smi.txt 2>&1
nvidia-smi topo -m >> $B/nvidia-smi.txt 2>&1
lscpu > $B/lscpu.txt 2>&1
python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.device_count())' > $B/torch.txt 2>&1
git log -1 --format='%H %s' > $B/commit.txt 2>&1 || true
common="--warmup 3 --steps 10 --profile 1"
pack() { tar czf $OUT/runs.tgz -C /tmp/eager-regimes runs; }
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
one="env CUDA_VISIBLE_DEVICES=0 python3 -m simcluster.runner.llm_step"
two="python3 -m torch.distributed.run --standalone --nproc-per-node 2 -m simcluster.runner.llm_step"
run smoke-pp 90 $two --preset tiny --mode pp --schedule 1f1b --microbatches 4 --shapes 128:2 --warmup 2 --steps 3 --profile 0
for spec in "0.3b 2048:4" "1b 2048:2" "3.1b 2048:1"; do
  set -- $spec
  run single-$1 120 $one --preset $1 --shapes $2 $common
  run ckpt-$1 120 $one --preset $1 --shapes $2 $common --activation-checkpointing
  run pp-gpipe-$1 150 $two --preset $1 --shapes $2 $common --mode pp --schedule gpipe --microbatches 4
  run pp-1f1b-$1 150 $two --preset $1 --shapes $2 $common --mode pp --schedule 1f1b --microbatches 4
done
arch="--hidden 128 --ffn 352 --heads 4 --kv-heads 2 --vocab 512 --tied no --shapes 128:1,512:1 --warmup 5 --steps 20 --profile 0"
for layers in 2 8 32; do
  run host-L$layers 60 $one --layers $layers $arch
done
cat $B/status.txt
