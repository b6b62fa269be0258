"""One TCP stream's host cost per message as a sum of physical counts, each with a per-event cost (issue 42, session 32;
docs/models/nic-and-cpu.md, "Count model"). Both sides (client + server + ksoftirqd CPU), core-seconds per message m:

    C(m) = msg + pkt * packets(m) + ack * acks(m) + byte * m

    packets(m) = ceil(m / seg)          the packets the CPU handles: seg = the MSS (1448 B at MTU 1500 without GSO), a
                                        64 KiB GSO/TSO super-packet (offloads all, unshaped) or loopback's 64 KiB MTU
    acks(m)    = min(wire(m) / 2, ACKS_PER_PUSH * max(1, m / PUSH))
                                        delayed ACK every 2 full segments while the receiver keeps up (a write of a
                                        few segments), else about ACKS_PER_PUSH per push of PUSH bytes (the receiver
                                        reads, and ACKs, once per burst); wire(m) = ceil(m / MSS)

Fitted per configuration on TCP's 1-4 KiB medians only. Those three sizes carry 1, 2 and 3 segments and 0.5, 1 and 1.4
ACKs: the per-segment and per-ACK counts are nearly collinear there (and with bytes), so three sizes cannot identify
msg, pkt, ack and byte. One term comes from another measurement of the same run:
- MTU segments (no GSO): pkt from the same bundle's UDP fragment train, the both-sides cost per datagram between 4 and
  16 KiB over its extra IP fragments (3 -> 12 at MTU 1500): a packet in a back-to-back train, its bytes' copy and
  checksum included (so byte = 0: without GSO every payload byte rides in an MSS segment). msg and ack from TCP 1-4 KiB.
- GSO / loopback (a 1-4 KiB write is one packet; on loopback also half an ACK, while with GSO acks() still counts MSS
  wire segments, 0.5 / 1.0 / 1.4; with one packet per write msg, pkt and ack cannot be told apart): byte from the same
  run's loopback UDP datagrams 4 -> 16 KiB (one packet each on loopback: the slope is the per-byte copy), pkt from TCP
  1-4 KiB (the per-message remainder, carried per super-packet; msg = ack = 0).
UDP 16 KiB is an input of the TCP fit, so TCP's 16 KiB row is not held out (FIT_INPUTS); the UDP sender's a + b / m
reads only UDP at <= 4 KiB, so its 16 KiB row still is.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

from simcluster.errors import CalibrationError
from simcluster.fit.host_stack import GSO, MSS  # one definition: TCP payload per MTU-1500 frame, per GSO super-packet

# the count rules and their constants, one definition shared with the NIC cards' answers (hardware/nic.py), kept
# importable from here; PUSH and ACKS_PER_PUSH were read from the second H200 sweep (development, below)
from simcluster.hardware.transport_counts import (  # noqa: F401
    ACKS_PER_PUSH,
    LOOPBACK,
    PUSH,
    UDP_FRAGMENT,
    acks,
    fragments,
    packets,
)

FIT_LOW, FIT_HIGH = 1024.0, 4096.0       # TCP's fitted sizes (the split)
TRAIN = (4096.0, 16384.0)                 # UDP sizes whose difference gives the per-packet or per-byte term
FIT_INPUTS = frozenset({1024.0, 2048.0, 4096.0, *TRAIN})   # sizes the TCP fit reads: its rows there are not judged
LOOPBACK_BUNDLE = "loopback-sizes"        # the same run's loopback configuration (a GSO lab's per-byte source)


def segment_size(config: str) -> float:
    """Bytes per packet the CPU handles in a configuration (host_stack.config_label)."""
    if config == "loopback":
        return LOOPBACK
    return GSO if config == "lab unshaped offloads=all" else MSS


@dataclass(frozen=True)
class CountTerms:
    seg: float         # bytes per packet the CPU handles
    msg: float         # core-seconds per message (send and recv calls)
    pkt: float         # per packet
    ack: float         # per ACK
    byte: float        # per byte

    def per_message(self, m: float) -> float:
        return self.msg + self.pkt * packets(m, self.seg) + self.ack * acks(m, self.seg) + self.byte * m

    def cost(self, m: float) -> float:
        """Core-seconds per byte (both sides)."""
        return self.per_message(m) / m


def train_slope(per_datagram: dict[float, float], per: str) -> float:
    """The UDP train's extra cost between TRAIN's sizes, per extra fragment ('fragment') or per extra byte ('byte')."""
    lo, hi = TRAIN
    if lo not in per_datagram or hi not in per_datagram:
        raise CalibrationError(f"the count model needs udp_bw at {int(lo)} and {int(hi)} B in the same run",
                               hint="run qperf-sizes with --qperf-sizes including 4K,16K")
    step = fragments(hi) - fragments(lo) if per == "fragment" else hi - lo
    return (per_datagram[hi] - per_datagram[lo]) / step


def fit(tcp: dict[float, float], seg: float, udp: dict[float, float] | None = None,
        loopback_udp: dict[float, float] | None = None) -> CountTerms:
    """tcp: {m: both-sides core-seconds per byte}; udp / loopback_udp: {m: both-sides core-seconds per datagram} of the
    same run's lab configuration / loopback. Least squares on the relative error, every term >= 0."""
    sizes = sorted(m for m in tcp if FIT_LOW <= m <= FIT_HIGH)
    if len(sizes) < 2:
        raise CalibrationError(f"the count model needs TCP at two or more sizes in 1-4 KiB, got {len(sizes)}")
    per_msg = np.array([tcp[m] * m for m in sizes])
    if seg == MSS:
        pkt = max(0.0, train_slope(udp or {}, "fragment"))
        rest = per_msg - pkt * np.array([packets(m, seg) for m in sizes])
        design = np.array([[1.0, acks(m, seg)] for m in sizes])
        (msg, ack), _ = nnls(design / per_msg[:, None], rest / per_msg)
        return CountTerms(seg, float(msg), pkt, float(ack), 0.0)
    byte = max(0.0, train_slope(loopback_udp or {}, "byte"))
    rest = (per_msg - byte * np.array(sizes)) / np.array([packets(m, seg) for m in sizes])
    pkt = float(np.sum(rest / per_msg) / np.sum(1 / per_msg)) if np.all(rest > 0) else 0.0
    return CountTerms(seg, 0.0, max(0.0, pkt), 0.0, byte)


def udp_per_datagram(repeats: dict[tuple[str, str], dict[float, list[float]]]) -> dict[float, list[float]]:
    """{m: [both-sides core-seconds per datagram, one per run]}: the sender's cost per datagram sent plus the receiver's
    per datagram received, paired run by run (host_stack.repeats keeps the runs' order)."""
    send, recv = repeats.get(("udp", "sender"), {}), repeats.get(("udp", "receiver"), {})
    out = {}
    for m in (m for m in send if recv.get(m)):
        if len(send[m]) == len(recv[m]):
            out[m] = [(s + r) * m for s, r in zip(send[m], recv[m], strict=True)]
        else:      # a run whose receiver got nothing has no receiver sample: the pairing is lost, keep the medians' sum
            out[m] = [(statistics.median(send[m]) + statistics.median(recv[m])) * m]
    return out


def loopback_sibling(bundle: Path) -> Path | None:
    """The same run's loopback bundle: bundle itself for loopback, else a LOOPBACK_BUNDLE folder beside it."""
    other = Path(bundle).parent / LOOPBACK_BUNDLE
    return other if (other / "qperf-sizes").is_dir() else None


def bundle_inputs(bundle: Path) -> tuple[float, dict[float, list[float]], dict[float, list[float]], dict[float, list[float]] | None]:
    """(seg, TCP both-sides repeats per byte, UDP per-datagram repeats, loopback UDP per-datagram repeats or None)."""
    from simcluster.fit import host_stack

    samples, truth = host_stack.bundle_samples(bundle)
    groups = host_stack.repeats(samples)
    seg = segment_size(host_stack.config_label(truth))
    udp = udp_per_datagram(groups)
    loop = None
    if seg != MSS:
        sibling = bundle if not truth else loopback_sibling(bundle)
        if sibling is not None:
            loop = udp if sibling == bundle else udp_per_datagram(host_stack.repeats(host_stack.bundle_samples(sibling)[0]))
    return seg, groups.get(("tcp", "both"), {}), udp, loop


def fit_medians(seg: float, tcp: dict[float, list[float]], udp: dict[float, list[float]],
                loop: dict[float, list[float]] | None) -> CountTerms:
    med = {m: statistics.median(v) for m, v in tcp.items()}
    return fit(med, seg, {m: statistics.median(v) for m, v in udp.items()},
               None if loop is None else {m: statistics.median(v) for m, v in loop.items()})


def prediction_noise(seg: float, tcp: dict[float, list[float]], udp: dict[float, list[float]],
                     loop: dict[float, list[float]] | None, m: float) -> float:
    """The prediction's noise at m from its fit inputs' brackets (host_stack.bracketed_spread): TCP at 1-4 KiB and the
    UDP train's sizes (the lab's own without GSO, loopback's with it)."""
    from simcluster.fit.host_stack import bracketed_spread

    train = loop if seg != MSS else udp
    inputs = {("tcp", k): v for k, v in tcp.items() if FIT_LOW <= k <= FIT_HIGH}
    inputs |= {("train", k): train[k] for k in TRAIN if train and k in train}

    def predict(values: dict) -> float:
        t = {k: v for (src, k), v in values.items() if src == "tcp"}
        tr = {k: v for (src, k), v in values.items() if src == "train"}
        return fit(t, seg, tr if seg == MSS else None, tr if seg != MSS else None).cost(m)

    return bracketed_spread(inputs, predict)


def measured_counts(bundle: Path) -> dict[float, dict[str, float]]:
    """{m: median per TCP message of the server namespace's segments out (its ACKs) and the server's context switches
    (its wake-ups)} of a lab bundle's tcp_bw runs (run.json `packets`, `server_switches`); {} on loopback, where both
    sides' segments are the one host's. A counter missing or not a number is a CalibrationError naming the manifest,
    the run and the key."""
    from simcluster.fit.bundle_files import Bundle
    from simcluster.traces import qperf

    b = Bundle(Path(bundle))
    per_m: dict[float, dict[str, list[float]]] = {}
    for run in b.runs("qperf-sizes"):
        meta = run.get("meta") if isinstance(run.get("meta"), dict) else {}
        packets_doc = run.get("packets") or []
        server = (meta.get("ground_truth") or {}).get("server_netns")
        out = [p for p in packets_doc if isinstance(p, dict) and p.get("netns") == server and server]
        if meta.get("test") != "tcp_bw" or not out or run.get("status") != "ok":
            continue
        test = qperf.parse(b.file(run)).test("tcp_bw")
        m, messages = test.get("msg_size"), test.metrics.get("bw", 0.0) * test.get("time") / test.get("msg_size")
        if messages <= 0:
            continue
        where = f"{b.path / 'manifest.json'}: run {run.get('run_id')!r}"
        acked = _counter(out[0], ("after", "tcp_out_segs"), where) - _counter(out[0], ("before", "tcp_out_segs"), where)
        switches = run.get("server_switches") or 0      # an integer where present (the manifest's schema checks it)
        got = per_m.setdefault(m, {"acks": [], "wakes": []})
        got["acks"].append(acked / messages)
        got["wakes"].append(switches / messages)
    return {m: {k: statistics.median(v) for k, v in d.items()} for m, d in sorted(per_m.items())}


def _counter(entry: dict, keys: tuple[str, str], where: str) -> float:
    """entry[keys[0]][keys[1]], a number, of a run's `packets` entry; else a CalibrationError naming the key."""
    outer = entry.get(keys[0])
    value = outer.get(keys[1]) if isinstance(outer, dict) else None
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise CalibrationError(f"key 'packets' entry {keys[0]}.{keys[1]} is {value!r}, expected a segment count",
                               where=where)
    return float(value)


def _error(predicted: float, measured: float) -> str:
    """predicted / measured - 1 as a signed percentage; 'n/a' where nothing was measured (a zero count)."""
    return f"{predicted / measured - 1:+7.1%}" if measured > 0 else f"{'n/a':>7s}"


def counts_report(folders: list[Path]) -> str:
    """Measured vs predicted ACKs and receiver wake-ups per message (wake-ups predicted as max(1, m / PUSH))."""
    from simcluster.fit import host_stack

    lines = [f"{'configuration':26s} {'size':>8s} {'ACKs/msg':>9s} {'predicted':>9s} {'error':>7s} {'wakes/msg':>9s} "
             f"{'predicted':>9s} {'error':>7s}"]
    for bundle in host_stack.sweep_bundles(folders):
        seg = segment_size(host_stack.config_label(host_stack.bundle_samples(bundle)[1]))
        for m, got in measured_counts(bundle).items():
            ack, wake = acks(m, seg), max(1.0, m / PUSH)
            lines.append(f"{bundle.name:26s} {int(m):>8d} {got['acks']:9.2f} {ack:9.2f} {_error(ack, got['acks'])} "
                         f"{got['wakes']:9.2f} {wake:9.2f} {_error(wake, got['wakes'])}")
    if len(lines) == 1:
        return "no tcp_bw runs with packet counters in these bundles: nothing to count (the counts are TCP's)"
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """python -m simcluster.fit.host_counts FOLDER [FOLDER ...]: counts_report; bad input is one line, exit status 2."""
    from simcluster.fit import host_stack

    return host_stack.folder_command("simcluster.fit.host_counts", argv, counts_report)


if __name__ == "__main__":
    raise SystemExit(main())
