"""Published interruption counts of large training jobs (calibration/published/reliability-*.yaml) and the check
`simcluster validate --published reliability`: each source's per-GPU rate (interruptions / (GPUs x hours), the
arithmetic its file names) predicts every other source's mean time between interruptions at that source's own GPU
count, M = 1 / (G r) (llm/goodput.py's Poisson assumption); nothing is fitted, so every row is held out unless its
file says otherwise. + = more time between interruptions predicted than published (a faster job).
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
    """One published run: its GPUs, how long it was watched and how many interruptions it had (the failures
    printed: unexpected ones where the source splits them, else the midpoint of a printed range)."""

    source: str
    run: int
    name: str
    gpus: int
    duration_s: float
    count: float
    counted: str

    @property
    def rate_per_gpu_s(self) -> float:
        return self.count / (self.gpus * self.duration_s)

    @property
    def mtbf_s(self) -> float:
        return self.duration_s / self.count


def interruptions(pub: Published, run: int) -> Interruptions:
    where = str(pub.path)
    if not 0 <= run < len(pub.runs):
        raise SimclusterError(f"run {run} is not a run of the file (runs 0-{len(pub.runs) - 1})", where=where)
    row = pub.runs[run]
    try:
        gpus, days = int(row["gpus"]), float(row["duration_days"])
        counts = row["interruptions"]
        if counts.get("unexpected") is not None:
            count, counted = float(counts["unexpected"]), "unexpected interruptions"
        else:
            low, high = float(counts["restarts_min"]), float(counts["restarts_max"])
            count, counted = (low + high) / 2.0, f"restarts, midpoint of {low:g}-{high:g}"
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise SimclusterError(f"run {run}: expected gpus, duration_days and interruptions (unexpected, or restarts_min and "
                              f"restarts_max): {exc}", where=where) from None
    if gpus <= 0 or days <= 0 or count <= 0:
        raise SimclusterError(f"run {run}: gpus, duration_days and the interruption count must be positive", where=where)
    return Interruptions(pub.name, run, str(row.get("name", "")), gpus, days * 86400.0, count, counted)


def published_rate(path: str | Path, run: int = 0) -> tuple[float, str]:
    """(interruptions per GPU-second, a label naming the file, run and arithmetic) for a scenario's failure_rate."""
    i = interruptions(read_published(path, KIND), run)
    return i.rate_per_gpu_s, (f"{i.source} run {run}: {i.count:g} {i.counted} / ({i.gpus:,} GPUs x "
                              f"{i.duration_s / 86400:g} days)")


def validate_published_reliability(path: str | Path | None = None) -> ReferenceValidation:
    pubs = [read_published(f, KIND) for f in published_files(path, "reliability-")]
    runs = [(p, interruptions(p, i)) for p in pubs for i in range(len(p.runs))]
    rows = []
    for target_pub, target in runs:
        for _, source in runs:
            if source.source == target.source:
                continue
            predicted = 1.0 / (target.gpus * source.rate_per_gpu_s)
            rows.append(ReferenceRow(
                target.source, target.run, f"{target.gpus:,} GPUs, {target.duration_s / 86400:g} days, rate from {source.source}",
                "mtbf_s", target.mtbf_s, predicted, predicted / target.mtbf_s - 1.0, target_pub.held_out(target.run),
                f"interruptions: published {target.count:g} ({target.counted}), predicted "
                f"{target.duration_s / predicted:.1f}; r = {source.rate_per_gpu_s * HOUR:.3g}/GPU-hour"))
    if not rows:
        raise SimclusterError("a reliability check needs runs from two sources", where=str(path or "calibration/published"))
    return ReferenceValidation("published reliability", 0.25, rows, {p.name: p.summary_why() for p in pubs})
