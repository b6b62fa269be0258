"""A torch.distributed collective benchmark that prints nccl-tests' text layout.

It is the runner's fallback where nccl-tests binaries are not available. The sizes, count,
algbw and busbw columns follow nccl-tests' definitions (src/*.cu GetCollByteCount / GetBw), so
`simcluster.traces.nccl_tests` parses its output unchanged. Timing: `iters` back-to-back
operations after `warmup`, one device synchronisation at the end, mean time per operation,
as nccl-tests does without -G/-z.

    python -m simcluster.runner.torch_collectives --op all_reduce -b 8 -e 8G -f 2 -g 2
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time

OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "sendrecv", "alltoall")
BUSBW_FACTOR = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "sendrecv": lambda n: 1.0,
}
SUFFIX = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}


def parse_size(text: str) -> int:
    text = text.strip().upper()
    unit = text[-1] if text[-1] in "KMG" else ""
    return int(float(text[: len(text) - len(unit)]) * SUFFIX[unit])


def element_counts(op: str, size: int, nranks: int, elt: int) -> tuple[int, int, int]:
    """(send elements, receive elements, printed count) as nccl-tests derives them from -b/-e."""
    count = size // elt
    if op in ("all_gather", "alltoall", "reduce_scatter"):
        base = (count // nranks) & ~(16 // elt - 1)
        if op == "all_gather":
            return base, base * nranks, base
        if op == "reduce_scatter":
            return base * nranks, base, base
        return base * nranks, base * nranks, base
    return count, count, count


def _fmt(value: float, width: int) -> str:
    for spec in (f"{width}.2f", f"{width}.1f", f"{width}.0f"):
        text = format(value, spec)
        if len(text) <= width:
            return text
    return format(value, f"{width}.1e")


def _run_op(dist, op, send, recv, rank, nranks, in_place):
    if op == "all_reduce":
        dist.all_reduce(recv if in_place else send)  # torch has no out-of-place all_reduce
    elif op == "all_gather":
        dist.all_gather_into_tensor(recv, send)
    elif op == "reduce_scatter":
        dist.reduce_scatter_tensor(recv, send)
    elif op == "broadcast":
        dist.broadcast(recv if in_place else send, src=0)
    elif op == "reduce":
        dist.reduce(recv if in_place else send, dst=0)
    elif op == "alltoall":
        dist.all_to_all_single(recv, send)
    elif op == "sendrecv":
        peer_to, peer_from = (rank + 1) % nranks, (rank - 1) % nranks
        reqs = dist.batch_isend_irecv(
            [dist.P2POp(dist.isend, send, peer_to), dist.P2POp(dist.irecv, recv, peer_from)]
        )
        for req in reqs:
            req.wait()


def _worker(rank: int, args, port: int) -> None:
    import torch
    import torch.distributed as dist

    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    use_cuda = torch.cuda.is_available()
    device = torch.device("cuda", rank) if use_cuda else torch.device("cpu")
    if use_cuda:
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if use_cuda else "gloo", rank=rank, world_size=args.g,
                            device_id=device if use_cuda else None)
    n, elt = args.g, 4
    sync = torch.cuda.synchronize if use_cuda else (lambda: None)
    out = sys.stdout
    if rank == 0:
        nccl = ".".join(map(str, torch.cuda.nccl.version())) if use_cuda else "none"
        out.write(f"# simcluster torch.distributed benchmark (nccl-tests layout); torch {torch.__version__}"
                  f" backend {dist.get_backend()} nccl {nccl}\n")
        out.write(f"# Collective test starting: {args.op}_perf\n")
        out.write(f"# nThread 1 nGpus {n} minBytes {args.b} maxBytes {args.e} step: {args.f}(factor)"
                  f" warmup iters: {args.w} iters: {args.n} agg iters: 1 validation: 0 graph: 0\n#\n")
        out.write("# Using devices\n")
    dist.barrier()
    names = [None] * n
    dist.all_gather_object(names, (socket.gethostname(), os.getpid(),
                                   torch.cuda.get_device_name(device) if use_cuda else "cpu"))
    if rank == 0:
        for r, (host, pid, name) in enumerate(names):
            out.write(f"#  Rank {r:2d} Group  0 Pid {pid:6d} on {host:>10s} device {r:2d} [0000:00:00] {name}\n")
        out.write("#\n")
        out.write(f"# {'':>10s}  {'':>12s}  {'':>8s}  {'':>6s}  {'':>6s}           out-of-place"
                  "                       in-place          \n")
        out.write("# {:>10s}  {:>12s}  {:>8s}  {:>6s}  {:>6s}  {:>7s}  {:>6s}  {:>6s}  {:>6s}  {:>7s}  {:>6s}"
                  "  {:>6s}  {:>6s}\n".format("size", "count", "type", "redop", "root", "time", "algbw",
                                              "busbw", "#wrong", "time", "algbw", "busbw", "#wrong"))
        out.write("# {:>10s}  {:>12s}  {:>8s}  {:>6s}  {:>6s}  {:>7s}  {:>6s}  {:>6s}  {:>6s}  {:>7s}  {:>6s}"
                  "  {:>6s}  {:>6s}\n".format("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)",
                                              "", "(us)", "(GB/s)", "(GB/s)", ""))
        out.flush()
    size, busbws = args.b, []
    redop = "sum" if args.op in ("all_reduce", "reduce_scatter", "reduce") else "none"
    root = 0 if args.op in ("broadcast", "reduce") else -1
    while size <= args.e:
        nsend, nrecv, count = element_counts(args.op, size, n, elt)
        if count == 0:  # below one aligned element per rank: nothing to measure
            size *= args.f
            continue
        send = torch.ones(nsend, dtype=torch.float32, device=device)
        recv = torch.zeros(nrecv, dtype=torch.float32, device=device)
        cols = []
        for in_place in (False, True):
            for _ in range(args.w):
                _run_op(dist, args.op, send, recv, rank, n, in_place)
            sync()
            dist.barrier()
            sync()
            t0 = time.perf_counter()
            for _ in range(args.n):
                _run_op(dist, args.op, send, recv, rank, n, in_place)
            sync()
            sec = (time.perf_counter() - t0) / args.n
            sec_t = torch.tensor([sec], dtype=torch.float64, device=device)
            dist.all_reduce(sec_t, op=dist.ReduceOp.MAX)
            sec = float(sec_t.item())
            moved = (count * n if args.op in ("all_gather", "reduce_scatter", "alltoall") else count) * elt
            algbw = moved / 1e9 / sec
            busbw = algbw * BUSBW_FACTOR[args.op](n)
            cols.append((sec * 1e6, algbw, busbw))
        busbws.append(cols[0][2])
        if rank == 0:
            line = f"{max(nsend, nrecv) * elt:12d}  {count:12d}  {'float':>8s}  {redop:>6s}  {root:6d}"
            for t_us, algbw, busbw in cols:
                line += f"  {_fmt(t_us, 7)}  {_fmt(algbw, 6)}  {_fmt(busbw, 6)}    N/A"
            out.write(line + "\n")
            out.flush()
        del send, recv
        size *= args.f
    if rank == 0:
        out.write("# Out of bounds values : 0 OK\n")
        out.write(f"# Avg bus bandwidth    : {sum(busbws) / max(len(busbws), 1):g} \n#\n")
        out.flush()
    dist.destroy_process_group()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--op", choices=OPS, required=True)
    parser.add_argument("-b", type=parse_size, default=8)
    parser.add_argument("-e", type=parse_size, default=parse_size("128M"))
    parser.add_argument("-f", type=int, default=2)
    parser.add_argument("-g", type=int, default=2, help="ranks (one process per GPU)")
    parser.add_argument("-w", type=int, default=5, help="warmup iterations")
    parser.add_argument("-n", type=int, default=20, help="timed iterations")
    args = parser.parse_args(argv)
    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(_worker, args=(args, port), nprocs=args.g, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
