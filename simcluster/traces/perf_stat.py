"""Parser for `perf stat -x<sep>` output (CSV), with `<not supported>` / `<not counted>` counters.

Each counter line is: [interval,] [cpu id,] [cpus aggregated,] value, unit, event, run time,
% running[, variance][, metric value, metric unit]. Comment lines (`# started on ...`) and blank
lines are skipped. A counter the machine cannot count (virtual machines: cycles, instructions)
is kept with value None so a fit can fall back to software events (task-clock) or /proc/stat.
Units: task-clock and cpu-clock are converted from msec to seconds; counts stay counts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from simcluster import schema as S
from simcluster.errors import TraceFormatError
from simcluster.traces.common import read_text, sha256_of

UNCOUNTED = ("<not supported>", "<not counted>")
_TIME_UNITS = {"msec": 1e-3, "ms": 1e-3, "usec": 1e-6, "us": 1e-6, "nsec": 1e-9, "ns": 1e-9, "sec": 1.0, "s": 1.0}
_VALUE = re.compile(r"^-?\d+(\.\d+)?(e[+-]?\d+)?$")


@dataclass(frozen=True)
class Counter:
    event: str
    value: float | None       # None when the counter was not supported or not counted
    unit: str
    running_pct: float | None
    line: int

    @property
    def seconds(self) -> float | None:
        """The value in seconds, for time events (task-clock msec)."""
        if self.value is None or self.unit not in _TIME_UNITS:
            return None
        return self.value * _TIME_UNITS[self.unit]


@dataclass
class PerfStat:
    path: str
    counters: list[Counter]
    sha256: str = ""
    tool: str = "perf-stat"

    def get(self, event: str) -> Counter | None:
        found = [c for c in self.counters if c.event == event or c.event.split(":")[0] == event]
        return found[0] if found else None

    def cpu_seconds(self) -> float | None:
        """CPU time the command used (task-clock, else cpu-clock), seconds; None when neither counted."""
        for name in ("task-clock", "cpu-clock"):
            c = self.get(name)
            if c is not None and c.seconds is not None:
                return c.seconds
        return None

    @property
    def unsupported(self) -> list[str]:
        return [c.event for c in self.counters if c.value is None]


def _counter(fields: list[str], lineno: int, where: str) -> Counter:
    # With --interval-print the first field is a timestamp; with -A / --per-* a cpu id comes next.
    # The value is the first field that is a number or <not ...>, followed by unit and event.
    for i, f in enumerate(fields):
        f = f.strip()
        if f in UNCOUNTED or _VALUE.match(f):
            if i + 2 >= len(fields):
                break
            value = None if f in UNCOUNTED else float(f)
            unit, event = fields[i + 1].strip(), fields[i + 2].strip()
            if not event or _VALUE.match(event):
                continue
            pct = fields[i + 4].strip() if len(fields) > i + 4 else ""
            return Counter(event, value, unit, float(pct) if _VALUE.match(pct) else None, lineno)
    raise TraceFormatError(f"line {lineno}: not a perf stat -x counter line: {','.join(fields)[:80]!r}", where=where)


def parse(path: str | Path, sep: str | None = None) -> PerfStat:
    text = read_text(path)
    where = str(path)
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip() and not line.startswith("#")]
    if not lines:
        raise TraceFormatError("no counter lines (only comments)", where=where)
    sep = sep or next((s for s in (",", ";", "\t", "|") if s in lines[0][1]), None)
    if sep is None:
        raise TraceFormatError(f"line {lines[0][0]}: no field separator; expected perf stat -x output", where=where)
    counters = [_counter(line.split(sep), n, where) for n, line in lines]
    for c in counters:
        COUNTER.check({"event": c.event, "value": c.value, "running_pct": c.running_pct}, f"{where}:{c.line}", TraceFormatError)
    return PerfStat(where, counters, sha256_of(path))


COUNTER = S.Record(   # one parsed perf stat counter (a count or a time, and the share of the run it was counted)
    {"event": S.Text(200), "value": S.Nullable(S.Number(0, 1e20)), "running_pct": S.Nullable(S.Number(0, 100, "%"))},
    name="PerfCounter")
