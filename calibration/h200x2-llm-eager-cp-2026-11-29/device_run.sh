#!/bin/bash
# Issue 44, session 36: torch's context parallelism on 2 x H200 (validation/llm_eager_regimes.py --plan cp): the runner's
# --mode cp (torch.distributed.tensor.experimental.context_parallel over both ranks, DDP over the same ranks, flash SDPA;
# simcluster/runner/llm_cp.py) at 1b 32768:1, 0.5b 32768:2 and 3b 16384:1; predictions registered in registered.yaml
# before this ran. Tiny smokes first (2 steps, one profiled step kept as a Chrome trace per rank): MHA (not gating), GQA,
# the GQA shape on one GPU, and the gate studies/cp_smoke_check.py; if the GQA smoke or the gate fails, the three runs
# are skipped (the caller fixes the runner and retries once). The smokes were amended after the registration, before
# any run (README); the three runs are as registered.
#   MAIN_COMMIT=<main's commit> bash calibration/h200x2-llm-eager-cp-2026-11-29/device_run.sh   (2 x H200; $OUT comes back)
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
W=/tmp/eager-cp
B=$W/runs
mkdir -p $B
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $B/nvidia-smi.txt 2>&1
nvidia-smi topo -m >> $B/nvidia-smi.txt 2>&1
lscpu > $B/lscpu.txt 2>&1
python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version(), torch.cuda.device_count())' > $B/torch.txt 2>&1
echo "${MAIN_COMMIT:-unknown} (main, as given by the caller; the device copy's .git may lag)" > $B/commit.txt
pack() { tar czf $OUT/runs.tgz -C $W runs; }
run() {   # name, limit (s), command...
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout $limit "$@" > $B/$name.json 2> $B/$name.stderr.txt
  local rc=$?
  echo "$name exit $rc $((SECONDS - t0)) s" | tee -a $B/status.txt
  [ $rc -ne 0 ] && tail -25 $B/$name.stderr.txt
  pack
  return $rc
}
two="python3 -m torch.distributed.run --standalone --nproc-per-node 2 -m simcluster.runner.llm_step"
smoke="--preset tiny --shapes 512:2 --warmup 1 --steps 2 --profile 1"
# the smokes (amended after the registration, before any run: README). First MHA (kv_heads 4 = heads; not gating):
# with the GQA smoke's result it tells GQA through flash under CP failing (torchtitan repeats K / V before SDPA,
# pytorch/torchtitan#1283; fallback SIMCLUSTER_CP_REPEAT_KV=1, needs a re-registration: README) from CP plumbing failing
run smoke-mha 90 $two $smoke --kv-heads 4 --trace $B/smoke-mha --mode cp || echo "MHA smoke failed (not gating; see the GQA smoke)"
# then the GQA cp smoke, the same shape on one GPU (same seeds), and the gate studies/cp_smoke_check.py: the cp ranks'
# mean loss against the single-GPU loss, flash / NCCL AllGather / SendRecv kernels in rank 0's trace; a failure skips the runs
run smoke-tiny 90 $two $smoke --trace $B/smoke --mode cp || { echo "smoke failed: the cp runs are skipped"; exit 1; }
run smoke-single 90 env CUDA_VISIBLE_DEVICES=0 python3 -m simcluster.runner.llm_step --mode single --preset tiny --shapes 512:2 \
  --warmup 1 --steps 2 --profile 1 \
  || { echo "single-GPU smoke failed: the cp runs are skipped"; exit 1; }
python3 - $B/smoke-tiny.json <<'PY'   # what the smoke's document says: loss, the CP options torch reports, the kernels
import json, sys
t = open(sys.argv[1]).read()
d = json.loads(t[t.find("{"):])
s = d["shapes"][0]
print("smoke:", s["status"], "loss", s.get("loss"), "ranks", [(r["rank"], r["status"], r.get("loss")) for r in s.get("ranks", [])])
print("context_parallel:", d.get("context_parallel"))
print("profile:", {k: v for k, v in s.get("profile", {}).items() if k != "cuda_runtime_per_step"})
PY
python3 studies/cp_smoke_check.py $B/smoke-tiny.json $B/smoke-single.json $B/smoke-512x2-rank0.json.gz \
  | tee $B/smoke-check.txt; [ ${PIPESTATUS[0]} -eq 0 ] || { echo "smoke check failed: the cp runs are skipped"; pack; exit 1; }
common="--warmup 3 --steps 8 --profile 1 --mode cp"
for spec in "1b 32768:1" "0.5b 32768:2" "3b 16384:1"; do   # heldout/eager.py SIZES7
  set -- $spec
  run cp-$1 150 $two --preset $1 --shapes $2 $common
done
cat $B/status.txt
