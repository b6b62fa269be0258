"""Published interruption counts of large training jobs (calibration/published/reliability-*.yaml), each run read
into a per-GPU rate (interruptions / (GPUs x hours), or failures per node-day / GPUs per node: the arithmetic its file
names) or a mean time between interruptions at a job size; `published_rate` is what a scenario's
`failure_rate: {published: FILE, run: N}` reads (llm/reliability.py), `simcluster validate --published reliability`
(reference/reliability.py) checks each run's rate against the others."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from simcluster.errors import SimclusterError
from simcluster.published import Published, checked, flag, read_published
from simcluster.strict import count, field, known_keys, positive

KIND = "published-reliability"
HOUR = 3600.0
RUN_KEYS = {"name", "gpus", "gpus_note", "duration_days", "interruptions", "checkpoint", "restart_s", "checkpoint_s",
            "checkpoint_interval_s", "manual_interventions", "effective_training_time", "unexpected_by_cause",
            "failures_per_1000_node_days", "gpus_per_node", "mttf_hours", "projected"}
COUNT_KEYS = {"total", "planned", "unexpected", "restarts", "approximate"}


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


def count_interval(events: float, level: float = 0.95) -> tuple[float, float]:
    """The exact (Garwood) Poisson interval of a count: (chi2(a/2, 2k) / 2, chi2(1 - a/2, 2k + 2) / 2)."""
    from scipy.stats import chi2

    alpha = 1.0 - level
    low = chi2.ppf(alpha / 2, 2 * events) / 2 if events > 0 else 0.0
    return float(low), float(chi2.ppf(1 - alpha / 2, 2 * events + 2) / 2)


def number(value) -> float:
    """A positive number (YAML reads 2.529e12, without the exponent's sign, as text: float() of it is accepted)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError("expected a number")
    return positive(float(value))


def interruptions(pub: Published, run: int) -> Interruptions:
    """Run `run` of a published file, every field checked: a mistake is one line naming the file, the run and the key."""
    if not 0 <= run < len(pub.runs):
        raise SimclusterError(f"run {run} is not a run of the file (runs 0-{len(pub.runs) - 1})", where=str(pub.path))
    where = f"{pub.path}: runs[{run}]"
    row = known_keys(pub.runs[run], RUN_KEYS, where)
    if "failures_per_1000_node_days" in row:   # a cluster's rate, no job size
        per_node_day = checked(row, "failures_per_1000_node_days", where, number) / 1000.0
        per_node = checked(row, "gpus_per_node", where, count)
        return Interruptions(pub.name, run, str(row.get("name", "")), None, per_node_day / (per_node * 86400.0), None,
                             f"{row['failures_per_1000_node_days']} failures per 1000 node-days / {per_node} GPUs per node "
                             "(its count not quoted)")
    gpus = checked(row, "gpus", where, lambda v: count(v, 2**24))
    if "mttf_hours" in row:                   # a measured MTTF at a job size
        mttf = checked(row, "mttf_hours", where, number)
        return Interruptions(pub.name, run, str(row.get("name", "")), gpus, None, mttf * HOUR,
                             f"MTTF {row['mttf_hours']} h at {gpus:,} GPUs (its count not quoted)")
    days = checked(row, "duration_days", where, number)
    counts = known_keys(field(row, "interruptions", where), COUNT_KEYS, f"{where}.interruptions")
    if counts.get("unexpected") is not None:
        count_key, what = "unexpected", "unexpected interruptions"
    else:
        count_key = "restarts"
        approximate = "approximate" in counts and checked(counts, "approximate", f"{where}.interruptions", flag)
        what = "restarts (approximate)" if approximate else "restarts"
    events = checked(counts, count_key, f"{where}.interruptions", number)
    low, high = count_interval(events)
    duration = days * 86400.0
    return Interruptions(pub.name, run, str(row.get("name", "")), gpus, events / (gpus * duration), duration / events,
                         f"{events:g} {what} (95% Poisson {low:.3g}-{high:.3g}) / ({gpus:,} GPUs x {days:g} days)")


def published_rate(path: str | Path, run: int = 0) -> tuple[float, str]:
    """(interruptions per GPU-second, a label naming the file, run and arithmetic) for a scenario's failure_rate."""
    i = interruptions(read_published(path, KIND), run)
    if i.rate_per_gpu_s is None:
        raise SimclusterError(f"run {run} gives an MTTF at one job size, not a rate", where=str(path),
                              hint="name a run with interruptions over a duration, or a rate per node-day")
    return i.rate_per_gpu_s, i.label
