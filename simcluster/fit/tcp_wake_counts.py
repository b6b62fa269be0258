"""A wake-up rule for the TCP receiver with TSO/GRO, and the ACK count from it (issue 42, session 33: tcpwake;
docs/models/nic-and-cpu-findings.md, "tcpwake"). Development only: not registered, not on any card (the TSO/GRO card
stays on the registered batching rule, fit/offload_counts.py). Per m-byte write, both sides (client + server +
ksoftirqd CPU):

    W(m)    = max(0, (s(m) - R(m)) / L)          the reader's wake-ups per write: it sleeps whenever it has drained the
                                                 socket; its idle time per write is s - R (s the sender's seconds per
                                                 write, the sender being the saturated side; R the server's CPU per
                                                 write, its wake-ups included), and each sleep lasts L (from draining
                                                 to running again)
    acks(m) = W(m) + b x skbs(m)                 one ACK per read (tcp_cleanup_rbuf: the read empties the queue after a
                                                 pushed segment) and the super-packets ACKed at arrival
                                                 (__tcp_ack_snd_check: more than one receive MSS unacked and the window
                                                 not shrinking, i.e. the queue empty) at a fraction b
    C(m)    = msg + skb x skbs(m) + ack x acks(m) + byte x m     (the registered batching rule's form and skbs)

Fitted per bundle on the registered rule's fit sizes (TCP 1-4 KiB and the two largest, offload_counts.tso_fit_sizes),
from each size's medians over its repeats: L = the median of (s - R) / W there; b = the median of (acks - W) / skbs
there (>= 0; the counters: server tcp_out_segs, context switches); msg, skb, ack, byte by least squares on the
relative error (>= 0) with the rule's ACK count at those sizes (their measured W). At a size between, s(m) and R(m)
are each the straight line between the neighbouring fit sizes' medians (the fit has no count model of either side),
never a measurement at that size.

    python -m simcluster.fit.tcp_wake_counts FOLDER [FOLDER ...]    development errors against the registered rule
"""

from __future__ import annotations

import statistics
from dataclasses import astuple, dataclass
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

from simcluster.errors import CalibrationError
from simcluster.fit import host_stack
from simcluster.fit import offload_counts as oc


@dataclass(frozen=True)
class WritePoint:
    s: float           # seconds per write (qperf's time / writes)
    server: float      # server CPU core-seconds per write
    cost: float        # client + server + ksoftirqd core-seconds per write
    wakes: float       # server context switches per write
    skbs: float        # server tcp_in_segs per write
    acks: float        # server tcp_out_segs per write


@dataclass(frozen=True)
class WakeRule:
    fitted: dict[float, WritePoint]    # the fit sizes' medians
    latency: float                     # L, seconds per sleep
    arrival: float                     # b, ACKs per super-packet at arrival
    terms: oc.TsoTerms                 # msg, skb, ack (per the rule's ACK), byte

    def _line(self, m: float, key: str) -> float:
        xs = sorted(self.fitted)
        lo = max([x for x in xs if x <= m], default=xs[0])
        hi = min([x for x in xs if x >= m], default=xs[-1])
        a, b = getattr(self.fitted[lo], key), getattr(self.fitted[hi], key)
        return a if hi == lo else a + (b - a) * (m - lo) / (hi - lo)

    def wakes(self, m: float) -> float:
        return self.wakes_at(self._line(m, "s"), self._line(m, "server"))

    def wakes_at(self, s: float, server: float) -> float:
        """W from given seconds per write of the sender and the server (the queue relation alone)."""
        return max(0.0, (s - server) / self.latency)

    def acks(self, m: float, wakes: float | None = None) -> float:
        return (self.wakes(m) if wakes is None else wakes) + self.arrival * oc.skbs(m)

    def per_message(self, m: float) -> float:
        t = self.terms
        return t.msg + t.skb * oc.skbs(m) + t.ack * self.acks(m) + t.byte * m


def bundle_points(bundle: Path) -> dict[float, WritePoint]:
    """{m: medians over the repeats} of a lab bundle's tcp_bw runs with the server's counters."""
    per_m: dict[float, list[WritePoint]] = {}
    for run, test, n, d in oc.tso_counted_runs(bundle):
        try:
            cpu = [float(run[k] or 0.0) for k in ("client_cpu_s", "server_cpu_s", "ksoftirqd_cpu_s", "server_switches")]
        except (KeyError, TypeError, ValueError) as exc:
            raise CalibrationError(f"a tcp_bw run lacks a number for {exc}",
                                   where=f"{bundle / 'manifest.json'}: run {run.get('run_id')!r}") from None
        per_m.setdefault(test.get("msg_size"), []).append(
            WritePoint(test.get("time") / n, cpu[1] / n, sum(cpu[:3]) / n, cpu[3] / n, d["tcp_in_segs"] / n,
                       d["tcp_out_segs"] / n))
    return {m: WritePoint(*(statistics.median(x) for x in zip(*map(astuple, v), strict=True))) for m, v in sorted(per_m.items())}


def fit(points: dict[float, WritePoint]) -> WakeRule:
    sizes = oc.tso_fit_sizes(points)
    if len(sizes) < 4 or sum(m > oc.TSO_FIT_HIGH for m in sizes) < oc.TSO_FIT_LARGE:
        raise CalibrationError(f"the TCP wake-up rule needs TCP at two or more sizes in 1-4 KiB and "
                               f"{oc.TSO_FIT_LARGE} above, got {[int(m) for m in sorted(points)]}")
    fitted = {m: points[m] for m in sizes}
    lat = [(p.s - p.server) / p.wakes for p in fitted.values() if p.wakes > 0 and p.s > p.server]
    if not lat:
        raise CalibrationError("the TCP wake-up rule needs a fitted size where the reader slept and was the faster side")
    arrival = max(0.0, statistics.median((p.acks - p.wakes) / oc.skbs(m) for m, p in fitted.items()))
    per = np.array([p.cost for p in fitted.values()])
    design = np.array([[1.0, oc.skbs(m), p.wakes + arrival * oc.skbs(m), m] for m, p in fitted.items()])
    x, _ = nnls(design / per[:, None], np.ones_like(per))
    return WakeRule(fitted, statistics.median(lat), arrival, oc.TsoTerms(*(float(v) for v in x)))


def _err(pred: float, meas: float) -> float:
    return pred / meas - 1 if meas > 0 else float("nan")


def folder_report(folders: list[Path]) -> str:
    """Per TSO/GRO bundle and predicted size: wake-ups, ACKs and cost by this rule and by the registered one."""
    lines = [f"{'bundle':42s} {'size':>8s} {'W meas':>6s} {'W':>6s} {'W|s,R':>6s} {'ACK meas':>8s} {'ACK':>6s} {'reg':>5s} "
             f"{'ACK err':>7s} {'reg err':>7s} {'cost err':>8s} {'reg err':>7s}"]
    errs: dict[str, list[float]] = {"wakes": [], "relation": [], "acks_given_w": [], "acks": [], "acks_reg": [], "cost": [], "cost_reg": []}
    for bundle in host_stack.sweep_bundles(folders):
        label, _ = oc.bundle_costs(bundle)
        points = bundle_points(bundle) if label == oc.TSO_CONFIG else {}
        if not points:
            continue
        rule = fit(points)
        reg = oc.fit_tso({m: p.cost / m for m, p in rule.fitted.items()})
        name = f"{bundle.parent.name.removeprefix('h200-transport-')}/{bundle.name}"
        for m in oc.predicted_sizes(points, rule.fitted, oc.TSO_FIT_HIGH):
            p = points[m]
            row = {"wakes": _err(rule.wakes(m), p.wakes), "relation": _err(rule.wakes_at(p.s, p.server), p.wakes),
                   "acks_given_w": _err(rule.acks(m, p.wakes), p.acks), "acks": _err(rule.acks(m), p.acks),
                   "acks_reg": _err(oc.gso_acks(m), p.acks), "cost": _err(rule.per_message(m), p.cost),
                   "cost_reg": _err(reg.per_message(m), p.cost)}
            for k, v in row.items():
                errs[k].append(abs(v))
            lines.append(f"{name:42s} {int(m):>8d} {p.wakes:6.2f} {rule.wakes(m):6.2f} "
                         f"{rule.wakes_at(p.s, p.server):6.2f} {p.acks:8.2f} {rule.acks(m):6.2f} "
                         f"{oc.gso_acks(m):5.2f} {row['acks']:+7.1%} {row['acks_reg']:+7.1%} {row['cost']:+8.1%} "
                         f"{row['cost_reg']:+7.1%}")
        lines.append(f"{'':42s} fit: L {rule.latency * 1e6:.2f} us, b {rule.arrival:.3f} ACK per super-packet, msg "
                     f"{rule.terms.msg * 1e6:.3f} us, skb {rule.terms.skb * 1e6:.3f} us, ack {rule.terms.ack * 1e6:.3f} "
                     f"us, byte {rule.terms.byte * 1e9:.3f} s/GB")
    if len(lines) == 1:
        raise CalibrationError("no TSO/GRO (unshaped, offloads all) TCP bundle with server counters",
                               where=", ".join(map(str, folders)))
    mean = {k: 100 * statistics.fmean(v) for k, v in errs.items()}
    n = len(errs["cost"])
    lines.append(f"mean |error| over {n} rows: wake-ups {mean['wakes']:.1f}% (W|s,R, the queue relation "
                 f"with the measured s and R: {mean['relation']:.1f}%); ACKs {mean['acks']:.1f}% "
                 f"(with the measured W: {mean['acks_given_w']:.1f}%; registered rule {mean['acks_reg']:.1f}%); "
                 f"cost {mean['cost']:.1f}% (registered {mean['cost_reg']:.1f}%)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """The command line (module docstring); bad input is one line on stderr and exit status 2."""
    return host_stack.folder_command("simcluster.fit.tcp_wake_counts", argv, folder_report)


if __name__ == "__main__":
    raise SystemExit(main())
