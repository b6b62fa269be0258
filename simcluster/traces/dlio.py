"""Parsers for DLIO benchmark outputs (dlio-benchmark 2.x):

  summary.json            metric.train_au_percentage[], train_au_mean_percentage, train_throughput_*,
                          train_io_mean_MB_per_second (MiB/s), num_accelerators, num_files_train, ...
  {rank}_output.json      per epoch: load / proc / compute lists per block, au and throughput per block
  per_epoch_stats.json    per epoch and block: start, end, duration (s, 2 decimals)
  trace-*.pfw[.gz]        dftracer Chrome-trace events, one JSON object per line (lines '[' and ']' allowed)
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path

from simcluster import schema as S
from simcluster.errors import TraceFormatError
from simcluster.traces.common import loads_json, read_text, sha256_of


@dataclass(frozen=True)
class DlioSummary:
    path: str
    accelerators: int
    au_percent: list[float]
    au_mean_percent: float
    throughput_samples_per_s: list[float]
    io_MiB_per_s: float
    files: int
    samples_per_file: int
    epochs: int
    sha256: str = ""


@dataclass(frozen=True)
class DlioBlock:
    epoch: str
    block: str
    load_s: list[float]
    proc_s: list[float]
    compute_s: list[float]
    au_percent: float
    throughput_samples_per_s: float


def _json(path: str | Path) -> dict:
    try:
        doc = loads_json(read_text(path))
    except json.JSONDecodeError as exc:
        raise TraceFormatError(f"line {exc.lineno}: not complete JSON ({exc.msg})", where=str(path)) from None
    if not isinstance(doc, dict):
        raise TraceFormatError("expected a JSON object", where=str(path))
    return doc


_PERCENT = S.Number(0, 100, "%")
SUMMARY = S.Record(   # DLIO's summary.json, as far as parse_summary reads it
    {"num_accelerators": S.Count(1, 2**20),
     "metric": S.Record({"train_au_percentage": S.ListOf(_PERCENT, min_len=1, max_len=10**6), "train_au_mean_percentage": _PERCENT},
                        {"train_throughput_samples_per_second": S.ListOf(S.Number(0, 1e12), max_len=10**6),
                         "train_io_mean_MB_per_second": S.Number(0, 1e9, "MB/s")}, name="DlioMetric")},
    {"num_files_train": S.Count(0, 10**9), "num_samples_per_file": S.Count(1, 10**9), "epochs": S.Count(1, 10**6)},
    name="DlioSummary")
_STEPS = S.MapOf(S.ListOf(S.Number(0, 86400, "s"), max_len=10**7))
EPOCH = S.Record({"proc": _STEPS, "compute": _STEPS}, {"load": _STEPS, "au": S.MapOf(_PERCENT),   # one epoch of
                                                       "throughput": S.MapOf(S.Number(0, 1e12))}, name="DlioEpoch")  # _output.json


def parse_summary(path: str | Path) -> DlioSummary:
    doc = _json(path)
    if not isinstance(doc.get("metric"), dict) or "train_au_percentage" not in doc["metric"]:
        raise TraceFormatError("no metric.train_au_percentage: not a DLIO summary.json", where=str(path))
    SUMMARY.check(doc, str(path), TraceFormatError)
    m = doc["metric"]
    try:
        return DlioSummary(str(path), int(doc["num_accelerators"]), [float(x) for x in m["train_au_percentage"]],
                           float(m["train_au_mean_percentage"]),
                           [float(x) for x in m.get("train_throughput_samples_per_second", [])],
                           float(m.get("train_io_mean_MB_per_second", 0.0)), int(doc.get("num_files_train", 0)),
                           int(doc.get("num_samples_per_file", 1)), int(doc.get("epochs", len(m["train_au_percentage"]))),
                           sha256_of(path))
    except (KeyError, TypeError, ValueError) as exc:
        raise TraceFormatError(f"summary.json: missing or bad {exc}", where=str(path)) from None


def parse_output(path: str | Path) -> list[DlioBlock]:
    """The per-step lists of one rank's {rank}_output.json, one DlioBlock per epoch and block."""
    doc = _json(path)
    blocks = []
    for epoch, e in doc.items():
        if not isinstance(e, dict) or "proc" not in e:
            continue
        EPOCH.check(e, f"{path}: epoch {epoch}", TraceFormatError)
        try:
            for block, proc in e["proc"].items():
                blocks.append(DlioBlock(epoch, block, [float(x) for x in e["load"].get(block, [])],
                                        [float(x) for x in proc], [float(x) for x in e["compute"][block]],
                                        float(e["au"][block]), float(e["throughput"][block])))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise TraceFormatError(f"epoch {epoch}: missing or bad {exc}", where=str(path)) from None
    if not blocks:
        raise TraceFormatError("no epoch with per-step 'proc' lists: not a DLIO {rank}_output.json", where=str(path))
    return blocks


def parse_epoch_stats(path: str | Path) -> dict[str, dict[str, float]]:
    """epoch -> block -> duration (s)."""
    doc = _json(path)
    out = {}
    for epoch, e in doc.items():
        if isinstance(e, dict):
            try:
                out[epoch] = {k: float(v["duration"]) for k, v in e.items() if isinstance(v, dict) and "duration" in v}
            except (TypeError, ValueError) as exc:
                raise TraceFormatError(f"epoch {epoch}: bad duration ({exc})", where=str(path)) from None
    if not out:
        raise TraceFormatError("no epochs with durations: not a DLIO per_epoch_stats.json", where=str(path))
    return out


def parse_pfw(path: str | Path) -> list[dict]:
    """dftracer events (name, cat, ts us, dur us, args) from a .pfw or .pfw.gz file."""
    p = Path(path)
    try:
        raw = gzip.decompress(p.read_bytes()).decode() if p.suffix == ".gz" else read_text(p)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise TraceFormatError(f"cannot read the trace: {exc}", where=str(path)) from None
    events = []
    for n, line in enumerate(raw.splitlines(), 1):
        line = line.strip().rstrip(",")
        if not line or line in ("[", "]"):
            continue
        try:
            ev = loads_json(line)
        except json.JSONDecodeError:
            raise TraceFormatError(f"line {n}: not a JSON event (truncated trace?)", where=str(path)) from None
        if not isinstance(ev, dict) or "name" not in ev:
            raise TraceFormatError(f"line {n}: an event needs a name", where=str(path))
        events.append(ev)
    if not events:
        raise TraceFormatError("no events", where=str(path))
    return events
