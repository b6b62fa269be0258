#!/bin/bash
# Issue 44, session 30 (a second lease of session 29's tpdp set, the same script): TP x DP (tp+ddp, tp+fsdp over pairs of ranks) with its host calibration, the registration and the
# steps in ONE call, so on one lease (the earlier sets showed the lease's host speed moving host-bound 2-D steps by
# +24..+69%). In order:
#   1. the host runs: hidden-128 decoders at 2, 8 and 32 layers in tp (2 ranks), tp+ddp and tp+fsdp (4 ranks) (host/);
#   2. the registration: validation/llm_eager_regimes.py --plan tpdp --host host/ (registered.yaml, written before any
#      step runs; pydantic and simpy from carried wheels, .device-wheels/, numpy, scipy, networkx and yaml the
#      machine's own), the model's prediction and the own-fit variant;
#   3. the steps: tp+ddp and tp+fsdp at 0.3b x 8, 1b x 4, 3.1b x 2, seq 2048 (runs/).
#   REGISTER_COMMIT=$(git rev-parse HEAD) bash calibration/h200x4-llm-eager-tpdp2-2026-11-28/device_run.sh
# (device machine, repository root, .device-wheels carried; $OUT comes back: tpdp.tgz)
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
W=/tmp/eager-tpdp2
mkdir -p $W/runs $W/host
for B in $W/runs $W/host; do
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $B/nvidia-smi.txt 2>&1
  lscpu > $B/lscpu.txt 2>&1
  python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.device_count())' > $B/torch.txt 2>&1
  echo "${REGISTER_COMMIT:-unknown}" > $B/commit.txt
done
pack() { tar czf $OUT/tpdp.tgz -C $W runs host registered.yaml order.txt 2>/dev/null; }
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
two="env CUDA_VISIBLE_DEVICES=0,1 python3 -m torch.distributed.run --standalone --nproc-per-node 2 -m simcluster.runner.llm_step"
arch="--hidden 128 --ffn 352 --heads 4 --kv-heads 2 --vocab 512 --tied no --shapes 128:1,512:1 --warmup 5 --steps 20 --profile 0"
python3 -m pip install -q --no-index --find-links .device-wheels --target /tmp/scdeps annotated-types pydantic \
  pydantic_core simpy typing-inspection typing_extensions > $W/pip.txt 2>&1 || { cat $W/pip.txt; exit 3; }
echo "host runs start $(date -u +%FT%TZ)" > $W/order.txt
for layers in 2 8 32; do
  run host tp+ddp-L$layers 90 $four --layers $layers $arch --mode tp+ddp --group 2
  run host tp+fsdp-L$layers 90 $four --layers $layers $arch --mode tp+fsdp --group 2
  run host tp-L$layers 90 $two --layers $layers $arch --mode tp
done
echo "registration $(date -u +%FT%TZ)" >> $W/order.txt
PYTHONPATH=/tmp/scdeps:. python3 validation/llm_eager_regimes.py --plan tpdp --host $W/host --register $W/registered.yaml \
  >> $W/order.txt 2>&1 || { cat $W/order.txt; pack; exit 4; }
echo "step runs start $(date -u +%FT%TZ)" >> $W/order.txt
for pm in 0.3b:8 1b:4 3.1b:2; do
  p=${pm%:*}; mb=${pm#*:}; o="--preset $p --shapes 2048:$mb --warmup 3 --steps 8 --profile 0"
  run runs tp+ddp-$p 150 $four $o --mode tp+ddp --group 2
  run runs tp+fsdp-$p 150 $four $o --mode tp+fsdp --group 2
done
echo "end $(date -u +%FT%TZ)" >> $W/order.txt
pack
cat $W/order.txt $W/*/status.txt
