"""The read-out of the batching rules (fit/offload_counts.py) and the UDP receiver's count model
(fit/udp_receiver_counts.py; issue 42, session 33, tso): per bundle, TCP both sides by the TSO/GRO rule (offloads all,
unshaped), the loopback UDP sender by its two skb regimes and the UDP receiver (every configuration) by its wake-up
rule, every size the fit did not read predicted; the statistic, error, noise and verdict as the registered read-out's (fit/host_stack_readout.py).

    python -m simcluster.fit.offload_readout FOLDER [FOLDER ...]

FOLDER is a bundle or a folder of bundles; a bundle with neither rule's configuration gives no rows. Error =
predicted / median - 1; judged: every predicted row (the fitted sizes are not rows). A sweep registered with this
read-out (host_stack_readout.REGISTERED_READ) ends with its whole registered verdict: these rows and the lab UDP
sender's that host_stack_readout judges there.
"""

from __future__ import annotations

import statistics
from functools import partial
from pathlib import Path

from simcluster.errors import CalibrationError
from simcluster.fit import host_stack, host_stack_readout, udp_counts
from simcluster.fit import offload_counts as oc
from simcluster.fit import udp_receiver_counts as rc
from simcluster.fit.host_stack_readout import Row, noise, report
from simcluster.hardware.transport_counts import TSO_ACK_COUNTS

# sweep (its folder's name) -> the TSO/GRO ACK count rule its README registered, by its NIC card ack_rule key
# (transport_counts.TSO_ACK_COUNTS; a sweep not named here: the fifth run's "tso-gro", gso_acks); the sixth sweep
# registered the push rule (session 34, tsoack)
TSO_ACK_RULES = {"h200-transport-sizes6-2026-11-29": "tso-push"}


def tso_ack_rule_name(bundle: Path) -> str:
    """The ack_rule key (transport_counts.TSO_ACK_COUNTS) of the count the bundle's sweep (its parent folder)
    registered for TSO/GRO."""
    return TSO_ACK_RULES.get(Path(bundle).parent.name, "tso-gro")


def tso_ack_rule(bundle: Path):
    """The ACK count rule (ACKs per write of m bytes) the bundle's sweep registered for TSO/GRO."""
    return TSO_ACK_COUNTS[tso_ack_rule_name(bundle)]


def predicted_rows(config: str, transport: str, side: str, by_m: dict[float, list[float]], fitted: list[float], fit,
          above: float) -> list[Row]:
    """The rows of every size above `above` not in `fitted`, predicted by fit({m: median}).cost(m), with the fit
    inputs' noise."""
    terms = fit(oc.medians(by_m))
    inputs = {m: by_m[m] for m in fitted}
    out = []
    for m in oc.predicted_sizes(by_m, fitted, above):
        v = by_m[m]
        spread = host_stack.bracketed_spread(inputs, lambda meds, m=m: fit(meds).cost(m))
        out.append(Row(config, transport, side, m, len(v), statistics.median(v), max(v) / min(v) - 1, noise(v),
                       terms.cost(m), spread, True))
    return out


def bundle_rows(bundle: Path, notes: list[str]) -> list[Row]:
    """TCP both sides by the TSO/GRO rule (offloads all, unshaped) and the loopback UDP sender by its two regimes."""
    label, groups = oc.bundle_costs(bundle)
    rows: list[Row] = []
    tcp, send = groups.get(("tcp", "both"), {}), groups.get(("udp", "sender"), {})
    try:
        if label == oc.TSO_CONFIG and tcp:
            rows += predicted_rows(bundle.name, "tcp", "both", tcp, oc.tso_fit_sizes(tcp),
                          partial(oc.fit_tso, acks=tso_ack_rule(bundle)), oc.TSO_FIT_HIGH)
        if label == "loopback" and send:
            rows += predicted_rows(bundle.name, "udp", "sender", send,
                          [m for m in send if m <= oc.udp_counts.FIT_HIGH] + oc.paged_fit_sizes(send),
                          oc.fit_paged_loopback, udp_counts.FIT_HIGH)
    except CalibrationError as exc:
        notes.append(f"{bundle.name:26s} not predicted: {exc.one_line()}")
    if groups.get(("udp", "receiver")):
        try:
            rows += receiver_rows(bundle, label == "loopback")
        except CalibrationError as exc:
            notes.append(f"{bundle.name:26s} UDP receiver not predicted: {exc.one_line()}")
    return rows


def sender_model(bundle: Path, loopback: bool):
    """The same bundle's UDP sender count model (per_datagram(m)): loopback's two regimes, or the lab's udp_counts."""
    lb, send, loop = udp_counts.bundle_inputs(bundle)
    return oc.fit_paged_loopback(oc.medians(send)) if loopback else udp_counts.fit_medians(lb, send, loop)


def receiver_rows(bundle: Path, loopback: bool) -> list[Row]:
    """The UDP receiver at every size its fit did not read: C(m) with W from the sender's predicted time per datagram."""
    runs = rc.bundle_points(bundle)
    points = rc.medians(runs)
    fitted = rc.fit_sizes(points)
    terms, sender = rc.fit(points, loopback), sender_model(bundle, loopback)
    costs = {m: [r[0] for r in v] for m, v in runs.items()}

    def predict(meds: dict[float, float], m: float) -> float:
        moved = {k: p if k not in meds else rc.Point(meds[k], p.wakes, p.sender) for k, p in points.items()}
        return rc.fit(moved, loopback).per_datagram(m, sender.per_datagram(m)) / m

    out = []
    for m in oc.predicted_sizes(points, fitted, udp_counts.FIT_HIGH):
        v = [c / m for c in costs[m]]
        spread = host_stack.bracketed_spread({k: costs[k] for k in fitted}, lambda meds, m=m: predict(meds, m))
        out.append(Row(bundle.name, "udp", "receiver", m, len(v), statistics.median(v), max(v) / min(v) - 1, noise(v),
                       terms.per_datagram(m, sender.per_datagram(m)) / m, spread, True))
    return out


def _error(predicted: float, measured: float) -> str:
    return f"{predicted / measured - 1:+7.1%}" if measured > 0 else f"{'n/a':>7s}"


def counts_report(bundles: list[Path]) -> list[str]:
    """The rules' own counts against the bundles' counters, per message: TSO/GRO super-packets (server tcp_in_segs) and
    ACKs (server tcp_out_segs); the UDP receiver's wake-ups per datagram (server context switches)."""
    lines = [f"{'configuration':26s} {'count':22s} {'size':>8s} {'measured':>9s} {'predicted':>9s} {'error':>7s}"]
    for bundle in bundles:
        label, groups = oc.bundle_costs(bundle)
        if label == oc.TSO_CONFIG:
            for m, got in oc.tso_measured_counts(bundle).items():
                for name, rule in (("super-packets/msg", oc.skbs), ("ACKs/msg", tso_ack_rule(bundle))):
                    key = "skbs" if name.startswith("super") else "acks"
                    lines.append(f"{bundle.name:26s} {name:22s} {int(m):>8d} {got[key]:9.2f} {rule(m):9.2f} "
                                 f"{_error(rule(m), got[key])}")
        if groups.get(("udp", "receiver")):
            loopback = label == "loopback"
            try:
                points = rc.medians(rc.bundle_points(bundle))
                terms, sender = rc.fit(points, loopback), sender_model(bundle, loopback)
            except CalibrationError:
                continue
            for m, p in points.items():
                w = terms.wakes(m, sender.per_datagram(m))
                lines.append(f"{bundle.name:26s} {'receiver wakes/datagram':22s} {int(m):>8d} {p.wakes:9.2f} {w:9.2f} "
                             f"{_error(w, p.wakes)}{'  (fitted size)' if m in rc.fit_sizes(points) else ''}")
    return lines if len(lines) > 1 else []


def folder_report(folders: list[Path]) -> str:
    notes: list[str] = []
    bundles = host_stack.sweep_bundles(folders)
    rows = [r for b in bundles for r in bundle_rows(b, notes)]
    if not rows:
        raise CalibrationError("no row: the batching rules need a TSO/GRO (unshaped, offloads all) TCP bundle or a "
                               "loopback UDP bundle with their fit sizes", where=", ".join(map(str, folders)),
                               hint="; ".join(n.split(None, 1)[1] for n in notes) or None)
    counts = counts_report(bundles)
    return report(rows, notes) + ("\n\nCounts (each rule's own, against the run's counters):\n" + "\n".join(counts)
                                  if counts else "") + registered_total(bundles, rows)


def registered_total(bundles: list[Path], rows: list[Row]) -> str:
    """For a sweep registered with this read-out (host_stack_readout.REGISTERED_READ): its whole registered verdict,
    these rows with the rows host_stack_readout judges there (its lab UDP sender), as one more "all" line; else ""."""
    theirs = [r for b in bundles if host_stack_readout.registered_read(b) == host_stack_readout.BATCHING
              for r in host_stack_readout.bundle_rows(b) if r.judged]
    if not theirs:
        return ""
    verdict = report([*rows, *theirs]).splitlines()[-1].split(None, 1)[1]
    return (f"\n\nRegistered total (these {len(rows)} rows and host_stack_readout's {len(theirs)} judged UDP sender "
            f"rows):\n{'all registered':26s} {verdict}")


def main(argv: list[str] | None = None) -> int:
    """The command line (module docstring); bad input is one line on stderr and exit status 2."""
    return host_stack.folder_command("simcluster.fit.offload_readout", argv, folder_report)


if __name__ == "__main__":
    raise SystemExit(main())
