"""A DLIO run's dftracer trace (.pfw) -> the loader's per-thread intake rate.

Each sample a DLIO reader loads is an `NPZReader.open` (or another reader's `open`) event whose
child POSIX `read` events (same process, parent p_idx = its id) return the bytes. With the page
cache warm, the reads do not reach the disk, so bytes / event duration is what one loader thread
can take in (Python, numpy, copies): the `thread_read_Bps` of simcluster.storage.loader.
"""

from __future__ import annotations

from collections import defaultdict

from simcluster.errors import CalibrationError


def thread_rate_Bps(events: list[dict]) -> tuple[float, dict]:
    opens = {(e.get("pid"), str(e.get("id"))): float(e["dur"]) * 1e-6 for e in events
             if str(e.get("name", "")).endswith(".open") and e.get("cat") == "reader"}
    got: dict = defaultdict(int)
    for e in events:
        if e.get("cat") == "POSIX" and e.get("name") == "read":
            args = e.get("args") or {}
            key = (e.get("pid"), str(args.get("p_idx")))
            if key in opens:
                got[key] += int(args.get("ret", 0) or 0)
    files = [(got[k], opens[k]) for k in opens if got.get(k, 0) > 0 and opens[k] > 0]
    if not files:
        raise CalibrationError("the trace has no reader open events with POSIX reads under them",
                               hint="collect DLIO with DFTRACER_ENABLE=1 (simcluster collect does)")
    total_bytes, total_s = sum(b for b, _ in files), sum(d for _, d in files)
    return total_bytes / total_s, {"files": len(files), "bytes": total_bytes, "seconds": round(total_s, 4)}
