"""Host CPU of RDMA verbs per operation (docs/models/nic-and-cpu.md, "RDMA verbs per operation"; issue 42, session 36).

An RDMA NIC moves the bytes; the host's core builds work-queue elements (WQEs), tells the NIC about them and learns
that they completed. One side of a stream of m-byte messages costs, in core-seconds per message,

    C(m) = wqes(m) * [ wqe + inline * p(m) + doorbell / batch + completion / signal_every ]
    wqes(m) = ceil(m / mtu) on a datagram transport (UD: one WQE per MTU), 1 on a connected one (mtu unset)
    p(m)    = the payload bytes a WQE carries inline (its share of m, when at most inline_max), else 0

  wqe          building one WQE (its header; on the server of a request-response exchange also the request's detection
               and handling, which the fit rows include), core-seconds
  inline       copying an inlined payload byte into the WQE, core-seconds per byte
  doorbell     one MMIO write to the NIC: ringing the doorbell for a batch of `batch` WQEs posted together (Doorbell
               batching), or, with batch 1, writing the WQE itself by MMIO (WQE-by-MMIO / BlueFlame)
  completion   one completion reaped: with `completion: polled` a completion-queue entry read by a polling core, one
               per `signal_every` WQEs (unsignalled WQEs make none); with `completion: event` an interrupt and the
               wake-up of the thread waiting for it, one per `signal_every` WQEs (event batching)

Polled verbs need no core that spins whatever the rate: the cores busy are what the message rate needs,
rate / m * C(m) (no per-stream cap). A core that polls an empty queue is busy in a benchmark's CPU reading (seed 004's
warning), which is no work: that is the card's `polling_cores`, not this.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

COMPLETIONS = ("polled", "event")
COST_FIELDS = ("cpu_s_per_wqe", "cpu_s_per_doorbell", "cpu_s_per_completion", "cpu_s_per_inline_byte")


@dataclass(frozen=True)
class VerbsCost:
    completion: str                 # COMPLETIONS: how completions are learnt
    cpu_s_per_wqe: float            # core-seconds per WQE built and posted
    cpu_s_per_doorbell: float       # core-seconds per MMIO doorbell (or per WQE written by MMIO when batch is 1)
    cpu_s_per_completion: float = 0.0   # core-seconds per completion reaped (polled: a CQE read; event: an interrupt)
    cpu_s_per_inline_byte: float = 0.0  # core-seconds per payload byte copied into a WQE
    wqes_per_doorbell: float = 1.0  # WQEs posted per doorbell (1: WQE-by-MMIO)
    signal_every: float = 1.0       # WQEs per signalled completion
    inline_max_bytes: float = 0.0   # largest payload a WQE carries inline; 0: nothing inlined
    mtu_bytes: float | None = None  # datagram transport: the most bytes one WQE carries; None: one WQE per message

    def __post_init__(self):
        if self.completion not in COMPLETIONS:
            raise ValueError(f"completion must be one of {COMPLETIONS}, got {self.completion!r}")
        if self.wqes_per_doorbell < 1 or self.signal_every < 1:
            raise ValueError("wqes_per_doorbell and signal_every must be >= 1")
        if min(getattr(self, f) for f in COST_FIELDS) < 0 or self.inline_max_bytes < 0:
            raise ValueError("verbs costs and inline_max must be >= 0")
        if self.mtu_bytes is not None and not self.mtu_bytes > 0:
            raise ValueError(f"mtu must be > 0, got {self.mtu_bytes!r}")

    def wqes(self, message_bytes: float) -> float:
        """WQEs one m-byte message takes: ceil(m / mtu) on a datagram transport, else 1."""
        if self.mtu_bytes is None:
            return 1.0
        return float(max(1, math.ceil(message_bytes / self.mtu_bytes)))

    def per_wqe(self, payload_bytes: float) -> float:
        """Core-seconds of one WQE carrying `payload_bytes` (inlined when at most inline_max)."""
        inline = payload_bytes if 0 < payload_bytes <= self.inline_max_bytes else 0.0
        return (self.cpu_s_per_wqe + self.cpu_s_per_inline_byte * inline
                + self.cpu_s_per_doorbell / self.wqes_per_doorbell + self.cpu_s_per_completion / self.signal_every)

    def per_message(self, message_bytes: float) -> float:
        """C(m): core-seconds of one m-byte message on one side."""
        n = self.wqes(message_bytes)
        return n * self.per_wqe(message_bytes / n)

    def at(self, wqes_per_doorbell: float | None = None, signal_every: float | None = None) -> VerbsCost:
        """The same costs driven at another batching / signalling (None: as is)."""
        return dataclasses.replace(self, wqes_per_doorbell=wqes_per_doorbell or self.wqes_per_doorbell,
                                   signal_every=signal_every or self.signal_every)

    def at_clock(self, clock: float) -> VerbsCost:
        """Every core-second term / clock (cores at `clock` x the frequency the costs were measured at)."""
        return dataclasses.replace(self, **{f: getattr(self, f) / clock for f in COST_FIELDS})


def solve(points: list[tuple[float, float]]) -> tuple[float, float]:
    """(wqe, doorbell) in core-seconds from points (wqes_per_doorbell, seconds per WQE) at one signalling: the least
    squares line t = wqe + doorbell / batch (exact through two points); ValueError when the batches do not differ or
    a cost comes out negative (the points then contradict the model)."""
    if len({b for b, _ in points}) < 2:
        raise ValueError("the fit needs rows at two different wqes_per_doorbell")
    xs, ys = [1.0 / b for b, _ in points], [t for _, t in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    doorbell = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)
    wqe = my - doorbell * mx
    if wqe < 0 or doorbell < 0:
        raise ValueError(f"the rows give a negative cost (wqe {wqe * 1e9:.1f} ns, doorbell {doorbell * 1e9:.1f} ns)")
    return wqe, doorbell
