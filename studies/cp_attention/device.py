"""Causal attention with and without context parallelism: one JSON document on stdout (rank 0).

    torchrun --nproc-per-node 4 studies/cp_attention/device.py --seqs 16384,32768,65536

For each sequence length S: rank 0 alone times causal SDPA (bf16, batch 1, `--heads` query heads, `--kv-heads` key /
value heads, `--head-dim`) forward, and forward + backward, on the whole sequence; then every rank times the same call
under torch's context parallelism (torch.distributed.tensor.experimental.context_parallel: q, k, v and the output
gradient sharded along the sequence over all ranks, load-balanced, K/V rotated by all-gather, torch's defaults), each
rank holding S / ranks queries. Times are CUDA-event medians of `--steps` calls after `--warmup`, per rank; the
document keeps every rank's. What the LLM model prices for a CP rank's attention core (simcluster/llm/ops.py) is
compared in studies/cp_attention/compare.py. torch is imported inside main only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time


def _timed(torch, fn, warmup: int, steps: int, sync) -> list[float]:
    for _ in range(warmup):
        fn()
    sync()
    out = []
    for _ in range(steps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        out.append(start.elapsed_time(end) * 1e-3)
    return out


def _inputs(torch, seq: int, heads: int, kv_heads: int, head_dim: int, device, seed: int):
    gen = torch.Generator(device="cpu").manual_seed(seed)
    shape_q, shape_kv = (1, heads, seq, head_dim), (1, kv_heads, seq, head_dim)
    q = torch.randn(shape_q, generator=gen).to(device, torch.bfloat16)
    k = torch.randn(shape_kv, generator=gen).to(device, torch.bfloat16)
    v = torch.randn(shape_kv, generator=gen).to(device, torch.bfloat16)
    dout = torch.randn(shape_q, generator=gen).to(device, torch.bfloat16)
    return q, k, v, dout


def _passes(torch, q, k, v, dout, gqa: bool):
    import torch.nn.functional as F

    q, k, v = (t.detach().requires_grad_(True) for t in (q, k, v))
    kw = {"is_causal": True, "enable_gqa": True} if gqa else {"is_causal": True}

    def forward():
        with torch.no_grad():
            F.scaled_dot_product_attention(q, k, v, **kw)

    def both():
        out = F.scaled_dot_product_attention(q, k, v, **kw)
        out.backward(dout)
        q.grad = k.grad = v.grad = None

    return forward, both


def _cp_timing(torch, dist, context_parallel, mesh, rec: dict, q, k, v, dout, gqa: bool, args, sync, world: int) -> None:
    """Every rank's medians under torch's context parallelism, into rec (or the error that stopped it)."""
    try:
        with context_parallel(mesh, buffers=[q, k, v, dout], buffer_seq_dims=[2, 2, 2, 2]):
            rec["local_queries"] = int(q.shape[2])
            fwd, both = _passes(torch, q, k, v, dout, gqa)
            f = _timed(torch, fwd, args.warmup, args.steps, sync)
            b = _timed(torch, both, args.warmup, args.steps, sync)
        times = [None] * world
        dist.all_gather_object(times, (statistics.median(f), statistics.median(b)))
        rec["cp_forward_s"] = [t[0] for t in times]
        rec["cp_forward_backward_s"] = [t[1] for t in times]
    except Exception as exc:  # noqa: BLE001 - recorded; the next length runs
        rec["cp_error"] = f"{type(exc).__name__}: {exc}"[:300]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seqs", default="16384,32768", help="sequence lengths, comma-separated")
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--clocks", action="store_true", help="stream nvidia-smi's SM clock and power during rank 0's 1-GPU "
                    "timing and record their medians per length (runner/gpu_duty.py; every visible GPU's samples: run it "
                    "on one GPU)")
    ap.add_argument("--single-only", action="store_true", help="time the 1-GPU calls only (no context parallelism)")
    args = ap.parse_args(argv)
    seqs = [int(s) for s in args.seqs.split(",") if s]
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.experimental import context_parallel

    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    device = torch.device("cuda", local)
    dist.init_process_group("nccl", device_id=device)
    mesh = init_device_mesh("cuda", (world,))
    sync = torch.cuda.synchronize
    gqa = args.heads != args.kv_heads
    records = []
    for i, seq in enumerate(seqs):
        rec = {"seq": seq, "ranks": world}
        if seq % (2 * world):
            rec["error"] = f"seq {seq} does not divide by 2 x {world} (load-balanced chunks)"
            records.append(rec)
            continue
        q, k, v, dout = _inputs(torch, seq, args.heads, args.kv_heads, args.head_dim, device, seed=i)
        if rank == 0:
            fwd, both = _passes(torch, q, k, v, dout, gqa)
            smi = None
            if args.clocks:
                from simcluster.runner.gpu_duty import SmiStream, window_medians

                smi = SmiStream()
            t0 = t1 = t2 = time.time()
            try:
                rec["single_forward_s"] = statistics.median(_timed(torch, fwd, args.warmup, args.steps, sync))
                t1 = time.time()
                rec["single_forward_backward_s"] = statistics.median(_timed(torch, both, args.warmup, args.steps, sync))
                t2 = time.time()
            except Exception as exc:  # noqa: BLE001 - the CP timing below stands without the baseline
                rec["single_error"] = f"{type(exc).__name__}: {exc}"[:300]
            finally:
                if smi is not None:    # stopped whatever happened: one nvidia-smi stream per length, never left running
                    samples = smi.stop()
                    rec["single_forward_clock"] = window_medians(samples, t0, t1)
                    rec["single_forward_backward_clock"] = window_medians(samples, t1, t2)
        dist.barrier()
        if not args.single_only:
            _cp_timing(torch, dist, context_parallel, mesh, rec, q, k, v, dout, gqa, args, sync, world)
        records.append(rec)
        if rank == 0:
            print(f"cp-attention: seq {seq}: {json.dumps({k: v for k, v in rec.items() if k != 'seq'})[:200]}",
                  file=sys.stderr, flush=True)
        del q, k, v, dout
        torch.cuda.empty_cache()
    if rank == 0:
        props = torch.cuda.get_device_properties(device)
        from torch.distributed.tensor.experimental import _attention

        doc = {"tool": "cp-attention", "format": 1, "world_size": world, "device": props.name,
               "torch": torch.__version__, "cuda": torch.version.cuda, "python": platform.python_version(),
               "nccl": ".".join(map(str, torch.cuda.nccl.version())),
               "attention": {"heads": args.heads, "kv_heads": args.kv_heads, "head_dim": args.head_dim, "batch": 1,
                             "dtype": "bf16", "causal": True},
               "cp_options": str(getattr(_attention, "_cp_options", "")),
               "warmup": args.warmup, "steps": args.steps, "records": records}
        json.dump(doc, sys.stdout, indent=1)
        sys.stdout.write("\n")
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
