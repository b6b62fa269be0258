"""`simcluster calibrate`: which fit a set of inputs asks for, decided once. Trace bundles (folders) give every card of
each bundle, or with --kind a kind card across machines, with --kind-card one machine's terms; a multi-node nccl-tests
log (or any log given with a scenario) the NIC's inter-node terms; a qperf output a NIC card; nccl-tests logs a
collective card. The library returns the card(s); the CLI writes them (simcluster/files.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from simcluster import output
from simcluster.errors import SimclusterError


@dataclass(frozen=True)
class Calibrated:
    """One card for the output file (`card`, with a message saying what was fitted), or a bundle's cards for the
    output folder (`documents`: file name -> YAML; empty when no card could be fitted: `nothing_fitted`), and one
    line per input that was skipped."""

    card: dict | None = None
    message: str = ""
    documents: dict[str, str] | None = None
    problems: tuple[str, ...] = ()


def calibrate(traces: list[str], output_path: str, name: str | None = None, kind: bool = False, kind_card: str | None = None,
              collective_card: str | None = None, op_profile: str | None = None, scenario: str | None = None,
              variant: str | None = None, op: str | None = None, transport: str | None = None, line_rate: str | None = None,
              nccl_log: list[str] | None = None, model: str | None = None) -> Calibrated:
    if kind and kind_card:
        raise SimclusterError("--kind writes a kind card, --kind-card fits a machine card with one: give one of them")
    if kind_card and len(traces) > 1:
        raise SimclusterError("--kind-card fits one machine's terms: give its one probe bundle", where=", ".join(traces)[:200])
    if (kind or kind_card) and not Path(traces[0]).is_dir():
        raise SimclusterError(f"{traces[0]}: --kind and --kind-card read trace bundles (simcluster collect), not log files")
    name = name or Path(output_path).stem
    if Path(traces[0]).is_dir():
        return _bundles(traces, output_path, name, kind, kind_card, collective_card, op_profile)
    if collective_card:
        raise SimclusterError("--collective-card applies to bundle folders only", hint="pass bundle folders")
    from simcluster.fit import cards
    from simcluster.fit.fabric import internode_card, multi_node_log
    from simcluster.traces.qperf import looks_like_qperf

    if scenario or multi_node_log(traces[0]):
        card, message = internode_card(traces, scenario, variant, op, name)
        return Calibrated(output.check(card, traces[0]), message)
    if looks_like_qperf(traces[0]):
        if len(traces) != 1:
            raise SimclusterError("a NIC card is fitted from one qperf output file", hint="give one file")
        return Calibrated(*cards.nic_card(traces[0], transport, line_rate, name))
    return Calibrated(*cards.collective_card(traces, op, nccl_log or [], op_profile, name, model))


def _bundles(traces: list[str], output_path: str, name: str, kind: bool, kind_card: str | None, collective_card: str | None,
             op_profile: str | None) -> Calibrated:
    not_dirs = [t for t in traces if not Path(t).is_dir()]
    if not_dirs:
        raise SimclusterError(f"{not_dirs[0]}: not a bundle folder", hint="pass bundle folders, or trace files, not both")
    if kind or kind_card:
        from simcluster.fit import machine

        return Calibrated(*(machine.kind_card(traces, name) if kind else
                            machine.machine_card(traces[0], kind_card, output_path, name)))
    from simcluster.fit.bundle import calibrate_bundles

    result = calibrate_bundles(traces, collective_card, op_profile)
    return Calibrated(documents=result.documents, problems=tuple(result.problems))


def nothing_fitted(traces: list[str], problems: tuple[str, ...]) -> SimclusterError:
    """The error of bundles that gave no card (raised once their skipped inputs are printed)."""
    return SimclusterError("no card could be fitted from the bundle(s)", where=", ".join(traces),
                           hint="each skipped input is named above" if problems else "no traces of a known tool")
