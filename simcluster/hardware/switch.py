"""In-network aggregation in a switch: store-and-forward versus cut-through (seed 003).

N workers each send an S-byte vector to the aggregation switch, which returns the sum.
  store-and-forward (SHArP-like): the switch stores a whole aggregation buffer of b bytes from
  every worker before it reduces and sends it back; a message is split into ceil(S/b) such
  operations done one after another, each paying the operation latency:
      T_SF = ceil(S/b) * (L_op + 2 * b / B + b / R_agg)
  cut-through (seed 003's FPGA): the sum starts once `threshold` frames of every worker are in,
  and streams at the slower of the wire payload rate and the aggregation throughput:
      T_CT = L_op + threshold * F / B_wire + S / min(B_payload, R_agg) + F / B_wire
B_wire is the line rate, B_payload = B_wire * payload / (frame + overhead), F the frame size on
the wire. Worker-side latency (host stack, PCIe copies) is in L_op. See docs/models/fabric.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

FORWARDING = ("store-and-forward", "cut-through")


@dataclass(frozen=True)
class AggregationParams:
    forwarding: str
    line_rate_Bps: float
    op_latency_s: float            # one aggregation operation's fixed latency (workers + switch)
    aggregation_Bps: float         # the switch's reduction throughput
    buffer_bytes: float = 4096.0   # store-and-forward: bytes per operation
    threshold_frames: int = 1      # cut-through: frames per worker before the sum starts
    frame_payload_bytes: float = 1480.0
    frame_wire_bytes: float = 1538.0  # payload + headers + FCS + preamble + inter-frame gap

    def __post_init__(self):
        if self.forwarding not in FORWARDING:
            raise ValueError(f"forwarding must be one of {FORWARDING}, got {self.forwarding!r}")

    @property
    def payload_Bps(self) -> float:
        return self.line_rate_Bps * self.frame_payload_bytes / self.frame_wire_bytes

    def allreduce_time_s(self, size_bytes: float) -> float:
        if self.forwarding == "store-and-forward":
            b = self.buffer_bytes
            ops = max(1, math.ceil(size_bytes / b))
            return ops * (self.op_latency_s + 2 * b / self.payload_Bps + b / self.aggregation_Bps)
        frame = self.frame_wire_bytes / self.line_rate_Bps
        return (self.op_latency_s + self.threshold_frames * frame
                + size_bytes / min(self.payload_Bps, self.aggregation_Bps) + frame)

    def throughput_Bps(self, size_bytes: float) -> float:
        return size_bytes / self.allreduce_time_s(size_bytes)
