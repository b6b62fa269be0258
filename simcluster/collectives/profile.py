"""Measured per-op profile: how each collective's time departs from the NCCL-primitives model on one kind of machine.

The primitives model (collectives/primitives.py) is fitted on all_reduce alone; what it cannot know is how NCCL's
other kernels differ from all_reduce's on given GPUs (p2p fixed latency, reduce_scatter's 2-rank bandwidth, the
ramp with size). A profile is that difference, measured once on a reference machine that ran every op:

    f_op(S) = measured_op(S) / model_op(S)         on the reference, its own all_reduce-fitted card
    T_op(S) = model_op(S) x f_op(S)                 on another machine of the same kind, its own all_reduce card

log f is interpolated linearly in log2(S) between the measured sizes and held at the end values outside them.
A profile holds for one rank count and one launch mode (CUDA graph or host-launched); it is not applied to any
other (measured: a 2-rank profile does not improve 4-rank predictions). See docs/models/collectives.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class OpProfile:
    ranks: int
    cuda_graph: bool                           # measured as CUDA graphs (GPU time) or host-launched
    ops: dict                                  # op -> (sizes_B, log factors), both tuples in increasing size
    source: str = ""                           # where it was measured (bundle or logs)

    @property
    def launch(self) -> str:
        return "cuda_graph" if self.cuda_graph else "host"

    def factor(self, op: str, size: float) -> float:
        if op not in self.ops or size <= 0:
            return 1.0
        sizes, logs = self.ops[op]
        return math.exp(float(np.interp(math.log2(size), np.log2(sizes), logs)))


def matching(profiles: tuple[OpProfile, ...], ranks: int, host_launch: bool) -> OpProfile | None:
    """The profile measured at this rank count and launch mode, if the card has one."""
    return next((p for p in profiles if p.ranks == ranks and p.cuda_graph != host_launch), None)


@dataclass(frozen=True)
class Profiled:
    """Any collective model times the per-op profile measured at the call's rank count and launch mode (a card
    whose params carry `op_profiles`); elsewhere the base model alone."""

    base: object                               # a CollectiveModel
    profiles: tuple[OpProfile, ...]

    model_name = "per-op profile"

    @property
    def base_latency_s(self) -> float:
        return self.base.base_latency_s

    @property
    def simple_step_latency_s(self) -> float:
        return self.base.simple_step_latency_s

    @property
    def link_bandwidth_Bps(self) -> float:
        return self.base.link_bandwidth_Bps

    def call_time(self, op: str, size_bytes: float, nranks: int, host_launch: bool = False,
                  protocol: str | None = None) -> tuple[float, str]:
        from simcluster.collectives.schedule import canonical_op

        t, proto = self.base.call_time(op, size_bytes, nranks, host_launch, protocol)
        profile = matching(self.profiles, nranks, host_launch)
        return (t * profile.factor(canonical_op(op), size_bytes) if profile else t), proto

    def des_terms(self, op: str, size_bytes: float, nranks: int, protocol: str | None = None):
        from simcluster.collectives.schedule import canonical_op

        terms = self.base.des_terms(op, size_bytes, nranks, protocol)
        profile = matching(self.profiles, nranks, False)
        return terms.scaled(profile.factor(canonical_op(op), size_bytes)) if profile else terms

    def notes(self, op: str, nranks: int, host_launch: bool) -> list[str]:
        used = matching(self.profiles, nranks, host_launch)
        return self.base.notes(op, nranks, host_launch) + [
            f"per-op profile measured on {p.source or 'a reference machine'}: "
            f"{'applied' if p is used else f'not applied ({p.ranks} ranks, {p.launch})'}" for p in self.profiles]

    def to_params_yaml(self) -> dict:
        return self.base.to_params_yaml() | {"op_profiles": op_profiles_yaml(self.profiles)}

    def with_machine(self, latency_offset_s: float, host_floor_s: float) -> Profiled:
        return Profiled(self.base.with_machine(latency_offset_s, host_floor_s), self.profiles)


def unprofiled(model):
    """The model under any per-op profile."""
    return model.base


def op_profiles_yaml(profiles) -> list[dict]:
    """Per-op profiles as a card stores them: measured / model per size, 4 decimals."""
    from simcluster.units import format_size

    return [{"ranks": p.ranks, "launch": p.launch, "source": p.source,
             "measured_over_model": {op: {format_size(s): round(math.exp(v), 4) for s, v in zip(*p.ops[op], strict=True)}
                                     for op in p.ops}} for p in profiles]


def op_profiles(raw, where: str) -> tuple[OpProfile, ...]:
    """Per-op profiles from a card (a list of {ranks, launch, source, measured_over_model}; `where`: the card's file),
    read through card_params.OpProfiles."""
    from simcluster import card_document
    from simcluster.collectives import card_params
    from simcluster.collectives.schedule import OPS

    declared = card_document.declared({"op_profiles": raw}, where, card_params.OpProfiles, op=OPS)
    out = []
    for doc in declared.op_profiles:
        ops = {}
        for op, table in doc.measured_over_model.items():
            pairs = sorted((float(size), math.log(factor)) for size, factor in table.items())
            ops[op] = (tuple(s for s, _ in pairs), tuple(v for _, v in pairs))
        out.append(OpProfile(doc.ranks, doc.launch == "cuda_graph", ops, str(doc.source)))
    return tuple(out)
