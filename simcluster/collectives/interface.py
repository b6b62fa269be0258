"""The one interface every collective model implements, and the registry that reads them from cards.

A collective model answers one question: how long one call of `op` on `size_bytes` over `nranks` GPUs of one
NVLink domain takes, and with which protocol. The models:

  chunked-ring     collectives/chunked_ring.py   NCCL's schedules as chunks
  nccl-primitives  collectives/primitives.py     NCCL's primitives, protocols, channels and tuner table
  (per-op profile) collectives/profile.py        any model x a measured per-op correction (a wrapper)

The chunk-level DES (collectives/des.py) runs any of them: a model gives, for one call, the terms the DES moves
chunks with (`des_terms`: protocol, per-call base latency, per-send step latency, chunk size, per-link rate cap),
chosen so that without contention the DES reproduces the model's closed form.

Across nodes, collectives/fabric.py composes an intra-node model with the NIC and fabric models; it reads only
this interface (base_latency_s, simple_step_latency_s, call_time). A card's `params.model` names the model
(no key: chunked-ring, the first format); `params.op_profiles` wraps it in a per-op profile.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar, Protocol, runtime_checkable


@dataclass(frozen=True)
class DesTerms:
    """What the chunk DES needs for one call: each rank's sends (or hops) of the schedule move in chunks of
    chunk_bytes at no more than rate_Bps each, every chunk first waiting step_latency_s; the call costs
    base_latency_s once. latency_s and moving_s split the uncontended time (all latencies, all byte time)."""
    protocol: str
    base_latency_s: float
    step_latency_s: float
    chunk_bytes: float
    rate_Bps: float
    latency_s: float
    moving_s: float

    def scaled(self, factor: float) -> DesTerms:
        """The same call taking `factor` times as long: slower, every term stretched; faster, the latencies shrink
        first (the rate cap stays at or below the link's while the latencies can absorb it)."""
        if factor >= 1 or self.latency_s <= 0:
            return replace(self, base_latency_s=self.base_latency_s * factor, step_latency_s=self.step_latency_s * factor,
                           rate_Bps=self.rate_Bps / factor, latency_s=self.latency_s * factor,
                           moving_s=self.moving_s * factor)
        budget = factor * (self.latency_s + self.moving_s) - self.moving_s
        if budget < 0:
            return replace(self, base_latency_s=0.0, step_latency_s=0.0, latency_s=0.0,
                           rate_Bps=self.rate_Bps * self.moving_s / (self.moving_s + budget), moving_s=self.moving_s + budget)
        g = budget / self.latency_s
        return replace(self, base_latency_s=self.base_latency_s * g, step_latency_s=self.step_latency_s * g,
                       latency_s=budget)


@runtime_checkable
class CollectiveModel(Protocol):
    model_name: ClassVar[str]          # the card's params.model

    @property
    def base(self) -> CollectiveModel: ...          # the model under any per-op profile (itself when none)

    @property
    def profiles(self) -> tuple: ...                # the per-op profiles it carries (collectives/profile.py)

    @property
    def base_latency_s(self) -> float: ...          # the smallest per-call latency (fabric layer)

    @property
    def simple_step_latency_s(self) -> float: ...   # one Simple pipeline step (fabric layer)

    @property
    def link_bandwidth_Bps(self) -> float: ...      # the NVLink rate the model was fitted to

    def call_time(self, op: str, size_bytes: float, nranks: int, host_launch: bool = False,
                  protocol: str | None = None) -> tuple[float, str]: ...

    def des_terms(self, op: str, size_bytes: float, nranks: int, protocol: str | None = None) -> DesTerms: ...
                                                    # the chunk DES's terms for one call (GPU time)

    def notes(self, op: str, nranks: int, host_launch: bool) -> list[str]: ...

    def to_params_yaml(self) -> dict: ...

    def with_machine(self, latency_offset_s: float, host_floor_s: float) -> CollectiveModel: ...
                                                    # one machine's terms on a kind's model (collectives/machine.py)

    @classmethod
    def from_params_yaml(cls, params: dict, where: str) -> CollectiveModel: ...


class BareModel:
    """What every model without a per-op profile shares: it is its own base and carries no profile."""

    profiles: ClassVar[tuple] = ()

    @property
    def base(self):
        return self
