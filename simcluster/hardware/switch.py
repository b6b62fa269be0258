"""In-network aggregation in a tree of switches: store-and-forward versus cut-through (seed 003), level by level.

N workers each send an S-byte vector up an aggregation tree of L switch levels (one leaf: L = 1; leaves and a
spine: 2; a fat tree: one level per tier the job's nodes span, `network/builders.aggregation_levels`); every
switch sums what its children send and passes the sum up; the root's result comes back down the same L levels.
  store-and-forward (SHArP-like): each level stores a whole aggregation buffer of b bytes from every child before
  it reduces and forwards it; a message is split into ceil(S/b) such operations done one after another, each
  paying the operation latency and, per level, the buffer's serialisation up and down and its reduction:
      T_SF = ceil(S/b) * (L_op + 2 (L-1) l_hop + L * (2 b / B + b / R))
  cut-through (seed 003's FPGA, SHARP's streaming aggregation): the sum at a level starts once `threshold` frames
  of every child are in and streams on at the slower of the wire payload rate and the aggregation throughput, so
  each level adds its threshold and one frame on the way down, and the stream itself is paid once:
      T_CT = L_op + 2 (L-1) l_hop + L * (threshold + 1) * F / B_wire + S / min(B, R)
B_wire is the line rate, B = min(B_wire * payload / (frame + overhead), what else caps the worker's stream - the
PCIe link between GPU and NIC), F the frame size on the wire, l_hop one level's link and switch latency (from the
fabric). R is the switch's aggregation (ALU) throughput per tree; where more trees need one switch at once than it
runs (`trees_per_switch`, SHARP's documented limits: one streaming tree per Quantum switch, one per port on
Quantum-2), they take turns: R x trees_per_switch / trees. Worker-side latency (host stack, PCIe copies) is in
L_op. With L = 1 and one tree these are seed 003's single-switch forms. docs/models/fabric.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

FORWARDING = ("store-and-forward", "cut-through")


@dataclass(frozen=True)
class AggregationParams:
    forwarding: str
    line_rate_Bps: float
    op_latency_s: float            # one aggregation operation's fixed latency (workers + the first switch)
    aggregation_Bps: float         # the switch's reduction (ALU) throughput for one tree
    buffer_bytes: float = 4096.0   # store-and-forward: bytes per operation
    threshold_frames: int = 1      # cut-through: frames per worker before the sum starts
    frame_payload_bytes: float = 1480.0
    frame_wire_bytes: float = 1538.0  # payload + headers + FCS + preamble + inter-frame gap
    trees_per_switch: int | None = None   # trees (jobs x rails) one switch aggregates at once; None: no limit stated
    max_levels: int | None = None         # the deepest tree the switches' aggregation manager builds; None: no limit

    def __post_init__(self):
        if self.forwarding not in FORWARDING:
            raise ValueError(f"forwarding must be one of {FORWARDING}, got {self.forwarding!r}")

    @property
    def payload_Bps(self) -> float:
        return self.line_rate_Bps * self.frame_payload_bytes / self.frame_wire_bytes

    def tree_rate_Bps(self, trees: int = 1) -> float:
        """One tree's aggregation throughput when `trees` trees need the busiest switch at once."""
        if self.trees_per_switch is None or trees <= self.trees_per_switch:
            return self.aggregation_Bps
        return self.aggregation_Bps * self.trees_per_switch / trees

    def terms(self, size_bytes: float, levels: int = 1, hop_latency_s: float = 0.0, stream_cap_Bps: float = math.inf,
              trees: int = 1) -> dict:
        """The parts of one all_reduce of size_bytes per worker through the tree: 'fixed_s' (latency, levels),
        'stream_s' (bytes at the binding rate), 'rate_Bps' and what binds it ('payload', 'stream cap', 'alu',
        'trees'), 'time_s' their total."""
        payload = min(self.payload_Bps, stream_cap_Bps)
        r_agg = self.tree_rate_Bps(trees)
        climb = 2 * (levels - 1) * hop_latency_s
        if self.forwarding == "store-and-forward":
            b = self.buffer_bytes
            ops = max(1, math.ceil(size_bytes / b))
            fixed = ops * (self.op_latency_s + climb)
            stream = ops * levels * (2 * b / payload + b / r_agg)
            rate = size_bytes / stream if stream > 0 else payload
            binds = "alu" if b / r_agg > 2 * b / payload else None
        else:
            frame = self.frame_wire_bytes / self.line_rate_Bps
            fixed = self.op_latency_s + climb + levels * (self.threshold_frames + 1) * frame
            rate = min(payload, r_agg)
            stream = size_bytes / rate
            binds = "alu" if r_agg < payload else None
        if binds == "alu":
            binds = "trees" if r_agg < self.aggregation_Bps else "alu"
        else:
            binds = "stream cap" if stream_cap_Bps < self.payload_Bps else "payload"
        return {"fixed_s": fixed, "stream_s": stream, "rate_Bps": rate, "binds": binds, "time_s": fixed + stream}

    def allreduce_time_s(self, size_bytes: float, levels: int = 1, hop_latency_s: float = 0.0,
                         stream_cap_Bps: float = math.inf, trees: int = 1) -> float:
        return self.terms(size_bytes, levels, hop_latency_s, stream_cap_Bps, trees)["time_s"]

    def throughput_Bps(self, size_bytes: float, levels: int = 1, hop_latency_s: float = 0.0) -> float:
        return size_bytes / self.allreduce_time_s(size_bytes, levels, hop_latency_s)
