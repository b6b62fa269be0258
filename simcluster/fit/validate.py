"""Predicted versus measured, row by row, for an nccl-tests log and a collective card."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simcluster.collectives.interface import CollectiveModel
from simcluster.collectives.model import predict
from simcluster.traces.nccl_tests import CollectiveTrace

MIN_SCORED_BYTES = 1024  # the headline error is over sizes >= 1 KiB (below: launch noise only)


@dataclass(frozen=True)
class ValidationRow:
    size_bytes: int
    measured_s: float
    predicted_s: float
    protocol: str
    measured_busbw_Bps: float
    predicted_busbw_Bps: float

    @property
    def error(self) -> float:
        """Signed relative error of the predicted time."""
        return self.predicted_s / self.measured_s - 1.0


def validate(params: CollectiveModel, trace: CollectiveTrace) -> list[ValidationRow]:
    """Each measured row with its prediction; a log timed without CUDA graphs is predicted with the
    card's host launch floor (when it has one)."""
    rows = []
    for row in trace.rows:
        if row.size_bytes <= 0 or row.time_s <= 0:
            continue
        pred = predict(params, trace.op, row.size_bytes, trace.nranks, host_launch=not trace.cuda_graph_launches)
        rows.append(ValidationRow(row.size_bytes, row.time_s, pred.time_s, pred.protocol,
                                  row.busbw_Bps, pred.busbw_Bps))
    return rows


def summary(rows: list[ValidationRow], min_bytes: int = MIN_SCORED_BYTES) -> dict:
    def stats(selected):
        errors = np.abs([r.error for r in selected]) * 100
        if len(errors) == 0:
            return {"sizes": 0, "mean_abs_error_pct": None, "max_abs_error_pct": None}
        return {"sizes": len(errors), "mean_abs_error_pct": round(float(errors.mean()), 2),
                "max_abs_error_pct": round(float(errors.max()), 2)}
    return {"all_sizes": stats(rows), f"sizes_ge_{min_bytes}B": stats([r for r in rows if r.size_bytes >= min_bytes])}


@dataclass(frozen=True)
class OpValidation:
    """One collective of a trace bundle: the median of its rounds, predicted row by row."""
    op: str
    ranks: int
    cuda_graph: bool
    rounds: int
    basis: str               # "in sample (...)" when the card or its per-op profile was fitted on it, else "held out"
    trace: CollectiveTrace
    rows: list[ValidationRow]

    @property
    def in_sample(self) -> bool:
        return self.basis != HELD_OUT


HELD_OUT = "held out"


def profile_measured_on(params: CollectiveModel, ranks: int, host_launch: bool, path) -> bool:
    """The card's per-op profile that applies at (ranks, launch mode) was learned from this log (or its bundle)."""
    from pathlib import Path

    from simcluster.collectives.profile import matching

    used = matching(params.profiles, ranks, host_launch)
    return bool(used and used.source and path and Path(path).resolve().is_relative_to(Path(used.source).resolve()))


def _basis(params: CollectiveModel, paths: list, ranks: int, graph: bool, fitted_sha256: set[str]) -> str:
    from simcluster.traces.common import sha256_of

    if any(sha256_of(p) in fitted_sha256 for p in paths):
        return "in sample (the card was fitted on it)"
    if any(profile_measured_on(params, ranks, not graph, p) for p in paths):
        return "in sample (the card's per-op profile was measured on it)"
    return HELD_OUT


def validate_logs(params: CollectiveModel, logs: dict[str, list], fitted_sha256: set[str]
                  ) -> tuple[list[OpValidation], list[str]]:
    """Every op of `logs` (op -> its rounds' nccl-tests logs), rounds reduced to their median per (ranks, launch
    mode), in the order of schedule.OPS; and one line per log left out because it did not parse (the op's other
    rounds, and the other ops, are still validated)."""
    from simcluster.collectives.schedule import OPS
    from simcluster.errors import SimclusterError
    from simcluster.traces import nccl_tests

    out, skipped = [], []
    for op in sorted(logs, key=lambda o: (OPS.index(o) if o in OPS else len(OPS), o)):
        parsed = []
        for path in logs[op]:
            try:
                parsed.append((path, nccl_tests.parse(path, op=op)))
            except SimclusterError as exc:
                skipped.append(f"{op}: {exc.one_line()}")
        for (_, ranks, graph), trace in nccl_tests.median_of_rounds([t for _, t in parsed]).items():
            paths = [p for p, t in parsed if (t.nranks, bool(t.cuda_graph_launches)) == (ranks, graph)]
            out.append(OpValidation(trace.op, ranks, graph, len(paths),
                                    _basis(params, paths, ranks, graph, fitted_sha256), trace, validate(params, trace)))
    return out, skipped


def measured_sweep(params: CollectiveModel, card: dict, source, op: str, ranks: int
                   ) -> tuple[OpValidation | None, list[str]]:
    """The measurement of `op` at `ranks` in `source` (a trace bundle, or one nccl-tests log), median of its
    rounds, predicted row by row; CUDA-graph rounds preferred (GPU time, what a sweep predicts), else
    host-launched. None when the source has no such rounds; the lines of logs that did not parse."""
    from pathlib import Path

    from simcluster.card_document import fitted_sha256
    from simcluster.fit.bundle_files import timing_logs

    source = Path(source)
    logs = timing_logs(source).get(op, []) if source.is_dir() else [source]
    results, skipped = validate_logs(params, {op: logs}, fitted_sha256(card)) if logs else ([], [])
    mine = sorted((r for r in results if r.ranks == ranks), key=lambda r: not r.cuda_graph)
    return (mine[0] if mine else None), skipped


def size_notes(card: dict, sizes) -> list[str]:
    """A note when sizes reach past the card's fitted size range (valid_range.min_size / max_size)."""
    from simcluster.errors import SimclusterError
    from simcluster.units import parse_size

    vr = card.get("valid_range", {})
    if card.get("params", {}).get("kind_card"):   # a machine card's range is its probe's; its kind card's spans the sizes
        return []
    try:
        low, high = int(parse_size(str(vr["min_size"]))), int(parse_size(str(vr["max_size"])))
    except (KeyError, ValueError, SimclusterError):
        return []
    sizes = [s for s in sizes if s > 0]
    out = [s for s in sizes if s > high or s < low]
    if not out:
        return []
    return [f"{len(out)} of {len(sizes)} sizes lie outside the card's fitted range {low} B..{high} B: extrapolated"]


def card_notes(params: CollectiveModel, card: dict, op: str, ranks: int, host_launch: bool, trace_path: str = "") -> list[str]:
    """What a collective card says about predicting `op` at `ranks`: rank counts it never saw, the model's own
    notes (tuner table, registration, host floor, per-op profile applied or not), and (validate) a log that the
    card or its profile was learned from."""
    from pathlib import Path

    from simcluster.card_document import fitted_sha256
    from simcluster.traces.common import sha256_of

    notes = []
    machine_card = bool(card.get("params", {}).get("kind_card"))   # a kind card + a probe: the kind's ops and sizes hold
    ops_seen = [] if machine_card else card.get("valid_range", {}).get("ops", [])
    if ops_seen and op not in ops_seen:
        notes.append(f"the card was fitted on {', '.join(ops_seen)}; {op} is predicted from the model's structure")
    ranks_seen = card.get("valid_range", {}).get("ranks", [])
    if ranks_seen and ranks not in ranks_seen:
        notes.append(f"the card was fitted at ranks {ranks_seen}; {ranks} ranks is an extrapolation")
    notes += params.notes(op, ranks, host_launch)
    if profile_measured_on(params, ranks, host_launch, trace_path):
        notes.append("this log is part of the profile's own measurement: the errors below are in sample")
    if trace_path and Path(trace_path).is_file() and sha256_of(trace_path) in fitted_sha256(card):
        notes.append("the card was fitted on this log: the errors below are in sample")
    return notes
