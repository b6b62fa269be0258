#!/bin/bash
# Issue 44, session 30: a held-out pipeline set at micro-batch counts not run before, registered before its runs
# (registered.yaml: python validation/llm_eager_regimes.py --plan pipeline2 --register ...).
#   bash calibration/h200x4-llm-eager-pipeline2-2026-11-28/device_run.sh runs
# runs: pp4 1F1B, pp4 interleaved (2 chunks per rank) and pp 2 x DDP 2 at 0.3b (micro-batch 4) and 3.1b (micro-batch 1)
# with 16 micro-batches, and 0.5b (micro-batch 4) with 4, seq 2048 (9 runs, each about 25 s).
# (device machine, repository root; $OUT comes back: runs.tgz)
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
part=$(echo "$*" | tr ' ' '-')
W=/tmp/eager-pipeline2
mkdir -p $W/runs
B=$W/runs
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $B/nvidia-smi.txt 2>&1
lscpu > $B/lscpu.txt 2>&1
python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.device_count())' > $B/torch.txt 2>&1
git log -1 --format='%H %s' > $B/commit.txt 2>&1 || true
pack() { tar czf $OUT/$part.tgz -C $W runs; }
run() {   # name, limit (s), command...
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout $limit "$@" > $B/$name.json 2> $B/$name.stderr.txt
  local rc=$?
  echo "$name exit $rc $((SECONDS - t0)) s" | tee -a $B/status.txt
  [ $rc -ne 0 ] && tail -5 $B/$name.stderr.txt
  pack
}
four="python3 -m torch.distributed.run --standalone --nproc-per-node 4 -m simcluster.runner.llm_step"
for what in "$@"; do
  case $what in
    runs) for pmm in 0.3b:4:16 3.1b:1:16 0.5b:4:4; do   # preset:micro-batch:micro-batches (heldout/eager.py SIZES4)
            p=${pmm%%:*}; rest=${pmm#*:}; mb=${rest%:*}; m=${rest#*:}
            o="--preset $p --shapes 2048:$mb --warmup 3 --steps 8 --profile 0"
            run pp4-1f1b-$p-m$m 150 $four $o --mode pp --schedule 1f1b --microbatches $m
            run pp4-interleaved-$p-m$m 150 $four $o --mode pp --schedule interleaved --virtual-stages 2 --microbatches $m
            run pp+ddp-$p-m$m 150 $four $o --mode pp+ddp --group 2 --schedule 1f1b --microbatches $m
          done ;;
    *) echo "unknown part $what"; exit 2 ;;
  esac
done
cat $W/*/status.txt
