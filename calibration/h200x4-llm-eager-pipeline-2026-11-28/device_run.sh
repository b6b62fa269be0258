#!/bin/bash
# Issue 44, session 29: the host cost of torch.distributed.pipelining's schedule actions and the stage buffers it keeps.
#   bash calibration/h200x4-llm-eager-pipeline-2026-11-28/device_run.sh host     # hidden-128 decoders (host/)
#   bash calibration/h200x4-llm-eager-pipeline-2026-11-28/device_run.sh trace    # 2b, 1F1B and interleaved, timelines (runs/)
#   bash calibration/h200x4-llm-eager-pipeline-2026-11-28/device_run.sh runs     # the registered runs (registered.yaml)
# host: the single mode on one GPU at 2, 8 and 32 layers (the host's cost per kernel on this lease) and pp over 4 ranks,
# 1F1B and interleaved (2 chunks per rank), at 8 and 32 layers and 8 and 16 micro-batches: with the GPU work negligible,
# the steps' differences at one kernel count are the schedule's own host cost per action (forward or backward of one
# chunk and micro-batch, with its sends and receives). Also kept: torch's pipelining sources as installed (torch-src/).
# (device machine, repository root; $OUT comes back: <part>.tgz)
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
part=$(echo "$*" | tr ' ' '-')
W=/tmp/eager-pipeline
mkdir -p $W/runs $W/host $W/torch-src
for B in $W/runs $W/host; do
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $B/nvidia-smi.txt 2>&1
  lscpu > $B/lscpu.txt 2>&1
  python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.device_count())' > $B/torch.txt 2>&1
  git log -1 --format='%H %s' > $B/commit.txt 2>&1 || true
done
pack() { tar czf $OUT/$part.tgz -C $W runs host; }
run() {   # folder, name, limit (s), command...
  local B=$W/$1 name=$2 limit=$3; shift 3
  local t0=$SECONDS
  timeout $limit "$@" > $B/$name.json 2> $B/$name.stderr.txt
  local rc=$?
  echo "$name exit $rc $((SECONDS - t0)) s" | tee -a $B/status.txt
  [ $rc -ne 0 ] && tail -5 $B/$name.stderr.txt
  pack
}
four="python3 -m torch.distributed.run --standalone --nproc-per-node 4 -m simcluster.runner.llm_step"
one="python3 -m simcluster.runner.llm_step"
arch="--hidden 128 --ffn 352 --heads 4 --kv-heads 2 --vocab 512 --tied no --shapes 128:1 --warmup 5 --steps 20 --profile 0"
for what in "$@"; do
  case $what in
    host) d=$(python3 -c 'import os, torch.distributed.pipelining as p; print(os.path.dirname(p.__file__))')
          cp $d/stage.py $d/schedules.py $d/_backward.py $W/torch-src/ 2>/dev/null
          for layers in 2 8 32; do run host single-L$layers 60 $one --layers $layers $arch --mode single; done
          for layers in 8 32; do
            for m in 8 16; do
              run host pp-1f1b-L$layers-m$m 90 $four --layers $layers $arch --mode pp --schedule 1f1b --microbatches $m
              run host pp-interleaved-L$layers-m$m 90 $four --layers $layers $arch --mode pp --schedule interleaved \
                --virtual-stages 2 --microbatches $m
            done
          done ;;
    trace) for sched in 1f1b interleaved; do   # the 2b preset of set 2 (meshes2), one profiled step per rank kept as a timeline
             v=$([ $sched = interleaved ] && echo 2 || echo 1)
             run runs pp4-$sched-2b-trace 150 $four --preset 2b --shapes 2048:2 --warmup 3 --steps 8 --profile 1 \
               --trace $W/runs/pp4-$sched-2b --mode pp --schedule $sched --virtual-stages $v --microbatches 8
           done ;;
    runs) for pm in 0.3b:8 1b:4 3.1b:2; do   # the registered set (registered.yaml, --plan pipeline)
            p=${pm%:*}; mb=${pm#*:}; o="--preset $p --shapes 2048:$mb --warmup 3 --steps 8 --profile 0"
            run runs pp4-1f1b-$p 150 $four $o --mode pp --schedule 1f1b --microbatches 8
            run runs pp4-interleaved-$p 150 $four $o --mode pp --schedule interleaved --virtual-stages 2 --microbatches 8
            run runs pp+ddp-$p 150 $four $o --mode pp+ddp --group 2 --schedule 1f1b --microbatches 4
          done ;;
    *) echo "unknown part $what"; exit 2 ;;
  esac
done
cat $W/*/status.txt
