#!/bin/bash
# Session 24: timelines (torch.profiler Chrome traces, every rank) of FSDP2 steps at a real size and at the host fit's
# hidden 128, same layer count, same lease; a DDP step for contrast. The question (llm-findings.md, session 22): why a
# real-size FSDP2 step issues 5.3-8.6 ms per layer from the host, against the hidden-128 fit's slope.
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
W=/tmp/w/h200x2-fsdp2-timeline-2026-11-27; mkdir -p $W
nvidia-smi -L > $W/smi-L.txt; lscpu > $W/lscpu.txt
run() {   # name, then llm_step arguments
  local name=$1; shift
  timeout 240 python3 -m torch.distributed.run --standalone --nproc-per-node 2 -m simcluster.runner.llm_step \
      --steps 6 --trace $W/$name "$@" > $W/$name.json 2> $W/$name.stderr.txt
  echo "$name rc $?"; tail -2 $W/$name.stderr.txt
}
run fsdp-1.1b --preset 1.1b --mode fsdp --shapes 1024:4,3072:2
run fsdp-h128-L22 --preset 1.1b --hidden 128 --ffn 352 --heads 4 --kv-heads 2 --vocab 512 --mode fsdp --shapes 128:1,1024:4
run ddp-1.1b --preset 1.1b --mode ddp --shapes 1024:4
tar czf $OUT/timeline.tgz -C /tmp/w h200x2-fsdp2-timeline-2026-11-27
ls -la $OUT
