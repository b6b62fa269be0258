"""Parser for fio `--output-format=json` output; several JSON documents may follow one another
in one file (one per fio invocation), with fio's own non-JSON notes between them.

Per job and direction: bytes, bandwidth (B/s), IOPS, runtime (s), completion latency (s: mean,
stddev, percentiles), the block size and iodepth from the job options, and the iodepth_level
histogram (fraction of I/Os issued at each queue-depth bucket).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from simcluster import schema as S
from simcluster.errors import TraceFormatError, UnitError
from simcluster.strict import decode_json
from simcluster.traces.common import read_text, sha256_of
from simcluster.units import parse_size_arg

DIRECTIONS = ("read", "write")


@dataclass(frozen=True)
class FioResult:
    job: str
    direction: str
    rw: str                  # the job's rw= option (randread, read, ...)
    block_bytes: int
    iodepth: int
    io_bytes: int
    bw_Bps: float
    iops: float
    runtime_s: float
    clat_mean_s: float
    clat_stddev_s: float
    clat_percentiles_s: dict[float, float]
    iodepth_levels: dict[str, float]   # fio's buckets ("1", "2", ..., ">=64") -> percent of I/Os
    document: int


@dataclass
class FioTrace:
    path: str
    results: list[FioResult]
    version: str
    sha256: str = ""
    tool: str = "fio"


_NS = S.Number(0, 1e15, "ns")
_DIRECTION = S.Record(optional={"io_bytes": S.Count(0, 2**62), "bw_bytes": S.Number(0, 1e15, "B/s"),
                                "iops": S.Number(0, 1e12), "runtime": S.Number(0, 1e12, "ms"),
                                "clat_ns": S.Record(optional={"mean": _NS, "stddev": _NS, "percentile": S.MapOf(_NS)}),
                                "lat_ns": S.Record(optional={"mean": _NS, "stddev": _NS})}, name="FioDirection")
DOCUMENT = S.Record(   # one fio --output-format=json document, as far as parse() reads it
    {"jobs": S.ListOf(S.Record({"jobname": S.Text(1000)}, {d: _DIRECTION for d in ("read", "write", "trim")}
                               | {"iodepth_level": S.MapOf(S.Number(0, 100, "%"))}, name="FioJob"), max_len=100_000)},
    {"fio version": S.Text(200), "global options": S.Map}, name="FioDocument")


def _documents(text: str, where: str) -> list[tuple[int, dict]]:
    """(start line, document) for every top-level JSON object in the text."""
    docs, i = [], 0
    while True:
        start = text.find("{", i)
        if start < 0:
            break
        try:
            doc, end = decode_json(text, start)
        except json.JSONDecodeError as exc:
            line = text.count("\n", 0, exc.pos) + 1
            raise TraceFormatError(f"line {line}: truncated or malformed fio JSON ({exc.msg})", where=where) from None
        line = text.count("\n", 0, start) + 1
        DOCUMENT.check(doc, f"{where}:{line}", TraceFormatError)
        docs.append((line, doc))
        i = end
    return docs


def _job_option(job: dict, doc_opts: dict, key: str, default):
    return job.get("job options", {}).get(key, doc_opts.get(key, default))


def fio_size(text: str) -> str:
    """fio's own size suffixes as bytes: k/m/g and kb/mb/gb (any case) are powers of 1024 (fio's default kb_base),
    'KiB' as written; '4kb' is 4096 bytes, not 4 kilobits."""
    m = re.fullmatch(r"\s*(\d+)\s*([kKmMgGtT])[bB]?\s*", str(text))
    return f"{m.group(1)}{m.group(2).upper()}" if m else str(text)


def _result(job: dict, direction: str, doc_opts: dict, index: int, where: str, line: int) -> FioResult | None:
    d = job.get(direction)
    if not isinstance(d, dict) or not d.get("io_bytes"):
        return None
    try:
        clat = d.get("clat_ns") or d["lat_ns"]
        bs_text = str(_job_option(job, doc_opts, f"bs_{direction}", _job_option(job, doc_opts, "bs", "4096")))
        block = parse_size_arg(fio_size(bs_text.split(",")[0]))
        pct = {float(k): v * 1e-9 for k, v in (clat.get("percentile") or {}).items()}
        return FioResult(str(job["jobname"]), direction, str(_job_option(job, doc_opts, "rw", "read")), block,
                         int(_job_option(job, doc_opts, "iodepth", 1)), int(d["io_bytes"]), float(d["bw_bytes"]),
                         float(d["iops"]), float(d["runtime"]) / 1e3, clat["mean"] * 1e-9, clat["stddev"] * 1e-9,
                         pct, {str(k): float(v) for k, v in job.get("iodepth_level", {}).items()}, index)
    except (KeyError, TypeError, ValueError, UnitError) as exc:
        raise TraceFormatError(f"document at line {line}: job {job.get('jobname')!r} {direction}: missing or bad {exc}",
                               where=where) from None


def parse(path: str | Path) -> FioTrace:
    text = read_text(path)
    where = str(path)
    docs = _documents(text, where)
    if not docs:
        raise TraceFormatError("no fio JSON document (run fio with --output-format=json)", where=where)
    results, version = [], ""
    for index, (line, doc) in enumerate(docs):
        if not isinstance(doc, dict) or "jobs" not in doc or not isinstance(doc["jobs"], list):
            raise TraceFormatError(f"line {line}: a JSON document without fio's 'jobs' list", where=where)
        version = doc.get("fio version", version)
        opts = doc.get("global options", {})
        for job in doc["jobs"]:
            for direction in DIRECTIONS:
                r = _result(job, direction, opts, index, where, line)
                if r is not None:
                    results.append(r)
    if not results:
        raise TraceFormatError("fio JSON has no job that did any I/O", where=where)
    return FioTrace(where, results, version, sha256_of(path))
