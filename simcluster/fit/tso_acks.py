"""The ACK count of TCP with TSO/GRO, the registered rule against the push rule (issue 42, session 34, tsoack;
docs/models/nic-and-cpu.md, "Batching rules"; findings "Session 34"). Development: both rules read every TSO/GRO
bundle of the H200 sweeps; the push rule was built after reading them, so its errors here are not held-out errors.

    registered  gso_acks(m)  = min(wire / 2, max(1, ceil(m / GSO) / 2))    one ACK per second super-packet, >= 1
    push        push_acks(m) = min(wire / 2, 1 + m / (2 x GSO))            one per write and one per two super-packets'
                                                                           worth of the stream (empirical constants,
                                                                           chosen on the development rows)

(hardware/transport_counts.py; wire = ceil(m / 1448), GSO = 65160 B). Each rule's cost is the batching rule's form
msg + skb x skbs + ack x acks(m) + byte x m fitted as fit/offload_counts.fit_tso (TCP 1-4 KiB and the bundle's two
largest sizes, the statistic of fit/offload_readout.py: the median over the repeats of core-seconds per byte).

    python -m simcluster.fit.tso_acks FOLDER [FOLDER ...]      per row: ACKs and cost error, registered -> push
    python -m simcluster.fit.tso_acks --predict SIZES [--register PATH] FOLDER [FOLDER ...]
                                both rules' counts at SIZES (10K,36K,...) and the push rule's cost there by the terms
                                fitted on each FOLDER's TSO/GRO bundle (cross-run: not a held-out prediction of any run);
                                --register writes the same text to PATH, a new file (never overwritten)

Where a bundle's runs recorded the server's TcpExt counters (runner/collect.py since session 34: delayed-ACK timer
fires, fast-path data hits, backlog coalescing), the report prints them per write: measurements, no rule reads them.
"""

from __future__ import annotations

import statistics
import sys
from functools import partial
from pathlib import Path

from simcluster.errors import CalibrationError, SimclusterError
from simcluster.fit import host_stack, offload_readout
from simcluster.fit import offload_counts as oc
from simcluster.hardware.transport_counts import push_acks

RULES = {"registered": oc.gso_acks, "push": push_acks}
EXTRA = ("tcp_delayed_acks", "tcp_hp_hits", "tcp_backlog_coalesce", "tcp_pure_acks")   # server TcpExt, per write


def _err(predicted: float, measured: float) -> float:
    return predicted / measured - 1 if measured > 0 else float("nan")


def bundle_rows(bundle: Path) -> list[dict]:
    """Per size above 4 KiB of a TSO/GRO bundle: the measured ACKs per write (server tcp_out_segs, median over the
    repeats), each rule's count and, at the sizes the fit did not read, each rule's cost error (the read-out's rows,
    offload_readout.predicted_rows, by that rule); [] for another bundle."""
    label, groups = oc.bundle_costs(bundle)
    tcp = groups.get(("tcp", "both"), {})
    if label != oc.TSO_CONFIG or not tcp:
        return []
    counts, fitted = oc.tso_measured_counts(bundle), oc.tso_fit_sizes(tcp)
    cost = {name: {r.m: r.error for r in offload_readout.predicted_rows(
        bundle.name, "tcp", "both", tcp, fitted, partial(oc.fit_tso, acks=rule), oc.TSO_FIT_HIGH)}
        for name, rule in RULES.items()}
    rows = []
    for m in sorted(tcp):
        if m <= oc.TSO_FIT_HIGH or m not in counts:
            continue
        row = {"bundle": f"{bundle.parent.name.removeprefix('h200-transport-')}/{bundle.name}", "m": m,
               "acks": counts[m]["acks"], "fitted": m in fitted}
        for name, rule in RULES.items():
            row[f"acks_{name}"] = _err(rule(m), counts[m]["acks"])
            row[f"cost_{name}"] = cost[name].get(m)
        rows.append(row)
    return rows


def _mean(rows: list[dict], key: str) -> str:
    values = [abs(r[key]) for r in rows if r[key] is not None]
    within = sum(v <= 0.10 for v in values)
    return f"{100 * statistics.fmean(values):5.1f}% ({within}/{len(values)} within 10%)" if values else "  n/a"


def folder_report(folders: list[Path]) -> str:
    rows = [r for b in host_stack.sweep_bundles(folders) for r in bundle_rows(b)]
    if not rows:
        raise CalibrationError("no TSO/GRO (unshaped, offloads all) TCP bundle with server counters",
                               where=", ".join(map(str, folders)))
    lines = [f"{'bundle':42s} {'size':>8s} {'ACKs':>5s} {'reg':>5s} {'push':>5s} {'ACK err reg -> push':>20s} "
             f"{'cost err reg -> push':>21s}"]
    for r in rows:
        cost = ("(fitted size)" if r["fitted"] else f"{r['cost_registered']:+7.1%} -> {r['cost_push']:+7.1%}")
        lines.append(f"{r['bundle']:42s} {int(r['m']):>8d} {r['acks']:5.2f} {oc.gso_acks(r['m']):5.2f} "
                     f"{push_acks(r['m']):5.2f} {r['acks_registered']:+8.1%} -> {r['acks_push']:+7.1%} {cost:>21s}")
    own = [r for r in rows if not r["bundle"].startswith("sizes-2026-11-28/")]   # the first sweep shared one core
    predicted = [r for r in rows if not r["fitted"]]
    lines += ["", "mean |error|                          registered -> push",
              f"ACKs, every size > 4 KiB, own-core sweeps  {_mean(own, 'acks_registered')} -> {_mean(own, 'acks_push')}",
              f"ACKs, predicted sizes, own-core sweeps     "
              f"{_mean([r for r in own if not r['fitted']], 'acks_registered')} -> "
              f"{_mean([r for r in own if not r['fitted']], 'acks_push')}",
              f"cost, predicted sizes, own-core sweeps     "
              f"{_mean([r for r in own if not r['fitted']], 'cost_registered')} -> "
              f"{_mean([r for r in own if not r['fitted']], 'cost_push')}",
              f"cost, predicted sizes, every sweep         {_mean(predicted, 'cost_registered')} -> "
              f"{_mean(predicted, 'cost_push')}"]
    counters = counter_lines(folders)
    return "\n".join(lines + ([""] + counters if counters else []))


def counter_lines(folders: list[Path]) -> list[str]:
    """The server's TcpExt counters per write (median over the repeats) of the bundles that recorded them."""
    lines = []
    for bundle in host_stack.sweep_bundles(folders):
        per_m: dict[float, list[dict]] = {}
        for _, test, n, delta in oc.tso_counted_runs(bundle):
            if all(k in delta for k in EXTRA):
                per_m.setdefault(test.get("msg_size"), []).append({k: delta[k] / n for k in EXTRA})
        for m, v in sorted(per_m.items()):
            lines.append(f"{bundle.parent.name.removeprefix('h200-transport-') + '/' + bundle.name:42s} {int(m):>8d} "
                         + " ".join(f"{statistics.median(x[k] for x in v):9.3f}" for k in EXTRA))
    return [f"{'server TcpExt per write':42s} {'size':>8s} " + " ".join(f"{k[4:]:>9.9s}" for k in EXTRA), *lines] \
        if lines else []


def predictions(sizes: list[float], folders: list[Path]) -> str:
    """Both rules' ACKs per write at `sizes`, and the push rule's both-sides cost there (s/GB) by each folder's TSO/GRO
    bundle's fitted terms."""
    lines = [f"{'size':>8s} {'wire':>5s} {'skbs':>5s} {'ACKs reg':>8s} {'ACKs push':>9s}",
             *(f"{int(m):>8d} {m / 1448:5.1f} {oc.skbs(m):5d} {oc.gso_acks(m):8.2f} {push_acks(m):9.2f}" for m in sizes),
             "", "push rule's cost, s/GB, terms fitted on (msg us, skb us, ack us, byte s/GB):"]
    for bundle in host_stack.sweep_bundles(folders):
        label, groups = oc.bundle_costs(bundle)
        if label != oc.TSO_CONFIG or not groups.get(("tcp", "both")):
            continue
        t = oc.fit_tso(oc.medians(groups[("tcp", "both")]), acks=push_acks)
        lines.append(f"{bundle.parent.name.removeprefix('h200-transport-')} ({t.msg * 1e6:.2f}, {t.skb * 1e6:.2f}, "
                     f"{t.ack * 1e6:.2f}, {t.byte * 1e9:.3f}): "
                     + ", ".join(f"{int(m) // 1024}K {t.cost(m) * 1e9:.3f}" for m in sizes))
    return "\n".join(lines)


def _sizes(text: str) -> list[float]:
    """Message sizes in bytes from "10K,36K,1M" (K = 1024, M = 1024**2); each must be a positive whole number."""
    units = {"K": 1024, "M": 1024**2}
    try:
        sizes = [float(int(v[:-1]) * units[v[-1]] if v[-1:] in units else int(v)) for v in text.split(",")]
    except (ValueError, IndexError):
        raise SimclusterError(f"--predict {text!r}: expected sizes as 10K,36K,1M") from None
    if any(m <= 0 for m in sizes):
        raise SimclusterError(f"--predict {text!r}: every size must be above 0 bytes, got "
                              f"{', '.join(str(int(m)) for m in sizes if m <= 0)}")
    return sizes


def main(argv: list[str] | None = None) -> int:
    """The command line (module docstring); bad input is one line on stderr and exit status 2."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] != ["--predict"]:
        return host_stack.folder_command("simcluster.fit.tso_acks", args, folder_report)
    register = Path(args[3]) if args[2:3] == ["--register"] and len(args) > 3 else None
    try:
        if len(args) < (5 if register else 3):
            raise SimclusterError("expected --predict SIZES [--register PATH] FOLDER [FOLDER ...]")
        sizes = _sizes(args[1])
        if register and register.exists():
            raise SimclusterError("a registered predictions file exists; registrations are never overwritten",
                                  where=str(register))
    except SimclusterError as exc:
        print(f"simcluster.fit.tso_acks: {exc.one_line()}", file=sys.stderr)
        return 2
    return host_stack.folder_command("simcluster.fit.tso_acks", args[4 if register else 2:],
                                     partial(_write_once, register, partial(predictions, sizes)))


def _write_once(path: Path | None, report_of, folders: list[Path]) -> str:
    """report_of(folders), also written to `path` (a new file: "x" never truncates) when one is given."""
    text = report_of(folders)
    if path is not None:
        with path.open("x", encoding="utf-8") as f:
            f.write(text + "\n")
    return text


if __name__ == "__main__":
    raise SystemExit(main())
