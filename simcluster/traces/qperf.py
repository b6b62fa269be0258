"""Parser for qperf client output (linux-rdma/qperf), with or without -v / -vv and -ub.

qperf prints each test as `<test>:` followed by indented `name = value unit` lines. Values carry
3 significant digits, thousands commas and units in steps of 1000 (bytes/sec ... GB/sec, or
bits/sec ... Gb/sec with --use_bits_per_sec), times in ns/us/ms/sec, CPU use in `% cpus` (100 %
is one core), costs in time per GB. Shell prompt lines (`host:~$ qperf ...`, as in seed 000) are
kept as the command; a test that failed (`failed to find any InfiniBand devices`) is kept with its
message. Everything is converted to SI: bytes/s, s, bytes, fraction of one core, s per byte.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from simcluster import schema as S
from simcluster.errors import TraceFormatError
from simcluster.traces.common import read_text, sha256_of

TESTS = re.compile(r"^(tcp|udp|sdp|rds|rc|uc|ud|xrc)_[a-z_]+$|^(conf|quit|ver)$")
_HEADER = re.compile(r"^([a-z][a-z0-9_]*):\s*$")
_METRIC = re.compile(r"^\s+([a-z][a-z0-9_]*)\s*=\s*(.*?)\s*$")
_NUMBER = re.compile(r"^(-?[\d,]*\.?\d+(?:e[+-]?\d+)?)\s*(.*)$")

_RATE = {"bytes/sec": 1.0, "KB/sec": 1e3, "MB/sec": 1e6, "GB/sec": 1e9, "TB/sec": 1e12,
         "bits/sec": 0.125, "Kb/sec": 125.0, "Mb/sec": 125e3, "Gb/sec": 125e6, "Tb/sec": 125e9}
_TIME = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "sec": 1.0}
_BYTES = {"bytes": 1.0, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "KiB": 1024.0, "MiB": 2.0**20, "GiB": 2.0**30}
_COUNT = {"/sec": 1.0, "K/sec": 1e3, "M/sec": 1e6, "G/sec": 1e9}
_COST = {f"{t}/GB": scale / 1e9 for t, scale in _TIME.items()}  # s of CPU per byte


@dataclass(frozen=True)
class QperfTest:
    """One test's results in SI units; `text` keeps the raw values, `error` a failure message."""

    name: str
    metrics: dict[str, float]
    text: dict[str, str]
    line: int
    error: str | None = None

    def get(self, key: str) -> float:
        if key not in self.metrics:
            raise TraceFormatError(f"qperf test {self.name} (line {self.line}) has no {key!r} result "
                                   f"(has {', '.join(self.metrics) or 'nothing'})")
        return self.metrics[key]


@dataclass
class QperfTrace:
    path: str
    tests: list[QperfTest]
    commands: list[str] = field(default_factory=list)
    sha256: str = ""
    tool: str = "qperf"

    def test(self, name: str) -> QperfTest:
        found = [t for t in self.tests if t.name == name and t.error is None]
        if not found:
            raise TraceFormatError(f"no successful {name} test in the qperf output", where=self.path)
        return found[-1]


# the measurements the models divide by: outside these a value is no measurement (0 B/s, 1e-300 us, 1e308 GB/s)
MEASURED = {"bw": (1.0, 1e15, "B/s"), "latency": (1e-9, 3600.0, "s"), "msg_rate": (1e-3, 1e12, "/s")}


def _value(name: str, raw: str, where: str) -> float | None:
    """SI value of one metric, None for a text field (loc_node, loc_os ...); a measurement (MEASURED) out of its
    range is refused."""
    si = _si_value(name, raw, where)
    if si is not None and name in MEASURED:
        low, high, unit = MEASURED[name]
        if not low <= si <= high:
            raise TraceFormatError(f"{name} = {raw.strip()[:30]!r}: not a measurement (expected {low:g} to {high:g} {unit})",
                                   where=where)
    return si


def _si_value(name: str, raw: str, where: str) -> float | None:
    match = _NUMBER.match(raw)
    if not match:
        return None
    number = float(match.group(1).replace(",", ""))
    if not math.isfinite(number) or number < 0:
        raise TraceFormatError(f"{name} = {raw.strip()[:30]!r}: qperf never prints a negative or non-finite value", where=where)
    unit = match.group(2).split("(")[0].strip()
    for table in (_RATE, _TIME, _COUNT, _COST):
        if unit in table:
            return number * table[unit]
    if unit in _BYTES:
        return number * _BYTES[unit]
    if unit == "% cpus":
        return number / 100.0
    if unit == "":
        return number
    raise TraceFormatError(f"{name}: unknown qperf unit {unit!r}", where=where,
                           hint="expected bytes/sec..GB/sec, bits/sec..Gb/sec, ns..sec, bytes..GB, % cpus, time/GB")


def parse_text(text: str, path: str = "<text>") -> QperfTrace:
    tests: list[QperfTest] = []
    commands: list[str] = []
    current: tuple[str, int] | None = None
    metrics: dict[str, float] = {}
    raw: dict[str, str] = {}
    error: str | None = None

    def close():
        if current is not None:
            tests.append(QperfTest(current[0], dict(metrics), dict(raw), current[1], error))

    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped:
            continue
        if re.search(r"[$#]\s*qperf\b", stripped) or stripped.startswith("qperf "):
            commands.append(stripped[stripped.index("qperf"):])
            continue
        header = _HEADER.match(stripped)
        if header and TESTS.match(header.group(1)):
            close()
            current, metrics, raw, error = (header.group(1), number), {}, {}, None
            continue
        metric = _METRIC.match(line)
        if metric and current is not None:
            name, value = metric.groups()
            raw[name] = value
            si = _value(name, value, f"{path}:{number}")
            if si is not None:
                metrics[name] = si
            continue
        if current is not None and not metrics and error is None and not line.startswith(" "):
            error = stripped  # qperf prints the reason a test could not run right under its header
            continue
    close()
    if not tests:
        raise TraceFormatError("no qperf test results (expected a line like 'tcp_bw:' followed by 'bw = ...')",
                               where=path)
    for t in tests:
        if t.error is None and not t.metrics:
            raise TraceFormatError(f"test {t.name} has no results: the output is truncated", where=f"{path}:{t.line}")
        TEST.check({"name": t.name, "metrics": t.metrics}, f"{path}:{t.line}", TraceFormatError)
    return QperfTrace(path, tests, commands)


TEST = S.Record(   # one parsed qperf test: its metrics in SI units (bytes/s, s, messages/s, CPU fractions)
    {"name": S.Text(64), "metrics": S.MapOf(S.Number(0, 1e18))}, name="QperfTest")


def parse(path: str | Path) -> QperfTrace:
    trace = parse_text(read_text(path), str(path))
    trace.sha256 = sha256_of(path)
    return trace


def looks_like_qperf(path: str | Path) -> bool:
    """Whether a file holds qperf output (a test header such as 'tcp_bw:' on a line of its own)."""
    return re.search(r"^\s*(tcp|udp|rc|uc|ud|xrc)_[a-z_]+:\s*$", read_text(path), re.M) is not None
