"""Count rules for what the kernel batches (issue 42, session 33, tso; docs/models/nic-and-cpu.md, "Batching rules"):
TCP with TSO/GSO and GRO (offloads all), and loopback UDP above the largest linear skb. Core-seconds per message m.

TSO/GRO (unshaped veth pair, offloads all), both sides (client + server + ksoftirqd CPU):

    C(m) = msg + skb * skbs(m) + ack * acks(m) + byte * m
    skbs(m) = ceil(m / GSO)                 super-packets: tcp_sendmsg fills an skb up to the size goal
                                            (tcp_xmit_size_goal: the GSO limit, 64 KiB less headers, in whole MSS:
                                            45 x 1448 = 65160 B, when pacing allows 1 ms of data >= 64 KiB, as on
                                            an unshaped veth); veth carries it whole (it advertises TSO), so the
                                            receiver's TCP handles the same skb (server tcp_in_segs counts them:
                                            0.9-1.6 per write at 1-32 KiB, 2.65 at 128 KiB, 8.7 at 512 KiB, 16.6 at
                                            1 MiB in the second and third H200 sweeps)
    acks(m) = min(wire(m) / 2, max(1, skbs(m) / 2))   (skbs and acks: hardware/transport_counts.gso_skbs and
                                            gso_acks, the NIC cards' counts too; re-exported here as skbs, gso_acks)
                                            delayed ACK every second received packet, where the packet is the skb
                                            the receiver sees (a GSO/GRO super-packet, RFC 5681 4.2 "every second
                                            full-sized segment" applied per skb by __tcp_ack_snd_check), at least one
                                            per write of two or more MSS (the receiver's read opens the window and
                                            ACKs it: tcp_cleanup_rbuf); wire(m) = ceil(m / MSS)

Fitted per bundle on TCP at 1-4 KiB and its two largest sizes (NNLS on the relative error, every term >= 0); every
size between is predicted. skbs and bytes grow together above 64 KiB, so skb and byte are not separately identified:
only their sum per 64 KiB is, which is what a size between the fitted ones needs.

Loopback UDP sender, two regimes of the skb the sender builds (__ip_append_data): a datagram whose IP fragment plus
reserved head fits SKB_MAX_ALLOC (an order-2 allocation, 16 KiB less the 320-byte skb_shared_info) is one linear skb
(kmalloc of its whole length: above 8 KiB the page allocator, per page); a larger one on a scatter-gather device
(loopback) gets a small linear head and its payload copied into the socket's page fragments (32 KiB pages, reused:
skb_page_frag_refill). So the per-byte cost falls above LINEAR_MAX and the per-datagram cost rises (page-fragment
bookkeeping). Each regime is dgram + byte * m with its own terms: the linear one fitted on m <= 8 KiB
(udp_counts.fit_loopback), the paged one on the bundle's smallest and largest paged sizes.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

from simcluster.errors import CalibrationError
from simcluster.fit import udp_counts
from simcluster.hardware.transport_counts import gso_acks
from simcluster.hardware.transport_counts import gso_skbs as skbs

TSO_FIT_LOW, TSO_FIT_HIGH = 1024.0, 4096.0   # the small fitted sizes (as the count model's)
TSO_CONFIG = "lab unshaped offloads=all"      # the TSO/GRO rule's configuration (host_stack.config_label)
TSO_FIT_LARGE = 2                            # and the bundle's this many largest sizes
SKB_MAX_ALLOC = 16384 - 320                  # SKB_MAX_ORDER(0, 2): 4 pages less SKB_DATA_ALIGN(skb_shared_info)
UDP_IP_HEADERS = 8 + 20                      # UDP + IPv4 header bytes in the one fragment
HEAD_RESERVE = 16 + 15                       # LL_RESERVED_SPACE (loopback's 14-byte header, aligned 16) + 15
LINEAR_MAX = SKB_MAX_ALLOC - UDP_IP_HEADERS - HEAD_RESERVE   # 16005 B: the largest loopback datagram in a linear skb


@dataclass(frozen=True)
class TsoTerms:
    msg: float         # core-seconds per write (both sides' calls)
    skb: float         # per super-packet
    ack: float         # per ACK
    byte: float        # per byte
    acks: Callable[[float], float] = field(default=gso_acks, compare=False)   # ACKs per write (the registered rule)

    def per_message(self, m: float) -> float:
        return self.msg + self.skb * skbs(m) + self.ack * self.acks(m) + self.byte * m

    def cost(self, m: float) -> float:
        """Core-seconds per byte (both sides)."""
        return self.per_message(m) / m


def tso_fit_sizes(sizes) -> list[float]:
    """The sizes a TSO fit reads: 1-4 KiB and the TSO_FIT_LARGE largest above 4 KiB."""
    small = sorted(m for m in sizes if TSO_FIT_LOW <= m <= TSO_FIT_HIGH)
    large = sorted(m for m in sizes if m > TSO_FIT_HIGH)[-TSO_FIT_LARGE:]
    return small + large


def fit_tso(tcp: dict[float, float], acks: Callable[[float], float] = gso_acks) -> TsoTerms:
    """tcp: {m: both-sides core-seconds per byte}; the fit reads tso_fit_sizes() only; acks: the ACK count rule (the
    registered gso_acks, or transport_counts.push_acks for the sixth sweep)."""
    sizes = tso_fit_sizes(tcp)
    if sum(m > TSO_FIT_HIGH for m in sizes) < TSO_FIT_LARGE or len(sizes) < 4:
        raise CalibrationError(f"the TSO/GRO rule needs TCP at two or more sizes in 1-4 KiB and {TSO_FIT_LARGE} above, "
                               f"got {[int(m) for m in sorted(tcp)]}")
    per = np.array([tcp[m] * m for m in sizes])
    design = np.array([[1.0, skbs(m), acks(m), m] for m in sizes])
    x, _ = nnls(design / per[:, None], np.ones_like(per))
    return TsoTerms(*(float(v) for v in x), acks=acks)


@dataclass(frozen=True)
class PagedLoopback:
    linear: udp_counts.UdpTerms        # m <= LINEAR_MAX
    dgram: float                       # paged regime: core-seconds per datagram
    byte: float                        # and per byte

    def per_datagram(self, m: float) -> float:
        return self.linear.per_datagram(m) if m <= LINEAR_MAX else self.dgram + self.byte * m

    def cost(self, m: float) -> float:
        return self.per_datagram(m) / m


def paged_fit_sizes(sizes) -> list[float]:
    """The paged regime's fitted sizes: the smallest and the largest above LINEAR_MAX (the sizes between are predicted)."""
    paged = sorted(m for m in sizes if m > LINEAR_MAX)
    return [paged[0], paged[-1]] if len(paged) >= 2 else []


def fit_paged_loopback(costs: dict[float, float]) -> PagedLoopback:
    """costs: {m: loopback sender core-seconds per byte}: the linear regime on m <= 8 KiB, the paged on paged_fit_sizes."""
    linear = udp_counts.fit_loopback(costs)
    fitted = paged_fit_sizes(costs)
    if not fitted:
        raise CalibrationError(f"the paged loopback rule needs udp_bw at two sizes above {LINEAR_MAX} B, got "
                               f"{[int(m) for m in sorted(costs) if m > LINEAR_MAX]}")
    (lo, hi) = fitted
    byte = max(0.0, (costs[hi] * hi - costs[lo] * lo) / (hi - lo))
    return PagedLoopback(linear, max(0.0, costs[lo] * lo - byte * lo), byte)


def predicted_sizes(sizes, fitted, above: float) -> list[float]:
    """The sizes a rule predicts: those above `above` (its small fitted range) that its fit did not read."""
    return [m for m in sorted(sizes) if m > above and m not in set(fitted)]


def medians(by_m: dict[float, list[float]]) -> dict[float, float]:
    return {m: statistics.median(v) for m, v in by_m.items()}


def bundle_costs(bundle: Path) -> tuple[str, dict[tuple[str, str], dict[float, list[float]]]]:
    """(config label, (transport, side) -> {m: repeats of core-seconds per byte}) of one qperf-sizes bundle."""
    from simcluster.fit import host_stack

    samples, truth = host_stack.bundle_samples(bundle)
    return host_stack.config_label(truth), host_stack.repeats(samples)


def tso_counted_runs(bundle: Path):
    """(run entry, messages written, {tcp_in_segs, tcp_out_segs and any other counter the run recorded: the server
    namespace's deltas}) for each ok tcp_bw run of a lab bundle with the server's counters (run.json `packets`); other
    runs are left out."""
    from simcluster.fit.bundle_files import Bundle
    from simcluster.traces import qperf

    b = Bundle(Path(bundle))
    for run in b.runs("qperf-sizes"):
        meta = run.get("meta") if isinstance(run.get("meta"), dict) else {}
        server = (meta.get("ground_truth") or {}).get("server_netns")
        entry = next((p for p in run.get("packets") or [] if isinstance(p, dict) and server and p.get("netns") == server),
                     None)
        if meta.get("test") != "tcp_bw" or entry is None or run.get("status") != "ok":
            continue
        test = qperf.parse(b.file(run)).test("tcp_bw")
        m = test.get("msg_size")
        messages = test.metrics.get("bw", 0.0) * test.get("time") / m
        try:
            delta = {k: float(entry["after"][k]) - float(entry["before"][k]) for k in ("tcp_in_segs", "tcp_out_segs")}
        except (KeyError, TypeError, ValueError) as exc:
            raise CalibrationError(f"key 'packets' entry of netns {server!r} lacks a number for {exc}",
                                   where=f"{b.path / 'manifest.json'}: run {run.get('run_id')!r}") from None
        before, after = entry.get("before") or {}, entry.get("after") or {}
        delta |= {k: float(after[k]) - float(before[k]) for k in sorted((set(before) & set(after)) - set(delta))
                  if isinstance(after[k], int | float) and isinstance(before[k], int | float)}   # the TcpExt counters
        if messages > 0:
            yield run, test, messages, delta


def tso_measured_counts(bundle: Path) -> dict[float, dict[str, float]]:
    """{m: median per TCP message of the super-packets the server's TCP took in (its namespace's tcp_in_segs: one per
    skb, a GSO/GRO super-packet counting once) and of the ACKs it sent (its tcp_out_segs)} of a lab bundle's tcp_bw runs
    (run.json `packets`); runs without the server's counters are left out."""
    per_m: dict[float, list[tuple[float, float]]] = {}
    for _, test, messages, delta in tso_counted_runs(bundle):
        per_m.setdefault(test.get("msg_size"), []).append((delta["tcp_in_segs"] / messages,
                                                           delta["tcp_out_segs"] / messages))
    return {m: {"skbs": statistics.median(s for s, _ in v), "acks": statistics.median(a for _, a in v)}
            for m, v in sorted(per_m.items())}
