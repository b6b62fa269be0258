#!/bin/bash
# Session 25, call A (registered in docs/models/collectives.md and llm-findings.md before collection): a 2 x H100
# machine's collectives collected as M4's (h200x2-m4-2026-11-23), and its comm_overlap (overlap-micro). On the device
# machine, repository root, with nccl-tests 2.19.6's source in .device/nccl-tests (not committed); $OUT comes back.
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
kind=h100x2; nvidia-smi -L | grep -q H200 && kind=h200x2
B=/tmp/w/$kind-m5-2026-11-27; mkdir -p $B
nvidia-smi -L > $B/smi-L.txt; nvidia-smi topo -m > $B/topo.txt 2>&1; lscpu > $B/lscpu.txt
t0=$(date +%s)
(cd .device/nccl-tests && make -j16 MPI=0 NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" > $B/build.log 2>&1; echo "build rc $?" >> $B/build.log)
tail -1 $B/build.log; echo "build $(( $(date +%s) - t0 )) s"
NT=.device/nccl-tests/build
ls $NT/*_perf | head -3; ldd $NT/all_reduce_perf | grep -i nccl > $B/nccl-files.txt
OPS=all_reduce,all_gather,reduce_scatter,broadcast,reduce,sendrecv,alltoall
python -m simcluster collect --out $B/probe-graph --tools nccl-probe --nccl-tests $NT --gpus 2 --nccl-graph 5 > $B/probe-graph.log 2>&1; tail -1 $B/probe-graph.log
python -m simcluster collect --out $B/probe-host --tools nccl-probe --nccl-tests $NT --gpus 2 > $B/probe-host.log 2>&1; tail -1 $B/probe-host.log
echo "probes $(( $(date +%s) - t0 )) s"
python -m simcluster collect --out $B/graph --tools nccl-tests --ops $OPS --nccl-tests $NT --gpus 2 -b 8 -e 8G \
    --nccl-warmup 5 --nccl-graph 5 --nccl-repeat 2 --nccl-tuning > $B/graph.log 2>&1; tail -1 $B/graph.log
echo "graph $(( $(date +%s) - t0 )) s"
python -m simcluster collect --out $B/host --tools nccl-tests --ops $OPS --nccl-tests $NT --gpus 2 -b 8 -e 8G \
    --nccl-warmup 5 --nccl-iters 50 --nccl-repeat 1 > $B/host.log 2>&1; tail -1 $B/host.log
echo "host $(( $(date +%s) - t0 )) s"
for cfg in 8192:200 4096:1000; do
  g=${cfg%%:*}; n=${cfg##*:}
  timeout 150 python3 -m torch.distributed.run --standalone --nproc-per-node 2 -m simcluster.runner.overlap_micro \
      --gemm $g --gemms $n > $B/overlap-g$g.json 2> $B/overlap-g$g.stderr.txt
  echo "overlap gemm $g rc $?"
done
echo "all $(( $(date +%s) - t0 )) s"
tar czf $OUT/m5.tgz -C /tmp/w $(basename $B)
ls -la $OUT
