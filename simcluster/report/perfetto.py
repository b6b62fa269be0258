"""Chrome / Perfetto trace documents (open in ui.perfetto.dev) from the intervals of a run (engine.Interval).
The library returns the document; the CLI writes it."""

from __future__ import annotations

from simcluster.engine import Interval


def chrome_trace(title: str, intervals: list[Interval], repeats: int = 1, period_s: float = 0.0) -> dict:
    """One process named `title`, a thread per lane (in order of first use); with `repeats`, the intervals again
    every `period_s` (consecutive steps)."""
    lanes: dict[str, int] = {}
    for i in intervals:
        lanes.setdefault(i.lane, len(lanes) + 1)
    events = [{"name": "process_name", "ph": "M", "pid": 0, "args": {"name": f"simcluster: {title}"}}]
    events += [{"name": "thread_name", "ph": "M", "pid": 0, "tid": tid, "args": {"name": lane}} for lane, tid in lanes.items()]
    for k in range(repeats):
        offset = k * period_s
        events += [{"name": i.name, "cat": i.lane, "ph": "X", "pid": 0, "tid": lanes[i.lane],
                    "ts": round((offset + i.start_s) * 1e6, 3), "dur": round((i.end_s - i.start_s) * 1e6, 3),
                    "args": {"step": k}} for i in intervals if i.end_s > i.start_s]
    return {"traceEvents": events, "displayTimeUnit": "ms"}
