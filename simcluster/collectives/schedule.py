"""What each collective sends, per rank, as NCCL's ring and chain algorithms move it.

S is nccl-tests' size column (total bytes for all_gather / reduce_scatter / alltoall), n ranks.
ring ops: every rank sends `sends` segments of `segment` bytes to its ring successor, in order.
chain ops: a pipeline root -> ... -> last rank over n-1 hops, the whole S per hop.
Bytes per rank on the wire equal nccl-tests' busbw numerator, so busbw = wire bytes / time.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

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


def _btree_parents(n: int) -> np.ndarray:
    """Parent of each rank in NCCL's binary tree over n ranks (root 0, -1 for the root): a rank's parent
    clears its lowest set bit and sets the next one up, or only clears it when that is out of range
    (NCCL 2.x src/graph/trees.cc)."""
    parents = np.full(n, -1)
    ranks = np.arange(1, n)
    low = ranks & -ranks
    up = (ranks ^ low) | (low << 1)
    parents[1:] = np.where(up >= n, ranks ^ low, up)
    return parents


def double_tree_parents(nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """The parent of each node (-1 for a root) in both of NCCL's binary trees over `nodes` nodes: the second tree is
    the first mirrored (even count) or shifted by one rank (odd)."""
    first = _btree_parents(nodes)
    r = np.arange(nodes)
    if nodes % 2 == 0:
        mirrored = first[nodes - 1 - r]
        return first, np.where(mirrored < 0, -1, nodes - 1 - mirrored)
    shifted = first[(r - 1) % nodes]
    return first, np.where(shifted < 0, -1, (shifted + 1) % nodes)


@lru_cache(maxsize=256)
def tree_depth(nodes: int) -> int:
    """Levels from a root to the deepest leaf of NCCL's double binary tree over `nodes` nodes (the deeper of the two
    trees; ceil(log2 N) at every N checked): a tree all_reduce's network steps are 2 x this (up, then down)."""
    depth = 0
    for parents in double_tree_parents(max(1, nodes)):
        hops, up = 0, parents.copy()
        while np.any(up >= 0):        # every rank climbs one level a round; the last to reach a root is the deepest
            hops += 1
            up = np.where(up >= 0, parents[np.maximum(up, 0)], -1)
        depth = max(depth, hops)
    return depth


@lru_cache(maxsize=256)
def tree_node_load(nodes: int) -> float:
    """Bytes the busiest node sends (and receives) over the network, in units of S, for an all_reduce
    on NCCL's double binary tree over `nodes` nodes: each tree carries S/2; a node sends S/2 to its
    parent (reduce) and S/2 to each child (broadcast), and receives as much. The second tree is the
    first mirrored (even count) or shifted by one rank (odd). 1.0 at 2 nodes, 1.5 at 3, 2.0 from 4 on
    (a ring sends 2(N-1)/N: the tree's gain is latency, not bandwidth)."""
    if nodes < 2:
        return 0.0
    links = np.zeros(nodes)
    for parents in double_tree_parents(nodes):
        has_parent = parents >= 0
        links += has_parent + np.bincount(parents[has_parent], minlength=nodes)
    return float(links.max() / 2)
