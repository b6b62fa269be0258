"""Published interruption counts of large training jobs (calibration/published/reliability-*.yaml) and the check
`simcluster validate --published reliability`: each run's per-GPU rate (interruptions / (GPUs x hours), or failures
per node-day / GPUs per node: the arithmetic its file names) predicts every other run's mean time between
interruptions (a count over a duration, or a measured MTTF at a job size) at that run's GPU count, M = 1 / (G r)
(llm/goodput.py's Poisson assumption); nothing is fitted, so every row is held out unless its file says otherwise.
+ = more time between interruptions predicted than published (a faster job).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from simcluster.errors import SimclusterError
from simcluster.reference import Published, published_files, read_published
from simcluster.results import ReferenceRow, ReferenceValidation

KIND = "published-reliability"
HOUR = 3600.0


@dataclass(frozen=True)
class Interruptions:
    """One published run: a per-GPU rate (interruptions over GPUs x time watched, or a rate per node-day), a mean time
    between interruptions at a job size, or both. Interruptions counted: unexpected ones where the source splits
    them, else the restarts printed."""

    source: str
    run: int
    name: str
    gpus: int | None
    rate_per_gpu_s: float | None     # what a prediction can start from
    mtbf_s: float | None             # what a prediction can be checked against
    counted: str

    @property
    def label(self) -> str:
        return f"{self.source} run {self.run}: {self.counted}"


def interruptions(pub: Published, run: int) -> Interruptions:
    where = str(pub.path)
    if not 0 <= run < len(pub.runs):
        raise SimclusterError(f"run {run} is not a run of the file (runs 0-{len(pub.runs) - 1})", where=where)
    row = pub.runs[run]
    try:
        if "failures_per_1000_node_days" in row:   # a cluster's rate, no job size
            per_node_day = float(row["failures_per_1000_node_days"]) / 1000.0
            return _checked(pub, run, row, None, per_node_day / (int(row["gpus_per_node"]) * 86400.0), None,
                            f"{row['failures_per_1000_node_days']} failures per 1000 node-days / {row['gpus_per_node']} GPUs per node")
        gpus = int(row["gpus"])
        if "mttf_hours" in row:                   # a measured MTTF at a job size
            return _checked(pub, run, row, gpus, None, float(row["mttf_hours"]) * HOUR, f"MTTF {row['mttf_hours']} h at {gpus:,} GPUs")
        days, counts = float(row["duration_days"]), row["interruptions"]
        if counts.get("unexpected") is not None:
            count, what = float(counts["unexpected"]), "unexpected interruptions"
        else:
            count = float(counts["restarts"])
            what = "restarts (approximate)" if counts.get("approximate") else "restarts"
        duration = days * 86400.0
        return _checked(pub, run, row, gpus, count / (gpus * duration), duration / count,
                        f"{count:g} {what} / ({gpus:,} GPUs x {days:g} days)")
    except (KeyError, TypeError, ValueError, AttributeError, ZeroDivisionError) as exc:
        raise SimclusterError(f"run {run}: expected failures_per_1000_node_days and gpus_per_node, gpus and mttf_hours, or gpus, "
                              f"duration_days and interruptions (unexpected, or restarts): {exc}",
                              where=where) from None


def _checked(pub: Published, run: int, row: dict, gpus, rate, mtbf, counted: str) -> Interruptions:
    if any(v is not None and not v > 0 for v in (gpus, rate, mtbf)):
        raise SimclusterError(f"run {run}: GPUs, rates, durations and counts must be positive", where=str(pub.path))
    return Interruptions(pub.name, run, str(row.get("name", "")), gpus, rate, mtbf, counted)


def published_rate(path: str | Path, run: int = 0) -> tuple[float, str]:
    """(interruptions per GPU-second, a label naming the file, run and arithmetic) for a scenario's failure_rate."""
    i = interruptions(read_published(path, KIND), run)
    if i.rate_per_gpu_s is None:
        raise SimclusterError(f"run {run} gives an MTTF at one job size, not a rate", where=str(path),
                              hint="name a run with interruptions over a duration, or a rate per node-day")
    return i.rate_per_gpu_s, i.label


def validate_published_reliability(path: str | Path | None = None) -> ReferenceValidation:
    """Every run with a rate predicts every other run's MTBF at that run's GPU count (M = 1 / (G r)); a file's
    runs_not_compared are left out as targets."""
    pubs = [read_published(f, KIND) for f in published_files(path, "reliability-")]
    runs = [(p, interruptions(p, i)) for p in pubs for i in range(len(p.runs))]
    rows = []
    for target_pub, target in runs:
        skip = (target_pub.usage.get("runs_not_compared") or {}).get(target.run)
        if target.mtbf_s is None or skip:
            continue
        for _, source in runs:
            if source.rate_per_gpu_s is None or (source.source, source.run) == (target.source, target.run):
                continue
            predicted = 1.0 / (target.gpus * source.rate_per_gpu_s)
            rows.append(ReferenceRow(
                target.source, target.run, f"{target.gpus:,} GPUs; rate from {source.source.removeprefix('reliability-')} "
                f"run {source.run}", "mtbf_s", target.mtbf_s, predicted, predicted / target.mtbf_s - 1.0,
                target_pub.held_out(target.run), f"published: {target.counted}; r = {source.rate_per_gpu_s * HOUR:.3g}/GPU-hour "
                f"({source.counted})"))
    rows += _checkpoint_rows(pubs)
    if not rows:
        raise SimclusterError("a reliability check needs a run with a rate and another with an MTBF",
                              where=str(path or "calibration/published"))
    return ReferenceValidation("published reliability", 0.25, rows, {p.name: p.summary_why() for p in pubs})


def _checkpoint_rows(pubs: list[Published]) -> list[ReferenceRow]:
    """A run's printed checkpoint size against llm/goodput.py's bytes per parameter (Megatron's bf16 weight, fp32
    master, m and v); + = a smaller checkpoint predicted (a faster write)."""
    from simcluster.llm.spec import MEGATRON

    per_param = MEGATRON.param_bytes + MEGATRON.state_bytes
    rows = []
    for pub in pubs:
        for i, row in enumerate(pub.runs):
            ck = row.get("checkpoint")
            if not isinstance(ck, dict) or ck.get("bytes") is None:
                continue
            try:
                measured, params = float(ck["bytes"]), float(ck["parameters"])
            except (KeyError, TypeError, ValueError):
                raise SimclusterError(f"run {i}: checkpoint needs bytes and parameters (numbers)", where=str(pub.path)) from None
            predicted = params * per_param
            rows.append(ReferenceRow(pub.name, i, f"checkpoint of {params / 1e9:g}B parameters", "checkpoint_bytes", measured,
                                     predicted, 1.0 - predicted / measured, pub.held_out(i),
                                     f"{per_param:g} bytes per parameter predicted, {measured / params:.2f} published"))
    return rows
