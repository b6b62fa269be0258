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


def thread_rate_through_model(workload, nvme, config, measured_Bps: float, seed: int = 0) -> float:
    """The per-thread intake rate (`LoaderConfig.thread_read_Bps`) for which the loader model reproduces a calibration
    run's whole-pipeline rate `measured_Bps` (DLIO's bytes/s over one epoch of `workload`, typically one read thread and
    no compute). A worker's cycle is its reads from the drive plus its intake of each read, partly overlapped, so the
    measured pipeline rate is below the intake rate by the drive time the overlap does not hide; taking the measured rate
    as the intake rate counts the drive twice. Bisection on the rate (the simulated pipeline rate rises with it)."""
    import dataclasses

    from simcluster.storage import loader

    steps = workload.steps_per_epoch(1)
    if steps < 2 or measured_Bps <= 0:
        raise CalibrationError(f"a calibration run needs >= 2 steps and a rate > 0, got {steps} steps, {measured_Bps} B/s")
    cfg = dataclasses.replace(config, thread_read_Bps=None, steps=steps, at_least=False)

    def simulated(rate: float) -> float:
        r = loader.simulate(workload, nvme, 1, 1, dataclasses.replace(cfg, thread_read_Bps=rate), seed=seed)
        return r.dlio_throughput_samples_per_s * workload.record_bytes

    if simulated(1e15) < measured_Bps:
        raise CalibrationError(f"the drive model alone is slower ({simulated(1e15) / 1e6:.0f} MB/s) than the calibration run "
                               f"({measured_Bps / 1e6:.0f} MB/s): no intake rate reproduces it")
    lo, hi = measured_Bps, 2 * measured_Bps
    while simulated(hi) < measured_Bps:
        lo, hi = hi, 2 * hi
    for _ in range(30):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if simulated(mid) < measured_Bps else (lo, mid)
        if hi - lo < 1e-4 * measured_Bps:
            break
    return (lo + hi) / 2
