"""A data-parallel training workload as measured on one GPU (a `training-step` card).

From the runner's ddp-step trace (and its torch.profiler summary, when recorded):
  step_s          median wall time of one synchronised step on 1 GPU
  host_s          median host time to issue that step (Python + kernel launches)
  gpu_s           GPU compute busy time per step (union of kernels; the profile), else step_s
  phases          forward / backward / optimizer shares of the step
  step_samples_s  the 1-GPU step times themselves: their spread is what ranks wait on each other for
  grad_bytes      gradient tensors in registration order (DDP buckets them in reverse)
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path

from simcluster import schema as S
from simcluster import strict
from simcluster.errors import TraceFormatError
from simcluster.traces.common import loads_json, read_text

FIRST_BUCKET = 2**20  # torch DDP's first bucket (dist._DEFAULT_FIRST_BUCKET_BYTES)


@dataclass(frozen=True)
class Workload:
    model: str
    image: int
    batch_per_gpu: int
    step_s: float
    host_s: float
    gpu_s: float
    forward: float          # shares of the step; forward + backward + optimizer = 1
    backward: float
    optimizer: float
    grad_bytes: tuple[int, ...]
    step_samples_s: tuple[float, ...]
    bucket_cap_bytes: float = 25 * 2**20

    @property
    def drain_s(self) -> float:
        """Measured step time beyond max(host, GPU) on 1 GPU: the closing synchronisation."""
        return max(0.0, self.step_s - max(self.host_s, self.gpu_s))

    @property
    def tensors(self) -> int:
        return len(self.grad_bytes)

    def buckets(self) -> list[int]:
        """DDP's buckets: gradients in reverse registration order, a 1 MiB first bucket, then the cap."""
        out, current, limit = [], 0, FIRST_BUCKET
        for g in reversed(self.grad_bytes):
            current += g
            if current >= limit:
                out.append(current)
                current, limit = 0, self.bucket_cap_bytes
        return out + ([current] if current else [])


def _phases(record: dict) -> tuple[float, float, float]:
    p = record.get("phases") or {"forward_s": 1.0, "backward_s": 2.0, "optimizer_s": 0.1}
    total = p["forward_s"] + p["backward_s"] + p["optimizer_s"]
    return p["forward_s"] / total, p["backward_s"] / total, p["optimizer_s"] / total


def from_record(record: dict, gpu_s: float | None = None, where: str = "") -> Workload:
    """A Workload from one 1-GPU ddp-step JSON record."""
    try:
        times = [float(t) for t in record["step_times_s"]]
        issue = record.get("issue_times_s") or times  # older traces: no issue time, taken as host-bound
        f, b, o = _phases(record)
        step = statistics.median(times)
        return Workload(str(record["model"]), int(record["image"]), int(record["batch_per_gpu"]), step,
                        min(step, statistics.median(issue)), min(step, gpu_s or step), f, b, o,
                        tuple(int(g) for g in record["grad_bytes"]), tuple(times),
                        float(record.get("bucket_cap_mb", 25.0)) * 2**20)
    except (KeyError, TypeError, ValueError, statistics.StatisticsError) as exc:
        raise TraceFormatError(f"ddp-step record: missing or bad {exc}", where=where) from None


def from_paired(record: dict, where: str = "") -> Workload:
    """The 1-GPU workload of a multi-GPU record collected with `ddp_step --paired`: rank 0's plain
    (unwrapped) steps, timed in blocks alternating with the DDP steps of the same processes."""
    plain = record.get("plain")
    if not isinstance(plain, dict):
        raise TraceFormatError("ddp-step record: no 'plain' steps (collected without --paired)", where=where)
    return _plain(record, plain.get("step_times_s"), plain.get("issue_times_s"), where)


def paired_ranks(record: dict, where: str = "") -> tuple[Workload, ...]:
    """Every rank's 1-GPU workload in a `ddp_step --paired` record: each process's own plain steps (rank 0's
    phase shares for all); () when the record does not hold them per rank."""
    ranks = record.get("ranks")
    if (not isinstance(ranks, list) or len(ranks) != record.get("world_size")
            or not all(isinstance(r, dict) and "plain_step_times_s" in r for r in ranks)):
        return ()
    return tuple(_plain(record, r["plain_step_times_s"], r.get("plain_issue_times_s"), f"{where} rank {k}".strip())
                 for k, r in enumerate(ranks))


def _plain(record: dict, steps, issue, where: str) -> Workload:
    """The record's workload from plain (unwrapped) step and issue times, with the plain steps' phase shares."""
    return from_record({**record, "step_times_s": steps, "issue_times_s": issue,
                        "phases": (record.get("plain") or {}).get("phases")}, where=where)


def _profiles(run_dir: Path) -> dict[str, list[dict]]:
    """The torch.profiler summary next to a ddp-step run: trace name -> per-step summaries."""
    summary = run_dir / "profiler-traces" / "profile-summary.json"
    if not summary.is_file():
        return {}
    doc = strict.load_json(summary, TraceFormatError, "torch.profiler summary")
    lists = {k: v for k, v in PROFILE_SUMMARY.check(doc, str(summary), TraceFormatError).items() if isinstance(v, list) and v}
    S.Record({k: S.ListOf(_PROFILE_STEP) for k in lists}).check(lists, str(summary), TraceFormatError)
    return lists


def profile_gpu_s(run_dir: Path, model: str, image: int, batch: int) -> float | None:
    """Median GPU compute busy time of the 1-GPU profile next to a ddp-step run, if recorded."""
    steps = _profiles(run_dir).get(f"{model}_{image}_b{batch}_w1_rank0.pt.trace.json")
    return statistics.median(s["compute_busy_s"] for s in steps) if steps else None


def overlap_samples(run_dir: Path, gpu_s: float | None) -> list[tuple[float, float, float]]:
    """(1-GPU compute busy, N-GPU compute busy, N-GPU compute/comm overlap) per multi-GPU profile,
    seconds: the input of fit.training.overlap_slowdown."""
    if not gpu_s:
        return []
    return [(gpu_s, statistics.median(s["compute_busy_s"] for s in steps), statistics.median(s["overlap_s"] for s in steps))
            for name, steps in _profiles(run_dir).items() if "_w1_" not in name]


RECORD_KEYS = ("model", "image", "batch_per_gpu", "world_size", "median_step_s", "step_times_s", "grad_bytes")
_STEPS = S.ListOf(S.Seconds(3600.0), min_len=1, max_len=100_000)
_PHASE = S.Number(0.0, 3600.0, "s")
RECORD = S.Record(   # a ddp-step JSON record, as far as the model reads it (runner/ddp_step.py writes it)
    {"model": S.Text(200), "image": S.Count(1, 2**16), "batch_per_gpu": S.Count(1, 2**20), "world_size": S.Count(1, 2**17),
     "median_step_s": S.Seconds(3600.0), "step_times_s": _STEPS,
     "grad_bytes": S.ListOf(S.Number(0, 2**40, "B", integer=True), min_len=1, max_len=1_000_000)},
    optional={"issue_times_s": S.Nullable(_STEPS), "bucket_cap_mb": S.Number(2**-20, 2**20, "MiB", above=True),
              "cpu_time_per_step_s": S.Nullable(_PHASE),   # the runner's process CPU per step (read back into answers)
              "phases": S.Nullable(S.Record({"forward_s": _PHASE, "backward_s": _PHASE, "optimizer_s": _PHASE})),
              "plain": S.Nullable(S.Record({"step_times_s": _STEPS}, {"issue_times_s": S.Nullable(_STEPS)})),
              "ranks": S.Nullable(S.ListOf(S.Record(optional={"plain_step_times_s": _STEPS, "plain_issue_times_s": S.Nullable(_STEPS),
                                                                "step_times_s": _STEPS, "issue_times_s": S.Nullable(_STEPS)}),
                                           max_len=2**17))})
_PROFILE_STEP = S.Record({"compute_busy_s": S.Number(0.0, 3600.0, "s"), "overlap_s": S.Number(0.0, 3600.0, "s")},
                         {"wall_s": S.Number(0.0, 3600.0, "s"), "comm_busy_s": S.Number(0.0, 3600.0, "s"),
                          "launch_cpu_s": S.Number(0.0, 3600.0, "s"), "kernels": S.Count(0, 2**40),
                          "comm_kernels": S.Count(0, 2**40), "launches": S.Count(0, 2**40)}, name="ProfileStep")
PROFILE_SUMMARY = S.Record()   # trace name -> [per-step summary]; the lists are checked by _PROFILE_STEP


MAX_RECORDS = 1000     # ddp-step writes one record per configuration it ran (a bundle's logs hold 1-10)


def read_runs(path: str | Path) -> list[dict]:
    """Every JSON record of a ddp-step stdout (JSON lines), each checked for the keys the model reads; more than
    MAX_RECORDS is refused before any is read (a log appended to over and over made the fit run for minutes)."""
    out = []
    lines = read_text(path).splitlines()
    records = sum(1 for line in lines if line.strip())
    if records > MAX_RECORDS:
        raise TraceFormatError(f"{records:,} ddp-step records; at most {MAX_RECORDS:,} are read from one log "
                               "(the same run appended many times?)", where=str(path))
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = loads_json(line)
        except json.JSONDecodeError:
            raise TraceFormatError(f"line {n}: not a ddp-step JSON record", where=str(path)) from None
        missing = [k for k in RECORD_KEYS if not isinstance(record, dict) or k not in record]
        if missing:
            raise TraceFormatError(f"line {n}: a ddp-step record without {', '.join(missing)}", where=str(path))
        out.append(RECORD.check(record, f"{path}:{n}", TraceFormatError))
    return out
