"""Would a launch queue shallower than the lab's 1,021 kernels explain the ppcouple set's pipeline probe? (issue 44,
session 45 ppblock; a diagnostic, no model input, nothing fitted; development: the ppcouple set's 8 processes and 2
probe processes, all seen).

The candidate (hosts free, launch_backlog.free_host) stalls a host that runs more than llm/host.LAUNCH_QUEUE_KERNELS launches
ahead of its GPU. The queue probe (runs/queue of calibration/h200x2-ppcouple-2026-11-30) measured 1,021 with a kernel
of small arguments; PyTorch's kernels carry larger argument blocks, which could fill the queue sooner. This prints,
with that set's own single host fit (runs/host) and the candidate on, the 4- and 32-layer hidden-128 pipeline probes'
errors and the 8 processes' mean |error| and bias at queue depths from 1,000 down to 20 (the module constant set for
the print, then restored).
    python studies/pp_queue_depth.py
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
BUNDLE = ROOT / "calibration" / "h200x2-ppcouple-2026-11-30"
DEPTHS = (1000, 500, 300, 200, 100, 50, 20)


def measured() -> tuple[dict, list]:
    """The probe's rank-0 median step per layer count (s), and (row, measured s) per process, from the set's runs."""
    from simcluster.heldout.eager import _document

    def median_step(path: Path) -> float:
        doc, _ = _document(path.read_text(errors="replace"))
        return doc["shapes"][0]["median_step_s"]

    probe = {n: median_step(BUNDLE / "runs" / "probe" / f"pp-1f1b-L{n}.json") for n in (4, 32)}
    rows = yaml.safe_load((BUNDLE / "registered.yaml").read_text())["rows"]
    procs = [(r, median_step(p)) for r in rows for p in sorted((BUNDLE / "runs").glob(f"{r['name']}-r*.json"))]
    return probe, procs


def main() -> int:
    from simcluster.heldout.eager_regimes import regime_predict
    from simcluster.llm import host

    own = BUNDLE / "runs" / "host"
    probe, procs = measured()
    keep = host.LAUNCH_QUEUE_KERNELS
    print(f"{'queue':>6}  probe L4  probe L32  processes: mean |error|  bias   (candidate on, ppcouple's own single fit)")
    try:
        for q in DEPTHS:
            host.LAUNCH_QUEUE_KERNELS = q
            pe = [regime_predict("tiny", 1, "pp-1f1b", "h200", own, 4, 256, free_hosts=True, layers=n)["step_ms"] / 1e3
                  / probe[n] - 1 for n in (4, 32)]
            errs = [regime_predict(r["preset"], r["micro_batch"], r["mode"], "h200", own, r["microbatches"], r["seq"],
                                   free_hosts=True)["step_ms"] / 1e3 / m - 1 for r, m in procs]
            print(f"{q:6d}  {pe[0]:+8.1%}  {pe[1]:+9.1%}  {len(errs)} processes: {statistics.mean(map(abs, errs)):11.1%}"
                  f"  {statistics.mean(errs):+6.1%}")
    finally:
        host.LAUNCH_QUEUE_KERNELS = keep
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    sys.exit(main())
