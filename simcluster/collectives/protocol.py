"""NCCL's three protocols as cost-model parameters.

A protocol p costs base_latency_s once per call (kernel launch, setup: NCCL's baseLatencies),
moves data in chunks of at most chunk_bytes; every chunk sent costs step_latency_s
(the flag/fence synchronisation of that protocol) and moves at bandwidth_fraction x the link's
bandwidth (LL carries 4 bytes of data per 8-byte line, LL128 120 of 128, Simple all).
"""

from __future__ import annotations

from dataclasses import dataclass

PROTOCOLS = ("LL", "LL128", "Simple")

# NCCL src/graph/tuning.cc hwLatencies[NVLINK][RING] (us): the per-step latency NCCL assumes.
NCCL_NVLINK_STEP_LATENCY_S = {"LL": 0.6e-6, "LL128": 1.9e-6, "Simple": 3.4e-6}


@dataclass(frozen=True)
class ProtocolParams:
    name: str
    base_latency_s: float
    step_latency_s: float
    bandwidth_fraction: float
    chunk_bytes: float

    def rate_Bps(self, link_bandwidth_Bps: float) -> float:
        return self.bandwidth_fraction * link_bandwidth_Bps
