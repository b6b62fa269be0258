"""NIC transport models: RDMA (transport offloaded to the NIC) and TCP (onloaded to host cores).

A stream of messages of m bytes moves at
    rate = min(line_rate * efficiency,  cores_for_it / cpu_per_byte_eff)
    cpu_per_byte_eff = cpu_s_per_byte + cpu_s_per_message / m      (core-seconds per byte)
where the cores a transport can use are min(streams, cores free): a kernel TCP stream is
processed on one core at a time, so one qperf stream is CPU-bound on one core long before a
100 Gb/s port is full (seed 000: 16.9 Gb/s). RDMA's per-byte cost is the NIC's, not the host's:
its host cost is tiny and bandwidth is the port's. CPU use (cores) = rate * cpu_per_byte_eff.
Small-message one-way latency is the qperf *_lat figure: host stack + NIC + one switch.
See docs/models/nic-and-cpu.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from simcluster.hardware.pcie import PcieLink

TRANSPORTS = ("rdma", "tcp")


@dataclass(frozen=True)
class NicParams:
    transport: str
    line_rate_Bps: float
    efficiency: float          # achievable payload rate / line rate when the CPU is not the limit
    latency_s: float           # one-way small-message latency, host to host
    cpu_s_per_byte: float      # host core-seconds per byte (sender and receiver each)
    cpu_s_per_message: float = 0.0
    message_bytes: float = 65536.0  # qperf's default message size
    pcie: PcieLink | None = None    # the NIC's own host interface (ConnectX-7: gen5x16); None: not stated on the card

    def __post_init__(self):
        if self.transport not in TRANSPORTS:
            raise ValueError(f"transport must be one of {TRANSPORTS}, got {self.transport!r}")

    @property
    def wire_limit_Bps(self) -> float:
        return self.line_rate_Bps * self.efficiency

    def cpu_per_byte(self, message_bytes: float | None = None) -> float:
        m = message_bytes or self.message_bytes
        return self.cpu_s_per_byte + self.cpu_s_per_message / m

    def rate_Bps(self, streams: int = 1, cores_free: float = float("inf"), message_bytes: float | None = None) -> float:
        """Throughput of `streams` concurrent streams given the cores the host can spare."""
        cost = self.cpu_per_byte(message_bytes)
        if cost <= 0:
            return self.wire_limit_Bps
        cores = min(float(streams), cores_free)
        return min(self.wire_limit_Bps, cores / cost)

    def cores_used(self, rate_Bps: float, message_bytes: float | None = None) -> float:
        """Host cores busy moving rate_Bps (one side)."""
        return rate_Bps * self.cpu_per_byte(message_bytes)

