"""A host's side of a transport: its cores, their clock and its memory bandwidth around a NIC card (hardware/nic.py).

    cost(m)   = nic.cpu_per_byte(m) / clock          the card's costs are core-seconds at the clock it was measured at;
                                                      a core at `clock` x that frequency does the same cycles faster
    traffic   = 1 + 2 * copies                        DRAM bytes per payload byte on one side: the NIC's DMA, and a read
                                                      and a write per CPU copy (copies = 1 when the card has a copy
                                                      term or is a kernel transport with any CPU cost, 0 for RDMA
                                                      verbs placing data in user memory)
    rate      = min(wire, usable_cores / cost(m), memory_Bps / traffic)
    cores     = polling_cores + rate * cost(m)

`idle_clock` is seed 004's other finding: with the transport offloaded, the host's idle cores clocked down to 59% of
nominal (power saved); with it onloaded they ran at full speed. It does not change the rate or the cores; it is
reported so a comparison of the two can say what the offload saved besides cores (tutorial 03).
"""

from __future__ import annotations

from dataclasses import dataclass

from simcluster.hardware.nic import NicParams


@dataclass(frozen=True)
class Host:
    cores: float
    clock: float = 1.0                   # core frequency / the frequency the NIC card's costs were measured at
    memory_Bps: float = float("inf")     # DRAM bandwidth the transport may use on this host
    idle_clock: float = 1.0              # frequency / nominal that idle cores drop to (seed 004, offload: 0.59)

    def __post_init__(self):
        for name in ("cores", "clock", "memory_Bps", "idle_clock"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and value > 0):
                raise ValueError(f"host {name}: expected a number > 0, got {value!r}")


def memory_traffic(nic: NicParams) -> float:
    """DRAM bytes per payload byte on one side: a CPU copy where the card prices one per byte, or where a kernel
    transport (tcp, udp) costs the CPU anything (a count-model card without GSO carries its copy in the per-packet
    term: every payload byte rides in an MSS segment)."""
    copies = nic.cpu_s_per_byte > 0 or (nic.transport in ("tcp", "udp") and nic.cpu_per_byte() > 0)
    return 1.0 + (2.0 if copies else 0.0)


def on_host(nic: NicParams, host: Host, streams: int = 1, message_bytes: float | None = None,
            cores_free: float | None = None, side: str = "send") -> tuple[float, float]:
    """(rate in bytes/s, host cores busy on `side`, send or receive) of `streams` streams on this host; `cores_free`
    defaults to all its cores."""
    free = host.cores if cores_free is None else min(cores_free, host.cores)
    scaled = nic.at_clock(host.clock)      # the card's costs at this host's clock (same cycles, scaled time)
    rate = min(scaled.rate_Bps(streams, free, message_bytes), host.memory_Bps / memory_traffic(nic))
    return rate, scaled.cores_used(rate, message_bytes, side)
