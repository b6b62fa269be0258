"""The UDP sender's host cost per datagram as counted events (issue 42, session 32, udp7; docs/models/nic-and-cpu.md, "UDP count
model"). The sender's CPU (the client process, with the softirq work it runs), core-seconds per m-byte datagram:

    C(m) = dgram + split * [n(m) > 1] + frag * n(m) + byte * m
    n(m) = ceil((m + 8) / 1480)    IP fragments at MTU 1500 (the 8-byte UDP header rides in the first); 1 on loopback

- dgram: once per datagram (the sendto syscall, socket lookup, route, the first skb).
- split: once per fragmented datagram (the fragment list built in __ip_append_data, and on the two-namespace lab the
  receiver's reassembly queue, run in the sender's softirq: veth delivers on the transmitting CPU). The data show it as
  the step from 1 to 2 fragments (1 -> 2 KiB: +2.4 to +3.5 us in the second and third H200 sweeps, against about
  1.5 us per further fragment 4 -> 16 -> 32 KiB).
- frag: per IP fragment (an skb, a header, a transmit, a receive). A fragmented datagram is checksummed in software
  whatever the offloads (the kernel marks CHECKSUM_PARTIAL only for a datagram that fits one fragment), and qperf does
  not set UDP_SEGMENT (so no UDP GSO; UFO left the kernel in 4.14): the checksum of a full fragment's 1480 bytes rides
  in frag.
- byte: the copy from user memory, taken from the same run's loopback (one packet per datagram: its cost over m is
  dgram + byte * m); 0 when the run has no loopback bundle (the copy then rides in frag too).

Identification: 1-4 KiB holds 1, 2 and 3 fragments, so frag there is one difference of two medians (2 -> 4 KiB) with
split, dgram and byte beside it: it cannot be told from the noise (docs/models/nic-and-cpu-findings.md, session 32, udp7).
The fit takes every size up to FIT_HIGH = 8 KiB (1, 2, 3, 5, 6 fragments in the fourth run's 1, 2, 4, 6, 8 KiB) and
predicts the larger sizes; least squares on the relative error, every term >= 0.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

from simcluster.errors import CalibrationError
from simcluster.fit import host_counts

FIT_HIGH = 8192.0         # fitted sizes: m <= FIT_HIGH; every larger size is predicted


def fragments(m: float, loopback: bool = False) -> int:
    """IP packets of one m-byte UDP datagram: 1 on loopback (MTU 65536, datagrams <= 65507 B), else at MTU 1500."""
    return 1 if loopback else host_counts.fragments(m)


@dataclass(frozen=True)
class UdpTerms:
    loopback: bool
    dgram: float       # core-seconds per datagram
    split: float       # per fragmented datagram
    frag: float        # per IP fragment
    byte: float        # per payload byte

    def per_datagram(self, m: float) -> float:
        n = fragments(m, self.loopback)
        return self.dgram + self.split * (n > 1) + self.frag * n + self.byte * m

    def cost(self, m: float) -> float:
        """Core-seconds per byte sent."""
        return self.per_datagram(m) / m


def _nnls_relative(design: list[list[float]], target: np.ndarray, scale: np.ndarray) -> np.ndarray:
    x, _ = nnls(np.array(design) / scale[:, None], target / scale)
    return x


def fit_loopback(costs: dict[float, float]) -> UdpTerms:
    """costs: {m: the sender's core-seconds per byte} on loopback; dgram and byte from the sizes <= FIT_HIGH."""
    sizes = sorted(m for m in costs if m <= FIT_HIGH)
    if len(sizes) < 2:
        raise CalibrationError(f"the UDP count model needs udp_bw at two or more sizes <= {int(FIT_HIGH)} B, got {len(sizes)}")
    per = np.array([costs[m] * m for m in sizes])
    dgram, byte = _nnls_relative([[1.0, m] for m in sizes], per, per)
    return UdpTerms(True, float(dgram), 0.0, 0.0, float(byte))


def fit_lab(costs: dict[float, float], byte: float) -> UdpTerms:
    """costs: {m: the sender's core-seconds per byte} at MTU 1500; byte: the same run's loopback per-byte cost (or 0).
    dgram, split and frag from the sizes <= FIT_HIGH (two or more of them fragmented)."""
    sizes = sorted(m for m in costs if m <= FIT_HIGH)
    if sum(fragments(m) > 1 for m in sizes) < 2 or len(sizes) < 3:
        raise CalibrationError(f"the UDP count model needs udp_bw at three or more sizes <= {int(FIT_HIGH)} B, two of "
                               f"them over one fragment (> 1472 B), got {[int(m) for m in sizes]}")
    per = np.array([costs[m] * m for m in sizes])
    design = [[1.0, float(fragments(m) > 1), float(fragments(m))] for m in sizes]
    dgram, split, frag = _nnls_relative(design, per - byte * np.array(sizes), per)
    return UdpTerms(False, float(dgram), float(split), float(frag), byte)


def fit(costs: dict[float, float], loopback: bool, loopback_costs: dict[float, float] | None) -> UdpTerms:
    """The sender's terms of one configuration: loopback's own, or a lab's with the run's loopback per-byte cost."""
    if loopback:
        return fit_loopback(costs)
    return fit_lab(costs, fit_loopback(loopback_costs).byte if loopback_costs else 0.0)


def bundle_inputs(bundle: Path) -> tuple[bool, dict[float, list[float]], dict[float, list[float]] | None]:
    """(loopback?, the sender's repeats per byte {m: [...]}, the same run's loopback sender repeats or None)."""
    from simcluster.fit import host_stack

    samples, truth = host_stack.bundle_samples(bundle)
    loopback = host_stack.config_label(truth) == "loopback"
    send = host_stack.repeats(samples).get(("udp", "sender"), {})
    sibling = None if loopback else host_counts.loopback_sibling(bundle)
    loop = None
    if sibling is not None:
        loop = host_stack.repeats(host_stack.bundle_samples(sibling)[0]).get(("udp", "sender")) or None
    return loopback, send, loop


def fit_medians(loopback: bool, send: dict[float, list[float]], loop: dict[float, list[float]] | None) -> UdpTerms:
    med = {m: statistics.median(v) for m, v in send.items()}
    return fit(med, loopback, None if loop is None else {m: statistics.median(v) for m, v in loop.items()})


def prediction_noise(loopback: bool, send: dict[float, list[float]], loop: dict[float, list[float]] | None,
                     m: float) -> float:
    """The prediction's noise at m from its fit inputs' brackets (host_stack.bracketed_spread): the fitted sizes, and
    the loopback sizes that give byte."""
    from simcluster.fit.host_stack import bracketed_spread

    inputs = {("own", k): v for k, v in send.items() if k <= FIT_HIGH}
    inputs |= {("loop", k): v for k, v in (loop or {}).items() if k <= FIT_HIGH and not loopback}

    def predict(values: dict) -> float:
        own = {k: v for (src, k), v in values.items() if src == "own"}
        other = {k: v for (src, k), v in values.items() if src == "loop"}
        return fit(own, loopback, other or None).cost(m)

    return bracketed_spread(inputs, predict)
