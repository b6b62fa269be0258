#!/bin/bash
# Issue 44, session 36: does a lease's own host fit carry host-bound TP and FSDP2 at two ranks? One call, one lease:
#   1. the host runs: hidden-128 decoders at 2, 8 and 32 layers in ddp, fsdp and tp over 2 ranks (host/), as
#      calibration/h200x2-llm-host-2026-11-23 made them on another lease;
#   2. the registration: validation/llm_eager_regimes.py --plan twohost --host host/ (registered.yaml, written before any
#      step runs; pydantic and simpy from carried wheels, .device-wheels/): the model's prediction (the other lease's
#      fits) and the variant with this lease's own fits (what a user's framework.host folder gives);
#   3. the steps: ddp, fsdp, tp at 0.8b x 5, 1b x 3, 3.1b x 5, seq 2048 (runs/).
#   REGISTER_COMMIT=<main's commit> bash calibration/h200x2-llm-eager-twohost-2026-11-29/device_run.sh
# (2 x H200, repository root, .device-wheels carried; $OUT comes back: twohost.tgz)
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
W=/tmp/eager-twohost
mkdir -p $W/runs $W/host
for B in $W/runs $W/host; do
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $B/nvidia-smi.txt 2>&1
  lscpu > $B/lscpu.txt 2>&1
  python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.device_count())' > $B/torch.txt 2>&1
  echo "${REGISTER_COMMIT:-unknown}" > $B/commit.txt
done
pack() { tar czf $OUT/twohost.tgz -C $W runs host registered.yaml order.txt 2>/dev/null; }
run() {   # folder, name, limit (s), command...
  local B=$W/$1 name=$2 limit=$3; shift 3
  local t0=$SECONDS
  timeout $limit "$@" > $B/$name.json 2> $B/$name.stderr.txt
  local rc=$?
  echo "$name exit $rc $((SECONDS - t0)) s" | tee -a $B/status.txt
  [ $rc -ne 0 ] && tail -5 $B/$name.stderr.txt
  pack
}
two="python3 -m torch.distributed.run --standalone --nproc-per-node 2 -m simcluster.runner.llm_step"
arch="--hidden 128 --ffn 352 --heads 4 --kv-heads 2 --vocab 512 --tied no --shapes 128:1,512:1 --warmup 5 --steps 20 --profile 0"
python3 -m pip install -q --no-index --find-links .device-wheels --target /tmp/scdeps annotated-types pydantic \
  pydantic_core simpy typing-inspection typing_extensions > $W/pip.txt 2>&1 || { cat $W/pip.txt; exit 3; }
echo "host runs start $(date -u +%FT%TZ)" > $W/order.txt
for layers in 2 8 32; do
  for mode in ddp fsdp tp; do
    run host $mode-L$layers 90 $two --layers $layers $arch --mode $mode
  done
done
echo "registration $(date -u +%FT%TZ)" >> $W/order.txt
PYTHONPATH=/tmp/scdeps:. python3 validation/llm_eager_regimes.py --plan twohost --host $W/host --register $W/registered.yaml \
  >> $W/order.txt 2>&1 || { cat $W/order.txt; pack; exit 4; }
echo "step runs start $(date -u +%FT%TZ)" >> $W/order.txt
for pm in 0.8b:5 1b:3 3.1b:5; do   # heldout/eager.py SIZES6
  p=${pm%:*}; mb=${pm#*:}; o="--preset $p --shapes 2048:$mb --warmup 3 --steps 10 --profile 0"
  for mode in ddp fsdp tp; do
    run runs $mode-$p 120 $two $o --mode $mode
  done
done
echo "end $(date -u +%FT%TZ)" >> $W/order.txt
pack
cat $W/order.txt $W/*/status.txt
