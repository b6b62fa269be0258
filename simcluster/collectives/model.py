"""The closed-form (steady-state) collective cost model, and NCCL-like protocol choice.

For protocol p with per-chunk latency a_p, chunk size c_p and rate r_p = f_p * B:
  ring  (each rank sends m segments of g bytes in turn):
      T_p = L_p + m * (k * a_p + g / r_p),      k = max(1, g / c_p)
  chain (pipeline over h hops of S bytes, k = max(1, S / c_p) chunks):
      T_p = L_p + (k + h - 1) * (a_p + (S / k) / r_p)
and the protocol run is argmin_p T_p, as NCCL's tuner picks the fastest predicted one.
L_p is the protocol's per-call base latency (launch and setup). k is kept continuous (a smooth fit); the DES rounds it. See docs/models/collectives.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from simcluster.collectives import primitives
from simcluster.collectives.protocol import PROTOCOLS, ProtocolParams
from simcluster.collectives.schedule import Schedule, bus_factor, canonical_op, schedule


@dataclass(frozen=True)
class CollectiveParams:
    """A calibrated intra-node collective model (the `params` of a collective model card)."""

    link_bandwidth_Bps: float
    protocols: dict[str, ProtocolParams]

    # What the fabric layer reads from any intra-node card (PrimitiveParams has the same two).
    @property
    def base_latency_s(self) -> float:
        return min(p.base_latency_s for p in self.protocols.values())

    @property
    def simple_step_latency_s(self) -> float:
        return self.protocols["Simple"].step_latency_s

    def protocol_time_s(self, sched: Schedule, proto: ProtocolParams) -> float:
        rate = proto.rate_Bps(self.link_bandwidth_Bps)
        if sched.kind == "none":
            return proto.base_latency_s
        if sched.kind == "ring":
            chunks = max(1.0, sched.segment_bytes / proto.chunk_bytes)
            return proto.base_latency_s + sched.sends * (chunks * proto.step_latency_s + sched.segment_bytes / rate)
        chunks = max(1.0, sched.segment_bytes / proto.chunk_bytes)
        per_chunk = proto.step_latency_s + sched.segment_bytes / chunks / rate
        return proto.base_latency_s + (chunks + sched.sends - 1) * per_chunk


@dataclass(frozen=True)
class Prediction:
    op: str
    size_bytes: int
    nranks: int
    time_s: float
    protocol: str

    @property
    def algbw_Bps(self) -> float:
        return self.size_bytes / self.time_s if self.time_s > 0 else 0.0

    @property
    def busbw_Bps(self) -> float:
        return self.algbw_Bps * bus_factor(self.op, self.nranks)


def predict(params, op: str, size_bytes: int, nranks: int, protocol: str | None = None,
            host_launch: bool = False) -> Prediction:
    """Predicted time of one collective call; the fastest protocol unless one is forced.
    `params` is a CollectiveParams (chunked ring model) or a PrimitiveParams (NCCL-primitives model,
    collectives/primitives.py); `host_launch` applies that model's host launch floor."""
    if isinstance(params, primitives.PrimitiveParams):
        t, proto = primitives.call_time(params, op, size_bytes, nranks, host_launch, protocol)
        return Prediction(canonical_op(op), int(size_bytes), nranks, t, proto)
    sched = schedule(op, size_bytes, nranks)
    names = [protocol] if protocol else [p for p in PROTOCOLS if p in params.protocols]
    best = min(names, key=lambda name: params.protocol_time_s(sched, params.protocols[name]))
    return Prediction(sched.op, int(size_bytes), nranks, params.protocol_time_s(sched, params.protocols[best]), best)
