"""The chunked ring model (cards without `params.model`, or `model: chunked-ring`): NCCL's schedules as chunks.

For protocol p with per-chunk latency a_p, chunk size c_p and rate r_p = f_p * B:
  ring  (each rank sends m segments of g bytes in turn):
      T_p = L_p + m * (k * a_p + g / r_p),      k = max(1, g / c_p)
  chain (pipeline over h hops of S bytes, k = max(1, S / c_p) chunks):
      T_p = L_p + (k + h - 1) * (a_p + (S / k) / r_p)
and the protocol run is argmin_p T_p, as NCCL's tuner picks the fastest predicted one.
L_p is the protocol's per-call base latency (launch and setup). k is kept continuous (a smooth fit); the
chunk-level DES (collectives/des.py) runs the same schedule with k rounded. See docs/models/collectives.md.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from simcluster import card_document
from simcluster.collectives import card_params
from simcluster.collectives.interface import BareModel, DesTerms
from simcluster.collectives.protocol import PROTOCOLS, ProtocolParams
from simcluster.collectives.schedule import Schedule, schedule
from simcluster.errors import ModelCardError
from simcluster.units import format_bandwidth, format_size, format_time


@dataclass(frozen=True)
class ChunkedRingParams(BareModel):
    """A calibrated intra-node collective model: one bandwidth and LL / LL128 / Simple protocol parameters."""

    model_name: ClassVar[str] = "chunked-ring"

    link_bandwidth_Bps: float
    protocols: dict[str, ProtocolParams]

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
        chunks = max(1.0, sched.segment_bytes / proto.chunk_bytes)
        if sched.kind == "ring":
            return proto.base_latency_s + sched.sends * (chunks * proto.step_latency_s + sched.segment_bytes / rate)
        per_chunk = proto.step_latency_s + sched.segment_bytes / chunks / rate
        return proto.base_latency_s + (chunks + sched.sends - 1) * per_chunk

    def call_time(self, op: str, size_bytes: float, nranks: int, host_launch: bool = False,
                  protocol: str | None = None) -> tuple[float, str]:
        sched = schedule(op, size_bytes, nranks)
        names = [protocol] if protocol in self.protocols else [p for p in PROTOCOLS if p in self.protocols]
        best = min(names, key=lambda name: self.protocol_time_s(sched, self.protocols[name]))
        return self.protocol_time_s(sched, self.protocols[best]), best

    def des_terms(self, op: str, size_bytes: float, nranks: int, protocol: str | None = None) -> DesTerms:
        total, name = self.call_time(op, size_bytes, nranks, protocol=protocol)
        p = self.protocols[name]
        sched = schedule(op, size_bytes, nranks)
        chunks = max(1, round(sched.segment_bytes / p.chunk_bytes)) if sched.kind != "none" else 0
        steps = sched.sends * chunks if sched.kind == "ring" else chunks + sched.sends - 1 if chunks else 0
        latency = p.base_latency_s + steps * p.step_latency_s
        return DesTerms(name, p.base_latency_s, p.step_latency_s, p.chunk_bytes, p.rate_Bps(self.link_bandwidth_Bps),
                        latency, max(0.0, total - latency))

    def notes(self, op: str, nranks: int, host_launch: bool) -> list[str]:
        return ["the chunked ring model has no host launch floor: host-launched calls are predicted as GPU time"] \
            if host_launch else []

    def with_machine(self, latency_offset_s: float, host_floor_s: float) -> ChunkedRingParams:
        if host_floor_s:
            raise ModelCardError("the chunked ring model has no host launch floor; a machine card of a chunked-ring "
                                 "kind is fitted on CUDA-graph probes only")
        return ChunkedRingParams(self.link_bandwidth_Bps, {
            name: replace(p, base_latency_s=p.base_latency_s + latency_offset_s) for name, p in self.protocols.items()})

    def to_params_yaml(self) -> dict:
        return {"link_bandwidth": format_bandwidth(self.link_bandwidth_Bps),
                "protocols": {name: {"base_latency": format_time(p.base_latency_s),
                                     "step_latency": format_time(p.step_latency_s),
                                     "bandwidth_fraction": round(p.bandwidth_fraction, 4),
                                     "chunk": format_size(p.chunk_bytes)} for name, p in self.protocols.items()}}

    @classmethod
    def from_params_yaml(cls, params: dict, where: str) -> ChunkedRingParams:
        """From a card's params (`where`: its file), read through card_params.ChunkedRing."""
        p = card_document.declared(params, where, card_params.ChunkedRing, protocol=PROTOCOLS)
        return cls(p.link_bandwidth, {name: ProtocolParams(name, q.base_latency, q.step_latency, float(q.bandwidth_fraction),
                                                           q.chunk) for name, q in p.protocols.items()})



