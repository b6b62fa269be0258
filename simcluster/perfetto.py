"""Chrome / Perfetto trace documents (open in ui.perfetto.dev) from the intervals of a run (engine.Interval).
The library returns the document; the CLI writes it."""

from __future__ import annotations

import re

from simcluster.engine import Interval


def chrome_trace(title: str, intervals: list[Interval], repeats: int = 1, period_s: float = 0.0) -> dict:
    """A process per interval group (`Interval.process`; one named `title` when there are none), a thread per
    lane, both in order of first use; with `repeats`, the intervals again every `period_s` (consecutive steps)."""
    pids: dict[str, int] = {}
    lanes: dict[tuple[str, str], int] = {}
    for i in intervals:
        pids.setdefault(i.process, len(pids))
        lanes.setdefault((i.process, i.lane), len(lanes) + 1)
    events = [{"name": "process_name", "ph": "M", "pid": pid, "args": {"name": f"simcluster: {title}"
                                                                        + (f", {process}" if process else "")}}
              for process, pid in pids.items()]
    # shown in name order with numbers compared as numbers (stage 0, 1, ..., 10), not in order of first use
    order = sorted(pids, key=lambda name: [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", name or "")])
    events += [{"name": "process_sort_index", "ph": "M", "pid": pids[process], "args": {"sort_index": k}}
               for k, process in enumerate(order)]
    events += [{"name": "thread_name", "ph": "M", "pid": pids[process], "tid": tid, "args": {"name": lane}}
               for (process, lane), tid in lanes.items()]
    for k in range(repeats):
        offset = k * period_s
        events += [{"name": i.name, "cat": i.lane, "ph": "X", "pid": pids[i.process], "tid": lanes[i.process, i.lane],
                    "ts": round((offset + i.start_s) * 1e6, 3), "dur": round((i.end_s - i.start_s) * 1e6, 3),
                    "args": {"step": k}} for i in intervals if i.end_s > i.start_s]
    return {"traceEvents": events, "displayTimeUnit": "ms"}
