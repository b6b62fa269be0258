"""Compute beside communication on one GPU pair (device-side benchmark, run under torchrun with 2 ranks):
how much a GEMM loop slows while NCCL all_reduces run on another stream, and how much those all_reduces slow
beside it. Three timed phases per rank, each after a warm-up, CUDA events around each:
  gemm alone       n bf16 GEMMs (M = N = K = --gemm) on the default stream
  all_reduce alone m fp32 all_reduces of --bucket bytes (DDP's 25 MiB buckets) on a side stream
  both             the same two loops issued interleaved (the side stream's all_reduces run beside the GEMMs)
and prints one JSON document on rank 0: each phase's seconds and the GEMMs' and all_reduces' own durations in the
'both' phase (each stream timed by its own events).

    python -m torch.distributed.run --standalone --nproc-per-node 2 studies/overlap_micro/device.py
"""

from __future__ import annotations

import argparse
import json
import os
import sys


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gemm", type=int, default=8192, help="GEMM size M = N = K (bf16)")
    ap.add_argument("--gemms", type=int, default=200, help="GEMMs per phase")
    ap.add_argument("--bucket", type=int, default=25 * 2**20, help="all_reduce size in bytes (fp32)")
    ap.add_argument("--reduces", type=int, default=2000, help="all_reduces per phase")
    ap.add_argument("--repeat", type=int, default=3, help="timed repetitions of each phase")
    args = ap.parse_args(argv)

    import torch
    import torch.distributed as dist

    dist.init_process_group("nccl")
    rank = dist.get_rank()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    a = torch.randn(args.gemm, args.gemm, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(args.gemm, args.gemm, device="cuda", dtype=torch.bfloat16)
    bucket = torch.ones(args.bucket // 4, device="cuda", dtype=torch.float32)
    side = torch.cuda.Stream()

    def gemms():
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(args.gemms):
            torch.mm(a, b)
        end.record()
        return start, end

    def reduces():
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with torch.cuda.stream(side):
            start.record(side)
            for _ in range(args.reduces):
                dist.all_reduce(bucket)
            end.record(side)
        return start, end

    def both():
        """The two loops issued interleaved (one GEMM, then the all_reduces due by then), each stream timed."""
        ev = {k: (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for k in ("gemm", "all_reduce")}
        ev["gemm"][0].record()
        with torch.cuda.stream(side):
            ev["all_reduce"][0].record(side)
        done = 0
        for i in range(args.gemms):
            torch.mm(a, b)
            due = (i + 1) * args.reduces // args.gemms
            with torch.cuda.stream(side):
                for _ in range(due - done):
                    dist.all_reduce(bucket)
            done = due
        ev["gemm"][1].record()
        with torch.cuda.stream(side):
            ev["all_reduce"][1].record(side)
        return ev

    def phase(what: str) -> dict:
        dist.barrier()
        torch.cuda.synchronize()
        marks = {"gemm": gemms()} if what == "gemm" else {"all_reduce": reduces()} if what == "all_reduce" else both()
        torch.cuda.synchronize()
        return {k: s.elapsed_time(e) * 1e-3 for k, (s, e) in marks.items()}

    for what in ("gemm", "all_reduce", "both"):
        phase(what)   # warm-up
    runs = {what: [phase(what) for _ in range(args.repeat)] for what in ("gemm", "all_reduce", "both")}
    if rank == 0:
        doc = {"tool": "overlap-micro", "format": 1, "world_size": dist.get_world_size(),
               "device": torch.cuda.get_device_name(), "torch": torch.__version__,
               "nccl": ".".join(map(str, torch.cuda.nccl.version())),
               "gemm": {"m": args.gemm, "n": args.gemm, "k": args.gemm, "dtype": "bf16", "count": args.gemms,
                        "flops": 2 * args.gemm ** 3 * args.gemms},
               "all_reduce": {"bytes": args.bucket, "dtype": "fp32", "count": args.reduces},
               "env": {k: v for k, v in os.environ.items() if k.startswith("NCCL_")}, "runs_s": runs}
        json.dump(doc, sys.stdout, indent=1)
        print()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
