"""Collective traffic patterns on a fabric's NICs, and their completion time on the flow model.

NICs are seen as a (nodes x rails) grid: NIC j of node i is Platform vertex nic(i, j) (a fabric of plain hosts: one
rail). Every pattern runs on every rail at once, each NIC sending `nbytes` per flow:
  ring          NIC j of node i -> NIC j of node i+1 (one ring step, as collectives/ring_flows.py solves it)
  ring-strided  the ring over the nodes taken one leaf's worth of NICs apart (every hop crosses the spines)
  ring-steps    `steps` ring steps of nbytes / steps each, a NIC sending step s once it has received step s-1
  tree          one step of NCCL's double binary tree (schedule.py): every node sends to its parent in each tree
  alltoall      NIC j of every node -> NIC j of every other node (NCCL's PXN routes: collectives/alltoall.py)
  incast        NIC j of nodes 1..min(8, N-1) -> NIC j of node 0
  permutation   NIC j of node i -> NIC j of node p(i), p a fixed random derangement (seed 0): flows meet on spine
                links by the hash, unevenly, as unrelated jobs' flows do (used at 256+ hosts against SimGrid)
The collective's completion time is when its last flow's last byte has arrived. The flow model runs the same flows
with network/flows.py (max-min sharing, re-shared whenever a flow starts or ends, per-flow ECMP hash of the Platform,
path latency with the store-and-forward packet at the MTU).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simcluster.collectives.des import EVENTS_PER_FLOW
from simcluster.collectives.schedule import double_tree_parents
from simcluster.engine import Simulation, expect_events
from simcluster.errors import SimclusterError
from simcluster.network.flows import FlowNetwork
from simcluster.network.platform import Platform
from simcluster.packet.topology import fabric_blocks

PATTERNS = ("ring", "ring-strided", "ring-steps", "tree", "alltoall", "incast", "permutation")
INCAST_SENDERS = 8
RING_STEPS = 4


@dataclass(frozen=True)
class Traffic:
    pattern: str
    src: np.ndarray          # Platform vertices
    dst: np.ndarray
    nbytes: np.ndarray       # per flow
    deps: tuple = ()         # (flow, flow it waits for)


def nic_grid(platform: Platform) -> np.ndarray:
    """Vertices of the fabric's endpoints as a (nodes, rails) grid."""
    eb, _, _ = fabric_blocks(platform)
    rails = platform.nics_per_node or 1
    return (eb.start + np.arange(eb.count)).reshape(-1, rails)


def _tree_pairs(nodes: int) -> list[tuple[int, int]]:
    """(child, parent) of both of NCCL's binary trees over `nodes` nodes (the trees of schedule.tree_node_load)."""
    return [(int(c), int(p)) for parents in double_tree_parents(nodes) for c, p in enumerate(parents) if p >= 0]


def traffic(platform: Platform, pattern: str, nbytes: float) -> Traffic:
    grid = nic_grid(platform)
    nodes, rails = grid.shape
    if nodes < 2:
        raise SimclusterError("a traffic pattern needs at least 2 nodes on the fabric")
    pairs: list[tuple[int, int]]
    deps: list[tuple[int, int]] = []
    size = float(nbytes)
    if pattern in ("ring", "ring-steps"):
        pairs = [(i, (i + 1) % nodes) for i in range(nodes)]
    elif pattern == "ring-strided":
        _, lb, _ = fabric_blocks(platform)
        per_leaf = max(1, -(-nodes * rails // lb.count) // rails)   # nodes per leaf
        stride = per_leaf if nodes % per_leaf == 0 and per_leaf < nodes else 1
        order = np.concatenate([np.arange(start, nodes, stride) for start in range(stride)])
        pairs = [(int(order[i]), int(order[(i + 1) % nodes])) for i in range(nodes)]
    elif pattern == "tree":
        pairs = _tree_pairs(nodes)
        size = nbytes / 2   # each tree carries half
    elif pattern == "alltoall":
        pairs = [(i, j) for i in range(nodes) for j in range(nodes) if i != j]
    elif pattern == "incast":
        pairs = [(i, 0) for i in range(1, min(INCAST_SENDERS, nodes - 1) + 1)]
    elif pattern == "permutation":
        perm = np.random.default_rng(0).permutation(nodes)
        perm = np.where(perm == np.arange(nodes), np.roll(perm, 1), perm)   # no node sends to itself
        pairs = [(i, int(perm[i])) for i in range(nodes) if perm[i] != i]
    else:
        raise SimclusterError(f"unknown traffic pattern {pattern!r}", hint=f"one of {', '.join(PATTERNS)}")
    src = np.array([grid[a, j] for a, _ in pairs for j in range(rails)])
    dst = np.array([grid[b, j] for _, b in pairs for j in range(rails)])
    if pattern == "ring-steps":   # step s of flow (i, j) waits for step s-1 into node i on rail j
        per_step = len(src)
        src, dst = np.tile(src, RING_STEPS), np.tile(dst, RING_STEPS)
        size = nbytes / RING_STEPS
        into = {int(d): f for f, d in enumerate(dst[:per_step])}   # the step-0 flow into each NIC
        for s in range(1, RING_STEPS):
            for f in range(per_step):
                deps.append((s * per_step + f, (s - 1) * per_step + into[int(src[f])]))
    return Traffic(pattern, src, dst, np.full(len(src), size), tuple(deps))


def flow_model(platform: Platform, t: Traffic, packet_bytes: float) -> tuple[np.ndarray, np.ndarray]:
    """(start, finish) per flow on the flow model (network/flows.py), seconds."""
    expect_events(EVENTS_PER_FLOW * len(t.src), f"the flow model of {len(t.src):,} {t.pattern} flows", "a smaller pattern or fabric")
    sim = Simulation(0, record=False)
    net = FlowNetwork(sim, platform, packet_bytes)
    names = platform.names()
    n = len(t.src)
    start, finish = np.zeros(n), np.zeros(n)
    done = [sim.env.event() for _ in range(n)]
    waits: list[list[int]] = [[] for _ in range(n)]
    for f, on in t.deps:
        waits[f].append(on)

    def one(f):
        if waits[f]:
            yield sim.env.all_of([done[d] for d in waits[f]])
        start[f] = sim.now
        yield net.transfer(names[t.src[f]], names[t.dst[f]], t.nbytes[f])
        finish[f] = sim.now
        done[f].succeed()

    for f in range(n):
        sim.process(one(f))
    sim.run()
    return start, finish
