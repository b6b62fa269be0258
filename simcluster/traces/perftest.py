"""Parser for perftest text output (ib_write_bw, ib_read_bw, ib_send_bw, ib_*_lat).

Bandwidth tests print a table headed `#bytes #iterations BW peak[UNIT] BW average[UNIT] MsgRate[Mpps]`
with UNIT MB/sec (MiB/s in perftest's own convention: 2^20 bytes), Gb/sec with --report_gbits, or
MiB/sec; latency tests print `#bytes #iterations t_min[usec] t_max[usec] t_typical[usec] t_avg[usec]
t_stdev[usec] 99% percentile[usec] 99.9% percentile[usec]` (send/write latency is half the round
trip, read latency the full one). Banner and separator lines (`----`, `*****`) are skipped. A run
that found no RDMA device, or a table cut off before its first row, is a TraceFormatError.
Values in SI: bytes/s, seconds, messages/s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from simcluster.errors import TraceFormatError
from simcluster.traces.common import read_text, sha256_of

_BW_UNITS = {"MB/sec": 2.0**20, "MiB/sec": 2.0**20, "Gb/sec": 1e9 / 8, "GB/sec": 2.0**30}
_HEADER = re.compile(r"^\s*#bytes\s+#iterations\s+(.*)$")
_ROW = re.compile(r"^\s*\d+\s+\d+(\s+[-+]?\d+(\.\d+)?)+\s*$")


@dataclass(frozen=True)
class PerftestRow:
    size_bytes: int
    iterations: int
    values: dict[str, float]    # bw_peak_Bps, bw_avg_Bps, msg_rate_per_s | t_min_s, t_typical_s, t_avg_s, ...


@dataclass
class PerftestTrace:
    path: str
    kind: str                   # "bw" or "lat"
    rows: list[PerftestRow]
    sha256: str = ""
    tool: str = "perftest"


def _columns(header: str, where: str) -> tuple[str, list[tuple[str, float]]]:
    if "BW peak" in header:
        unit = re.search(r"BW peak\[([^\]]+)\]", header)
        scale = _BW_UNITS.get(unit.group(1) if unit else "", None)
        if scale is None:
            raise TraceFormatError(f"unknown perftest bandwidth unit {unit.group(1) if unit else '?'!r}", where=where)
        return "bw", [("bw_peak_Bps", scale), ("bw_avg_Bps", scale), ("msg_rate_per_s", 1e6)]
    if "t_min" in header:
        names = ["t_min_s", "t_max_s", "t_typical_s", "t_avg_s", "t_stdev_s", "t_p99_s", "t_p999_s"]
        return "lat", [(n, 1e-6) for n in names]
    raise TraceFormatError(f"not a perftest table header: {header.strip()[:60]!r}", where=where)


def parse(path: str | Path) -> PerftestTrace:
    text = read_text(path)
    where = str(path)
    kind, columns, rows = None, [], []
    for n, line in enumerate(text.splitlines(), 1):
        header = _HEADER.match(line)
        if header:
            kind, columns = _columns(header.group(1), f"{where}:{n}")
            continue
        if kind and _ROW.match(line):
            fields = line.split()
            numbers = [float(x) for x in fields[2:2 + len(columns)]]
            if len(numbers) < len(columns):
                raise TraceFormatError(f"line {n}: {len(numbers)} of {len(columns)} columns (truncated?)", where=where)
            rows.append(PerftestRow(int(fields[0]), int(fields[1]),
                                    {name: v * scale for (name, scale), v in zip(columns, numbers, strict=True)}))
    if "Unable to find the Infiniband/RoCE device" in text or "Did not detect devices" in text:
        raise TraceFormatError("perftest found no RDMA device: the run has no results", where=where)
    if kind is None:
        raise TraceFormatError("no perftest table (expected a '#bytes #iterations ...' header)", where=where)
    if not rows:
        raise TraceFormatError("the perftest table has no rows: the output is truncated", where=where)
    return PerftestTrace(where, kind, rows, sha256_of(path))
