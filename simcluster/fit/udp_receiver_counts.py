"""The UDP receiver's host cost per datagram as counted events (issue 42, session 33, tso; docs/models/nic-and-cpu.md,
"UDP receiver count model"). The receiver's CPU (the server process), core-seconds per m-byte datagram received:

    C(m) = dgram + wake * W(m) + frag * n(m) + byte * m
    n(m) = IP fragments (udp_counts.fragments: 1 on loopback)
    W(m) = min(1, max(0, (s(m) - A(m)) / (L + wake)))      wake-ups per datagram, A(m) = C(m) - wake * W(m)
                                                            (hardware/transport_counts.wakes: the NIC cards' rule too)

- dgram: the recvmsg call; frag: per fragment of the reassembled datagram (its skb on the frag list: the copy of its
  1480 bytes out of it and its free; reassembly itself runs in the sender's softirq on the veth lab: veth delivers on
  the transmitting CPU); byte: per byte on loopback (one skb; 0 on the lab, where the copy rides in frag).
- wake: one wake-up of the blocked receiver (the IPI, the switch in and out). The receiver is faster than the sender
  (the sender's s(m) per datagram > its A(m)), so it sleeps whenever it catches up; once asleep it takes L (the
  wake-up latency) to run again, in which the sender queues L / (s - A) more datagrams that it reads in one go:
  W = (s - A) / L per datagram while below 1, with A including the wake's own CPU (so L + wake). This is why a fit
  of cost against size alone over-prices large datagrams: W rises from 0.2-0.3 at 1 KiB to about 1 by 6 KiB
  (server context switches per datagram in the fourth H200 sweep), and a per-fragment slope fitted at 1-8 KiB took
  that rise in.

Fitted per bundle on the sizes <= FIT_HIGH (udp_counts': 8 KiB) and the bundle's largest size, with each run's
measured wake-ups (run.json server_switches per datagram received): dgram, wake, frag (lab) or byte (loopback) by
least squares on the relative error, >= 0 (at 1-8 KiB W moves from 0.2 to 1 while n moves from 1 to 6, so wake and
frag are told apart only with a size far above: the largest one; the sizes between are predicted); L = the median
over those sizes with W < 0.95 of (s - A) / W - wake, s the sender's measured time per datagram there.
At a predicted size, s(m) is the sender's count model's prediction (udp_counts, or on loopback offload_counts' two
regimes), never a measurement at that size.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

from simcluster.errors import CalibrationError
from simcluster.fit import udp_counts
from simcluster.hardware import transport_counts

SATURATED = 0.95          # a size whose measured W is above this says nothing about L


@dataclass(frozen=True)
class ReceiverTerms:
    loopback: bool
    dgram: float       # core-seconds per datagram
    wake: float        # per wake-up
    frag: float        # per IP fragment (lab)
    byte: float        # per byte (loopback)
    latency: float     # L, seconds from sleeping to running again

    def base(self, m: float) -> float:
        return self.dgram + self.frag * udp_counts.fragments(m, self.loopback) + self.byte * m

    def wakes(self, m: float, sender: float) -> float:
        """W(m) given the sender's seconds per datagram."""
        return transport_counts.wakes(sender, self.base(m), self.latency, self.wake)

    def per_datagram(self, m: float, sender: float) -> float:
        return self.base(m) + self.wake * self.wakes(m, sender)


@dataclass(frozen=True)
class Point:
    cost: float        # the receiver's core-seconds per datagram received (median over the repeats)
    wakes: float       # server context switches per datagram received (median)
    sender: float      # the sender's seconds per datagram sent (median)


def fit_sizes(sizes) -> list[float]:
    """The sizes the receiver's fit reads: those <= udp_counts.FIT_HIGH and the largest above it."""
    small = sorted(m for m in sizes if m <= udp_counts.FIT_HIGH)
    return small + [max(sizes)] if small and max(sizes) > udp_counts.FIT_HIGH else small


def fit(points: dict[float, Point], loopback: bool) -> ReceiverTerms:
    sizes = fit_sizes(points)
    if len(sizes) < 4:
        raise CalibrationError(f"the UDP receiver count model needs udp_bw at three or more sizes <= "
                               f"{int(udp_counts.FIT_HIGH)} B and one above, got {[int(m) for m in sizes]}")
    per = np.array([points[m].cost for m in sizes])
    third = [float(m) if loopback else float(udp_counts.fragments(m)) for m in sizes]
    design = np.array([[1.0, points[m].wakes, x] for m, x in zip(sizes, third, strict=True)])
    (dgram, wake, slope), _ = nnls(design / per[:, None], np.ones_like(per))
    frag, byte = (0.0, slope) if loopback else (slope, 0.0)
    lat = [(points[m].sender - (points[m].cost - wake * points[m].wakes)) / points[m].wakes - wake
           for m in sizes if 0 < points[m].wakes < SATURATED]
    if not lat:
        raise CalibrationError("the UDP receiver count model needs a fitted size where the receiver woke less than "
                               f"{SATURATED} times per datagram (to read its wake-up latency)")
    return ReceiverTerms(loopback, float(dgram), float(wake), float(frag), float(byte),
                         max(0.0, statistics.median(lat)))


def bundle_points(bundle: Path) -> dict[float, list[tuple[float, float, float]]]:
    """{m: [(receiver core-seconds per datagram received, wake-ups per datagram received, sender seconds per datagram
    sent), one per udp_bw run]} of one qperf-sizes bundle; runs that received nothing are left out."""
    from simcluster.fit.bundle_files import Bundle
    from simcluster.traces import qperf

    b = Bundle(Path(bundle))
    out: dict[float, list[tuple[float, float, float]]] = {}
    for run in b.runs("qperf-sizes"):
        meta = run.get("meta") if isinstance(run.get("meta"), dict) else {}
        if meta.get("test") != "udp_bw" or run.get("status") != "ok":
            continue
        test = qperf.parse(b.file(run)).test("udp_bw")
        m, t = test.get("msg_size"), test.get("time")
        sent = test.metrics.get("send_bw", 0.0) * t / m
        got = test.metrics.get("recv_bw", 0.0) * t / m
        cpu, switches = run.get("server_cpu_s"), run.get("server_switches")
        if got <= 0 or sent <= 0 or not isinstance(cpu, int | float) or not isinstance(switches, int):
            continue
        out.setdefault(m, []).append((cpu / got, switches / got, t / sent))
    return dict(sorted(out.items()))


def medians(points: dict[float, list[tuple[float, float, float]]]) -> dict[float, Point]:
    return {m: Point(*(statistics.median(x) for x in zip(*v, strict=True))) for m, v in points.items()}
