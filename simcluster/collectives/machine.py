"""Kind terms apart from machine terms: a kind card plus one machine's terms is that machine's collective model.

A kind card (e.g. models/collective/h200-nvlink-kind.yaml) holds what every machine of one GPU / NVLink kind
shares: bandwidths, step latencies, channels, NCCL's tables, the ring ramp and the per-op profiles of NCCL's
kernels. A machine card names its kind card and holds only what belongs to that one machine, fitted from a
short small-size probe (`simcluster collect --tools nccl-probe`; fit/machine.py):

    launch              how the probe was timed: cuda_graph (nccl-tests -G) or host (plain nccl-tests)
    latency_offset      a, seconds added to every call's fixed latency (the LL and Simple base latencies)
    host_launch_floor   f, the shortest host-launched call (the host's launch interval); 0 for a CUDA-graph probe

    T_machine(op, S) = max(T_kind(op, S) with L_LL + a, L_S + a, f) x profile_op(S)

Card layout (params of a `kind: collective` card):

    params: {kind_card: h200-nvlink-kind.yaml, launch: host, latency_offset: -1.8us, host_launch_floor: 12.2us}

The kind card's path is relative to the machine card's folder. See docs/models/collectives.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from simcluster import card_document
from simcluster.collectives import card_params
from simcluster.units import format_time

LAUNCH_MODES = ("cuda_graph", "host")


@dataclass(frozen=True)
class MachineTerms:
    launch: str                      # "cuda_graph" or "host": how the machine's probe was timed
    latency_offset_s: float          # added to each protocol's base latency
    host_floor_s: float = 0.0        # the shortest host-launched call; 0 when the probe ran as CUDA graphs

    def to_params_yaml(self, kind_card: str) -> dict:
        sign = "-" if self.latency_offset_s < 0 else ""
        return {"kind_card": kind_card, "launch": self.launch,
                "latency_offset": sign + format_time(abs(self.latency_offset_s)),
                "host_launch_floor": format_time(self.host_floor_s)}


def is_machine_card(params) -> bool:
    return isinstance(params, dict) and "kind_card" in params


def machine_terms(params: dict, where: str) -> MachineTerms:
    """The machine terms of a machine card's params (`where`: its file), read through card_params.MachineTerms."""
    p = card_document.declared(params, where, card_params.MachineTerms)
    return MachineTerms(p.launch, p.latency_offset, p.host_launch_floor)


def compose(kind, terms: MachineTerms):
    """The machine's model: the kind's model (any per-op profile kept) with the machine terms in place."""
    return kind.with_machine(terms.latency_offset_s, terms.host_floor_s)
