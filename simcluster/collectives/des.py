"""Chunk-level discrete-event form of the collectives on a Platform, for any collective model.

The model gives the call's terms (interface.DesTerms: protocol, base latency, step latency, chunk size, rate cap).
Every chunk is a flow from a GPU to its ring successor through the platform, sharing links
max-min with whatever else is running; each chunk first pays the protocol's step latency.
A rank processes its chunk sends in NCCL's order (chunk-major, then step) and a forwarded chunk
waits for its arrival from the predecessor. With no contention this reproduces the closed
form of the model exactly; with contention (shared links, slower paths) it is the reference.
"""

from __future__ import annotations

from simcluster.collectives.interface import CollectiveModel
from simcluster.collectives.model import Prediction
from simcluster.collectives.schedule import schedule
from simcluster.engine import Simulation, expect_events
from simcluster.errors import SimclusterError
from simcluster.network.flows import FlowNetwork
from simcluster.network.platform import Platform

MAX_FLOWS = 200_000
EVENTS_PER_FLOW = 11   # kernel events one chunk flow costs (measured: 44 for a 2-rank all_reduce's 4 flows)


def simulate(params: CollectiveModel, platform: Platform, op: str, size_bytes: int,
             protocol: str, ranks: list[str] | None = None, sim: Simulation | None = None,
             net: FlowNetwork | None = None) -> Prediction:
    """Run one collective with `protocol` over `platform` (ranks: endpoint names, default its GPUs) and return its simulated time.

    Pass `net` to share links with other traffic already running on that FlowNetwork."""
    ranks = ranks or platform.gpus
    n = len(ranks)
    sched = schedule(op, size_bytes, n)
    proto = params.des_terms(sched.op, size_bytes, n, protocol)
    protocol = proto.protocol
    if net is not None:
        sim = net.sim
    sim = sim or Simulation(record=False)
    net = net or FlowNetwork(sim, platform, packet_bytes=min(proto.chunk_bytes, 4096.0))
    cap = proto.rate_Bps
    if sched.kind == "none":
        return Prediction(sched.op, int(size_bytes), n, proto.base_latency_s, protocol)
    chunks = max(1, round(sched.segment_bytes / proto.chunk_bytes))
    chunk = sched.segment_bytes / chunks
    if n * sched.sends * chunks > MAX_FLOWS:
        raise SimclusterError(f"{n * sched.sends * chunks} chunk flows exceed the DES limit of {MAX_FLOWS}",
                              hint="use the closed form (engine: analytic) at this size and scale")
    expect_events(EVENTS_PER_FLOW * n * sched.sends * chunks, f"a chunk-level {sched.op} of {chunks:,} chunks on {n} ranks",
                  "a smaller size or fewer ranks, or the closed form (engine: analytic)")
    arrived = {}  # (rank, chunk, step) -> event: data for that step reached this rank

    def send(rank: int, c: int, s: int):
        yield sim.timeout(proto.step_latency_s)
        yield net.transfer(ranks[rank], ranks[(rank + 1) % n], chunk, cap)
        arrived[((rank + 1) % n, c, s + 1)].succeed()

    def ring_rank(rank: int):
        for c in range(chunks):
            for s in range(sched.sends):
                if s > 0:
                    yield arrived[(rank, c, s)]
                yield sim.process(send(rank, c, s))

    def chain_rank(rank: int):
        for c in range(chunks):
            if rank > 0:
                yield arrived[(rank, c, rank)]
            if rank < n - 1:
                yield sim.timeout(proto.step_latency_s)
                yield net.transfer(ranks[rank], ranks[rank + 1], chunk, cap)
                arrived[(rank + 1, c, rank + 1)].succeed()

    for r in range(n):
        for c in range(chunks):
            for s in range(sched.sends + 1):
                arrived[(r, c, s)] = sim.env.event()
    body = ring_rank if sched.kind == "ring" else chain_rank
    procs = [sim.process(body(r)) for r in range(n)]
    start = sim.now
    sim.run(until=sim.env.all_of(procs))
    return Prediction(sched.op, int(size_bytes), n, proto.base_latency_s + sim.now - start, protocol)
