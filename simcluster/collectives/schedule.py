"""What each collective sends, per rank, as NCCL's ring and chain algorithms move it.

S is nccl-tests' size column (total bytes for all_gather / reduce_scatter / alltoall), n ranks.
ring ops: every rank sends `sends` segments of `segment` bytes to its ring successor, in order.
chain ops: a pipeline root -> ... -> last rank over n-1 hops, the whole S per hop.
Bytes per rank on the wire equal nccl-tests' busbw numerator, so busbw = wire bytes / time.
"""

from __future__ import annotations

from dataclasses import dataclass

from simcluster.errors import SimclusterError

OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "sendrecv", "alltoall")
ALIASES = {"allreduce": "all_reduce", "allgather": "all_gather", "reducescatter": "reduce_scatter",
           "all_to_all": "alltoall", "send_recv": "sendrecv"}


@dataclass(frozen=True)
class Schedule:
    op: str
    kind: str  # 'ring' | 'chain' | 'none'
    segment_bytes: float
    sends: int  # segments each rank sends in turn (ring) or hops (chain)


def canonical_op(name: str) -> str:
    op = ALIASES.get(name.lower(), name.lower())
    if op not in OPS:
        raise SimclusterError(f"unknown collective {name!r}", hint=f"one of {', '.join(OPS)}")
    return op


def schedule(op: str, size_bytes: float, nranks: int) -> Schedule:
    op = canonical_op(op)
    n = nranks
    if n < 1:
        raise SimclusterError(f"ranks must be >= 1, got {n}")
    if n == 1:
        return Schedule(op, "none", 0.0, 0)
    if op == "all_reduce":
        return Schedule(op, "ring", size_bytes / n, 2 * (n - 1))
    if op in ("all_gather", "reduce_scatter", "alltoall"):
        return Schedule(op, "ring", size_bytes / n, n - 1)
    if op == "sendrecv":
        return Schedule(op, "ring", size_bytes, 1)
    return Schedule(op, "chain", size_bytes, n - 1)  # broadcast, reduce


def bus_factor(op: str, nranks: int) -> float:
    """nccl-tests' busbw / algbw factor."""
    op, n = canonical_op(op), nranks
    if op == "all_reduce":
        return 2 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter", "alltoall"):
        return (n - 1) / n
    return 1.0
