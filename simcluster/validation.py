"""`simcluster validate`: predictions beside measurements the user names, as typed results.

  an nccl-tests log + a collective card   -> LogValidation    (row by row, the card's notes, the parser's warnings)
  a trace bundle + a collective card      -> BundleValidation (every op, median of its rounds, in sample or held out)
  a qperf output + a scenario             -> QperfValidation  (each qperf test of the scenario's qperf job)
  --published nccl|llm|reliability [FOLDER | FILE]    -> ReferenceValidation (published runs, reference/nccl.py, reference/llm.py)
  --decisions FOLDER                      -> DecisionValidation  (NCCL's logged decisions, reference/decisions.py)
Text for each is in report/validation.py; the CLI only chooses which one and prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from simcluster.errors import SimclusterError
from simcluster.fit.validate import OpValidation, ValidationRow, card_notes, summary


def _rows_json(rows: list[ValidationRow]) -> list[dict]:
    return [{"size_B": r.size_bytes, "measured_s": r.measured_s, "predicted_s": r.predicted_s,
             "error_pct": r.error * 100, "protocol": r.protocol} for r in rows]


@dataclass(frozen=True)
class LogValidation:
    trace: object                         # traces.nccl_tests.CollectiveTrace
    card_path: str
    card_name: str
    notes: list[str]
    rows: list[ValidationRow]

    @property
    def skipped(self) -> list[str]:
        return [f"{self.trace.path}: {w}" for w in self.trace.warnings]

    def to_json(self) -> dict:
        return {"trace": self.trace.path, "card": self.card_path, "op": self.trace.op, "ranks": self.trace.nranks,
                "warnings": self.trace.warnings, "summary": summary(self.rows), "rows": _rows_json(self.rows)}


@dataclass(frozen=True)
class BundleValidation:
    bundle: str
    card_path: str
    card_name: str
    ops: list[OpValidation]
    notes: list[str]
    skipped: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"bundle": self.bundle, "card": self.card_path, "skipped": self.skipped, "ops": [
            {"op": r.op, "ranks": r.ranks, "cuda_graph": r.cuda_graph, "rounds": r.rounds, "in_sample": r.in_sample,
             "basis": r.basis, "summary": summary(r.rows), "rows": _rows_json(r.rows)} for r in self.ops]}


@dataclass(frozen=True)
class QperfValidation:
    trace: str
    scenario: str
    rows: list[dict]                      # test, measured, predicted (bytes/s or s), error_pct
    skipped: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"trace": self.trace, "scenario": self.scenario, "rows": self.rows}


def validate_log(trace_path: str, card_path: str, op: str | None = None) -> LogValidation:
    from simcluster.cards import load_collective
    from simcluster.fit.validate import validate
    from simcluster.traces import nccl_tests

    params, card = load_collective(card_path)
    trace = nccl_tests.parse(trace_path, op=op)
    if trace.nodes > 1:
        raise SimclusterError(f"the log ran on {trace.nodes} nodes; card {card_path} models one node's NVLink domain",
                              where=trace_path, hint="validate it against a machine: --scenario FILE (nodes, NIC card, fabric)")
    notes = card_notes(params, card, trace.op, trace.nranks, not trace.cuda_graph_launches, trace.path)
    return LogValidation(trace, card_path, str(card.get("name")), notes, validate(params, trace))


def validate_log_on_scenario(trace_path: str, scenario_path: str, op: str | None = None) -> LogValidation:
    """An nccl-tests log (one node or several) against a scenario machine of the same GPU count: every size predicted
    as `predict collective --scenario` predicts it (NCCL's algorithm and protocol; across nodes the fabric model)."""
    from simcluster.build import machine_predictions
    from simcluster.scenario import load_variants
    from simcluster.traces import nccl_tests

    trace = nccl_tests.parse(trace_path, op=op)
    variants = load_variants(scenario_path)
    label, sc = variants[0]
    m = sc.machine
    gpus = m.nodes * m.gpus_per_node
    if trace.nranks != gpus:
        raise SimclusterError(f"the log ran {trace.nranks} ranks on {trace.nodes} node(s); the scenario's machine has "
                              f"{gpus} GPUs ({m.nodes} x {m.gpus_per_node})", where=scenario_path,
                              hint="set machine.nodes and gpus_per_node to the log's")
    if m.card is None:
        raise SimclusterError("the machine has no collective card (machine.card)", where=scenario_path)
    notes = [f"the scenario's first variant, '{label}', of {len(variants)} (one machine per validation)"] if len(variants) > 1 else []
    if trace.nodes > 1 and trace.ranks_per_node != m.gpus_per_node:
        notes.append(f"the log ran {trace.ranks_per_node} ranks per node, the scenario {m.gpus_per_node} GPUs per node")
    host = not trace.cuda_graph_launches
    if host:
        notes.append("host-launched: predicted with the card's host launch floor" if m.domains == 1 and not m.nvls_card else
                     "the log is host-launched: small sizes include the host's launch cost, which this machine's model "
                     "(GPU time: the fabric, or NVLS) leaves out")
    measured = [r for r in trace.rows if r.size_bytes > 0 and r.time_s > 0]
    preds, _ = machine_predictions(sc, trace.op, [r.size_bytes for r in measured], host_launch=host)
    rows = [ValidationRow(r.size_bytes, r.time_s, p.time_s, f"{p.protocol} / {p.algorithm}" if getattr(p, "algorithm", "") else
                          p.protocol, r.busbw_Bps, p.busbw_Bps) for r, p in zip(measured, preds, strict=True)]
    return LogValidation(trace, scenario_path, f"scenario {sc.name}", notes, rows)


def validate_bundle(bundle: str, card_path: str, op: str | None = None) -> BundleValidation:
    """Every collective of a trace bundle against one card: a line per op (median of its rounds), which ops the
    card was fitted on (in sample) and which it never saw (held out)."""
    from simcluster.card_document import fitted_sha256
    from simcluster.cards import load_collective
    from simcluster.collectives.schedule import canonical_op
    from simcluster.fit.bundle_files import timing_logs
    from simcluster.fit.validate import validate_logs

    params, card = load_collective(card_path)
    logs = timing_logs(bundle)
    if op:
        logs = {o: paths for o, paths in logs.items() if o == canonical_op(op)}
        if not logs:
            raise SimclusterError(f"--op {op}: the bundle has no timing runs of it", where=bundle)
    results, skipped = validate_logs(params, logs, fitted_sha256(card))
    if not results:
        raise SimclusterError("no collective of the bundle could be validated", where=bundle,
                              hint="; ".join(skipped)[:300] or None)
    notes: list[str] = []
    for r in results:
        notes += [n for n in card_notes(params, card, r.op, r.ranks, not r.cuda_graph) if n not in notes]
    return BundleValidation(bundle, card_path, str(card.get("name")), results, notes, skipped)


def validate_qperf(trace_path: str, scenario_path: str | None) -> QperfValidation:
    from simcluster.build import run_scenario
    from simcluster.results import QperfResult
    from simcluster.scenario import load
    from simcluster.traces import qperf

    if not scenario_path:
        raise SimclusterError("validating a qperf trace needs --scenario (a scenario with a 'kind: qperf' job)")
    trace = qperf.parse(trace_path)
    jobs = [j for j in run_scenario(load(scenario_path)).jobs if isinstance(j, QperfResult)]
    if not jobs:
        raise SimclusterError("the scenario has no 'kind: qperf' job", where=scenario_path)
    rows = []
    for test, predicted in jobs[0].predicted.items():
        found = [t for t in trace.tests if t.name == test and t.error is None]
        if not found:
            continue
        measured = found[-1].get("bw" if test.endswith("_bw") else "latency")
        rows.append({"test": test, "unit": "B/s" if test.endswith("_bw") else "s", "measured": measured,
                     "predicted": predicted, "error_pct": (predicted / measured - 1) * 100})
    if not rows:
        raise SimclusterError("no test of the scenario's qperf job is in the trace", where=trace_path)
    return QperfValidation(trace_path, scenario_path, rows)


def validate_path(path: str | None, card: str | None, scenario: str | None, op: str | None,
                  published: str | None = None, decisions: str | None = None):
    """The validation that fits what is asked: published runs (`published` nccl or llm; `path` a folder or file of
    them, default calibration/published), NCCL's logged decisions (`decisions` a folder of bundles), or what `path`
    is: a bundle folder, a qperf output, or an nccl-tests log."""
    from simcluster.traces.qperf import looks_like_qperf

    if published or decisions:
        given = [f"--{k}" for k, v in (("card", card), ("scenario", scenario), ("op", op)) if v]
        if given or (published and decisions):
            raise SimclusterError(f"{(given or ['--decisions'])[0]} does not apply to --{'published' if published else 'decisions'}")
        if decisions:
            from simcluster.reference.decisions import validate_decisions

            return validate_decisions(decisions)
        from simcluster.reference.llm import validate_published_llm
        from simcluster.reference.nccl import validate_published_nccl
        from simcluster.reference.reliability import validate_published_reliability

        return {"nccl": validate_published_nccl, "llm": validate_published_llm,
                "reliability": validate_published_reliability}[published](path)
    if path is None:
        raise SimclusterError("validate needs a trace (an nccl-tests log, a qperf output or a bundle), --published or --decisions")
    if Path(path).is_dir():
        if not card or scenario:
            raise SimclusterError("validating a trace bundle needs --card (and no --scenario)")
        return validate_bundle(path, card, op)
    if looks_like_qperf(path):
        return validate_qperf(path, scenario)
    if card and scenario:
        raise SimclusterError("give --card (one node's card) or --scenario (a machine), not both")
    if scenario:
        return validate_log_on_scenario(path, scenario, op)
    if not card:
        raise SimclusterError("validating an nccl-tests log needs --card (one node) or --scenario (any machine)")
    return validate_log(path, card, op)
