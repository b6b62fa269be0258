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
from simcluster.reference import Published, checked, flag, published_files, read_published
from simcluster.results import ReferenceRow, ReferenceValidation
from simcluster.strict import count, field, known_keys, positive

KIND = "published-reliability"
HOUR = 3600.0


# The target: two per-GPU rates counted from about 90 and 419 events (OPT, Llama 3: the best-counted pair) can differ
# by +26% / -20% at 95% from Poisson counting alone (exp(+-1.96 sqrt(1/90 + 1/419))); a row within 25% is as close as
# these counts can show. Rows with BLOOM's one event (95%: 0.025-5.6 events) cannot be checked to better than a factor ~40.
TARGET = 0.25
RUN_KEYS = {"name", "gpus", "gpus_note", "duration_days", "interruptions", "checkpoint", "restart_s", "checkpoint_s",
            "checkpoint_interval_s", "manual_interventions", "effective_training_time", "unexpected_by_cause",
            "failures_per_1000_node_days", "gpus_per_node", "mttf_hours", "projected"}
COUNT_KEYS = {"total", "planned", "unexpected", "restarts", "approximate"}
CHECKPOINT_KEYS = {"bytes", "bytes_as_printed", "contents_as_printed", "parameters", "write_s", "interval_as_printed", "files",
                   "file_bytes_as_printed"}


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


def _number(value) -> float:
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
        per_node_day = checked(row, "failures_per_1000_node_days", where, _number) / 1000.0
        per_node = checked(row, "gpus_per_node", where, count)
        return Interruptions(pub.name, run, str(row.get("name", "")), None, per_node_day / (per_node * 86400.0), None,
                             f"{row['failures_per_1000_node_days']} failures per 1000 node-days / {per_node} GPUs per node "
                             "(its count not quoted)")
    gpus = checked(row, "gpus", where, lambda v: count(v, 2**24))
    if "mttf_hours" in row:                   # a measured MTTF at a job size
        mttf = checked(row, "mttf_hours", where, _number)
        return Interruptions(pub.name, run, str(row.get("name", "")), gpus, None, mttf * HOUR,
                             f"MTTF {row['mttf_hours']} h at {gpus:,} GPUs (its count not quoted)")
    days = checked(row, "duration_days", where, _number)
    counts = known_keys(field(row, "interruptions", where), COUNT_KEYS, f"{where}.interruptions")
    if counts.get("unexpected") is not None:
        count_key, what = "unexpected", "unexpected interruptions"
    else:
        count_key = "restarts"
        approximate = "approximate" in counts and checked(counts, "approximate", f"{where}.interruptions", flag)
        what = "restarts (approximate)" if approximate else "restarts"
    events = checked(counts, count_key, f"{where}.interruptions", _number)
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
            one_paper = "; the rate and the MTTF are separate measurements from one paper" if source.source == target.source else ""
            rows.append(ReferenceRow(
                target.source, target.run, f"{target.gpus:,} GPUs; rate from {source.source.removeprefix('reliability-')} "
                f"run {source.run}", "mtbf_s", target.mtbf_s, predicted, predicted / target.mtbf_s - 1.0,
                target_pub.held_out(target.run), f"published: {target.counted}; r = {source.rate_per_gpu_s * HOUR:.3g}/GPU-hour "
                f"({source.counted}){one_paper}"))
    rows += _checkpoint_rows(pubs)
    if not rows:
        raise SimclusterError("a reliability check needs a run with a rate and another with an MTBF",
                              where=str(path or "calibration/published"))
    return ReferenceValidation("published reliability", TARGET, rows, {p.name: p.summary_why() for p in pubs})


def _checkpoint_rows(pubs: list[Published]) -> list[ReferenceRow]:
    """A run's printed checkpoint size against llm/goodput.py's bytes per parameter (Megatron's bf16 weight, fp32
    master, m and v); + = a smaller checkpoint predicted (a faster write)."""
    from simcluster.llm.framework import MEGATRON

    per_param = MEGATRON.param_bytes + MEGATRON.state_bytes
    rows = []
    for pub in pubs:
        for i, row in enumerate(pub.runs):
            ck = row.get("checkpoint")
            if ck is None:
                continue
            where = f"{pub.path}: runs[{i}].checkpoint"
            ck = known_keys(ck, CHECKPOINT_KEYS, where)
            if ck.get("bytes") is None:
                continue
            measured, params = checked(ck, "bytes", where, _number), checked(ck, "parameters", where, _number)
            predicted = params * per_param
            rows.append(ReferenceRow(pub.name, i, f"checkpoint of {params / 1e9:g}B parameters", "checkpoint_bytes", measured,
                                     predicted, 1.0 - predicted / measured, pub.held_out(i),
                                     f"{per_param:g} bytes per parameter predicted, {measured / params:.2f} published"))
    return rows
