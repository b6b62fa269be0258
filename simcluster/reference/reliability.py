"""`simcluster validate --published reliability`: the published interruption counts (interruptions.py) checked
against each other: each run's per-GPU rate (interruptions / (GPUs x hours), or failures
per node-day / GPUs per node: the arithmetic its file names) predicts every other run's mean time between
interruptions (a count over a duration, or a measured MTTF at a job size) at that run's GPU count, M = 1 / (G r)
(llm/goodput.py's Poisson assumption); nothing is fitted, so every row is held out unless its file says otherwise.
+ = more time between interruptions predicted than published (a faster job).
"""

from __future__ import annotations

from pathlib import Path

from simcluster.errors import SimclusterError
from simcluster.interruptions import HOUR, KIND, interruptions, number
from simcluster.published import Published, checked, published_files, read_published
from simcluster.results import ReferenceRow, ReferenceValidation
from simcluster.strict import known_keys

# The target: two per-GPU rates counted from about 90 and 419 events (OPT, Llama 3: the best-counted pair) can differ
# by +26% / -20% at 95% from Poisson counting alone (exp(+-1.96 sqrt(1/90 + 1/419))); a row within 25% is as close as
# these counts can show. Rows with BLOOM's one event (95%: 0.025-5.6 events) cannot be checked to better than a factor ~40.
TARGET = 0.25
CHECKPOINT_KEYS = {"bytes", "bytes_as_printed", "contents_as_printed", "parameters", "write_s", "interval_as_printed", "files",
                   "file_bytes_as_printed"}


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
            measured, params = checked(ck, "bytes", where, number), checked(ck, "parameters", where, number)
            predicted = params * per_param
            rows.append(ReferenceRow(pub.name, i, f"checkpoint of {params / 1e9:g}B parameters", "checkpoint_bytes", measured,
                                     predicted, 1.0 - predicted / measured, pub.held_out(i),
                                     f"{per_param:g} bytes per parameter predicted, {measured / params:.2f} published"))
    return rows
