"""A qperf-sizes bundle -> the host stack's cost per byte and per message, per transport and side, with a held-out check
(docs/models/nic-and-cpu.md, "Fitted from a message-size sweep").

Each run (`simcluster collect --tools qperf-sizes`) is one qperf -v bandwidth test at one message size m. The runner
records the CPU of the client (the sender) and of the server (the receiver) per process, so the cost of one side is

    c_side(m) = CPU seconds of that process / bytes it moved      (sender: bytes sent; receiver: bytes received)

and, for TCP, "both" = (client + server CPU) / bytes: on loopback and in the lab the receive path's softirq work is
charged to whichever process the CPU was running, so only the sum is a stable measure of one stream's host work.

and the fit is c(m) = a + b / m (least squares on the relative error, a, b >= 0) over the runs whose m is in the fit
range (m <= 4 KiB); the larger sizes are predicted, never seen. (The reverse, fitting the large sizes, cannot
identify the per-message term: it is a few percent of their cost.) For TCP, a = copy + checksum + per-packet / segment (TCP coalesces
small writes into segments, so packets follow bytes) and b = the per-call cost; for UDP every datagram is a packet:
b = per-call + per-packet. Repeats of one size are reduced to their median first.
    python -m simcluster.fit.host_stack BUNDLE [BUNDLE ...] [--split BYTES]
prints the a + b / m tables of docs/models/nic-and-cpu.md (development: the held-out predictions are the count models',
fit/host_counts.py and fit/udp_counts.py, read by fit/host_stack_readout.py); with the lab's offload modes among the
bundles, the per-byte cost split into copy, checksum and per packet (decompose), printed only. The lab's NIC cards are
the count models' (python -m simcluster.fit.stack_cards).
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

from simcluster.errors import CalibrationError
from simcluster.hardware.transport_counts import GSO, MSS  # TCP payload per MTU frame; per GSO/TSO super-packet

SIDES = ("sender", "receiver", "both")
SPLIT = 4096    # fit on m <= SPLIT (per-message dominated), predict m > SPLIT (per-byte dominated), never seen
TCP_FIT_MIN = 1024   # TCP fits from here: a smaller write is corked with the next ones into one segment, so its call
                     # does not run the transmit (and, between namespaces, the inline receive) path a + b / m assumes


@dataclass(frozen=True)
class Sample:
    transport: str
    side: str
    m: float           # message size, bytes
    cost: float        # core-seconds per byte on that side
    cores: float       # cores that side's process used (CPU seconds / test time)
    rate_Bps: float    # bytes per second that side moved


@dataclass(frozen=True)
class Terms:
    a: float           # core-seconds per byte
    b: float           # core-seconds per message
    n: int             # sizes fitted

    def cost(self, m: float) -> float:
        return self.a + self.b / m


def run_samples(run: dict, stdout: Path) -> list[Sample]:
    """The sender and receiver samples of one qperf-sizes run (an empty list when a side moved nothing)."""
    from simcluster.traces import qperf

    meta = run.get("meta") if isinstance(run.get("meta"), dict) else {}
    test = qperf.parse(stdout).test(str(meta.get("test", "")))
    transport = test.name.split("_")[0]
    t = test.get("time")
    sent = test.metrics.get("bw", test.metrics.get("send_bw", 0.0))
    received = test.metrics.get("bw", test.metrics.get("recv_bw", 0.0))
    server = run.get("server_cpu_s")
    client = run.get("client_cpu_s", None if server is None else run.get("child_cpu_s", 0.0) - server)
    if server is None or client is None or t <= 0:
        raise CalibrationError(f"qperf-sizes run {run.get('run_id')}: no per-process CPU (client_cpu_s, server_cpu_s)",
                               where=str(stdout), hint="collect again with this version's runner")
    m = test.get("msg_size")
    sides = [("sender", client, sent), ("receiver", server, received)]
    if transport == "tcp":     # one stream's whole work: where the kernel charges softirq work between the two is arbitrary;
        # with the receive work the kernel deferred to its ksoftirqd threads (recorded by runners from issue 42 on)
        sides.append(("both", client + server + (run.get("ksoftirqd_cpu_s") or 0.0), received))
    name = {"rc": "rdma_rc", "ud": "rdma_ud"}.get(transport, transport)
    return [Sample(name, side, m, cpu / (rate * t), cpu / t, rate) for side, cpu, rate in sides if rate > 0 and cpu > 0]


def bundle_samples(bundle: Path) -> tuple[list[Sample], dict]:
    """Every sample of a bundle's qperf-sizes runs, and the bundle's lab ground truth (empty on loopback)."""
    from simcluster.fit.bundle_files import DATA_ERRORS, Bundle

    b = Bundle(Path(bundle))
    samples, truth = [], {}
    for run in b.runs("qperf-sizes"):
        try:
            samples += run_samples(run, b.file(run))
        except DATA_ERRORS as exc:
            b.skip(exc, str(run.get("run_id")))
        meta = run.get("meta") if isinstance(run.get("meta"), dict) else {}
        truth = meta.get("ground_truth") or truth
    if not samples:
        raise CalibrationError("no usable qperf-sizes run", where=str(bundle), hint="simcluster collect --tools qperf-sizes")
    return samples, truth


def sweep_bundles(folders: list[Path]) -> list[Path]:
    """Each folder itself when it is a bundle, else the bundles directly inside it, sorted."""
    out = []
    for f in folders:
        if (f / "qperf-sizes").is_dir():
            out.append(f)
        else:
            found = sorted(p.parent for p in f.glob("*/qperf-sizes") if p.is_dir())
            if not found:
                raise CalibrationError("no qperf-sizes bundle here (expected FOLDER/qperf-sizes or FOLDER/*/qperf-sizes)",
                                       where=str(f))
            out += found
    return out


def repeats(samples: list[Sample]) -> dict[tuple[str, str], dict[float, list[float]]]:
    """(transport, side) -> {m: every repeat's cost}, sizes in ascending order."""
    groups: dict[tuple[str, str], dict[float, list[float]]] = {}
    for s in samples:
        groups.setdefault((s.transport, s.side), {}).setdefault(s.m, []).append(s.cost)
    return {k: dict(sorted(by_m.items())) for k, by_m in groups.items()}


def medians(samples: list[Sample]) -> dict[tuple[str, str], dict[float, float]]:
    """(transport, side) -> {m: median cost over the repeats}."""
    return {k: {m: statistics.median(v) for m, v in by_m.items()} for k, by_m in repeats(samples).items()}


def bracket(values: list[float]) -> tuple[float, float]:
    """The order statistics either side of the median: x(k-1), x(k+1) of n = 2k + 1 sorted values (0-based), the two
    middle values of an even n (min and max of 2)."""
    x = sorted(values)
    k = len(x) // 2
    return (x[k - 1], x[k + 1]) if len(x) % 2 else (x[k - 1], x[k])


def bracketed_spread(inputs: dict, predict) -> float:
    """A prediction's noise from its fit's inputs: inputs {key: the repeats of one fit input}, predict({key: value}) ->
    the prediction. Half the range of the predictions when each input's median is replaced by either end of its
    bracket (every combination; an input of one value keeps it), relative to the prediction from the medians."""
    from itertools import product

    keys = list(inputs)
    ends = [bracket(inputs[k]) if len(inputs[k]) > 1 else (inputs[k][0],) for k in keys]
    center = predict({k: statistics.median(inputs[k]) for k in keys})
    predicted = [predict(dict(zip(keys, pick, strict=True))) for pick in product(*ends)]
    return (max(predicted) - min(predicted)) / (2 * center)


def fit_terms(costs: dict[float, float]) -> Terms:
    """c(m) = a + b / m through (m, cost) points, least squares on the relative error, a, b >= 0."""
    if len(costs) < 2:
        raise CalibrationError(f"a cost per byte and per message need at least 2 message sizes, got {len(costs)}")
    m = np.array(list(costs), dtype=float)
    c = np.array(list(costs.values()), dtype=float)
    (a, b), _ = nnls(np.column_stack([1 / c, 1 / (m * c)]), np.ones_like(c))
    return Terms(float(a), float(b), len(costs))


def held_out(costs: dict[float, float], split: float = SPLIT, low: float = 0.0) -> tuple[Terms | None, list[dict]]:
    """Fit on low <= m <= split, predict every m > split: the fitted terms and rows of (m, measured, predicted, error)."""
    seen = {m: c for m, c in costs.items() if low <= m <= split}
    unseen = {m: c for m, c in costs.items() if m > split}
    if len(seen) < 2 or not unseen:
        return None, []
    terms = fit_terms(seen)
    return terms, [{"m": m, "measured": c, "predicted": terms.cost(m), "error": terms.cost(m) / c - 1} for m, c in unseen.items()]


def pooled(bundles: list[Path]) -> dict[str, list[Sample]]:
    """Samples of several bundles pooled by configuration: "loopback" or "lab offloads=<mode>"."""
    out: dict[str, list[Sample]] = {}
    for bundle in bundles:
        samples, truth = bundle_samples(bundle)
        out.setdefault(config_label(truth), []).extend(samples)
    return out


def config_label(truth: dict) -> str:
    """loopback, or the lab's offload mode; offloads=all behind a tbf qdisc is its own configuration (tbf splits the
    64 KiB super-packets back into MTU frames in software), all without shaping (--lab-rate none) keeps them."""
    if not truth:
        return "loopback"
    offloads = truth.get("offloads", "none")
    if truth.get("pinned") is False:               # a lab run with client and server left unpinned (findings page)
        return f"lab unpinned offloads={offloads}"
    if truth.get("rate") == "none":
        return f"lab unshaped offloads={offloads}"
    return "lab offloads=all-resegmented" if offloads == "all" else f"lab offloads={offloads}"




def decompose(both: dict[str, Terms]) -> dict[str, float]:
    """One TCP stream's per-byte cost (both sides) split with the lab's offload modes, each fitted on its own:
        shaped (tbf):   none = copy + csum + pkt / MSS + q,   csum = copy + pkt / MSS + q
        unshaped:       csum = copy + pkt / MSS,              all  = copy + pkt / GSO
    -> csum (core-s per byte), pkt (core-s per packet), copy (core-s per byte); q (the tbf qdisc's share) drops out.
    A negative difference (noise larger than the term) is reported as it is, not clipped."""
    csum = both["lab offloads=none"].a - both["lab offloads=csum"].a
    free_csum, free_all = both["lab unshaped offloads=csum"].a, both["lab unshaped offloads=all"].a
    pkt = (free_csum - free_all) / (1 / MSS - 1 / GSO)
    return {"csum": csum, "pkt": pkt, "copy": free_all - pkt / GSO}


NEEDED = ("lab offloads=none", "lab offloads=csum", "lab unshaped offloads=csum", "lab unshaped offloads=all")


def report(bundles: list[Path], split: float = SPLIT) -> str:
    lines = []
    for config, samples in pooled(bundles).items():
        lines.append(f"\n{config}: fit on m <= {int(split)} B (TCP: from {TCP_FIT_MIN} B), predict larger (held out)")
        for (transport, side), costs in medians(samples).items():
            terms = fit_terms(costs)
            fitted, rows = held_out(costs, split, TCP_FIT_MIN if transport == "tcp" else 0.0)
            worst = max((abs(r["error"]) for r in rows), default=float("nan"))
            lines.append(f"  {transport:8s} {side:8s} all sizes: {terms.a * 1e9:6.3f} s/GB + {terms.b * 1e9:7.1f} ns/msg | "
                         f"small sizes only: {fitted.a * 1e9 if fitted else float('nan'):6.3f} s/GB + "
                         f"{fitted.b * 1e9 if fitted else float('nan'):7.1f} ns/msg; held-out worst |error| {worst:6.1%}")
            for r in rows:
                lines.append(f"      m={int(r['m']):>8d}  measured {r['measured'] * 1e9:7.3f} s/GB  predicted "
                             f"{r['predicted'] * 1e9:7.3f} s/GB  {r['error']:+6.1%}")
    parts = split_terms(bundles)
    if parts:
        lines.append(f"\nTCP, one stream, both sides (lab offload modes, all sizes): copy {parts['copy'] * 1e9:.3f} s/GB, "
                     f"checksum {parts['csum'] * 1e9:+.3f} s/GB, per packet {parts['pkt'] * 1e9:.0f} ns, per call "
                     f"{parts['msg'] * 1e9:.0f} ns")
    return "\n".join(lines)


def split_terms(bundles: list[Path]) -> dict[str, float] | None:
    """decompose() over the lab's offload modes (TCP, both sides, all sizes), with the per-call cost of the
    offloads=none fit; None unless every configuration of NEEDED is among the bundles."""
    configs = pooled(bundles)
    both = {c: fit_terms(medians(samples)[("tcp", "both")]) for c, samples in configs.items() if ("tcp", "both") in medians(samples)}
    if not all(k in both for k in NEEDED):
        return None
    return decompose(both) | {"msg": both["lab offloads=none"].b}


def folder_command(prog: str, argv: list[str] | None, report_of) -> int:
    """`python -m PROG FOLDER [FOLDER ...]` (a qperf-sizes bundle or a folder of them): print report_of(folders); bad
    input is one line on stderr and exit status 2."""
    from simcluster.errors import SimclusterError

    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if not args or any(a.startswith("-") for a in args):
            raise SimclusterError("expected FOLDER [FOLDER ...] (a qperf-sizes bundle or a folder of them)")
        print(report_of([Path(a) for a in args]))
    except (SimclusterError, OSError) as exc:
        print(f"{prog}: {exc.one_line() if isinstance(exc, SimclusterError) else exc}", file=sys.stderr)
        return 2
    return 0


def main(argv: list[str] | None = None) -> int:
    """The command line (module docstring); bad input is one line on stderr and exit status 2."""
    from simcluster.errors import SimclusterError

    args = list(sys.argv[1:] if argv is None else argv)
    try:
        text = _option(args, "--split", str(SPLIT))
        try:
            split = float(text)
        except ValueError:
            raise ValueError(f"--split: expected a number of bytes, got {text!r}") from None
        if "--card" in args or "--udp-card" in args:
            raise SimclusterError("--card and --udp-card moved: the lab cards are fitted through the count models by "
                                  "python -m simcluster.fit.stack_cards tcp|udp BUNDLE OUT.yaml")
        if not args or any(a.startswith("-") for a in args):
            raise SimclusterError("expected BUNDLE [BUNDLE ...] [--split BYTES]",
                                  hint=f"unknown option {next((a for a in args if a.startswith('-')), '')!r}" if args else "give a bundle")
        print(report([Path(a) for a in args], split))
    except (SimclusterError, ValueError, OSError) as exc:
        print(f"simcluster.fit.host_stack: {exc.one_line() if isinstance(exc, SimclusterError) else exc}", file=sys.stderr)
        return 2
    return 0


def _option(args: list[str], name: str, default):
    if name not in args:
        return default
    k = args.index(name)
    if k + 1 >= len(args):
        raise ValueError(f"{name}: expected a value after it")
    value = args[k + 1]
    del args[k:k + 2]
    return value


if __name__ == "__main__":
    raise SystemExit(main())
