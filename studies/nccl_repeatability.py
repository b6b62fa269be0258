"""How repeatable an nccl-tests log is at each size: out-of-place vs in-place time of the same size
(two measurements the tool makes back to back), and the newer collection of the same machine type.

    python studies/nccl_repeatability.py

A model's mean |error| cannot honestly be asked to beat the data's own repeatability.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from simcluster.traces import nccl_tests

ROOT = Path(__file__).resolve().parent.parent
OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "sendrecv", "alltoall")


def diffs(trace) -> np.ndarray:
    rows = [r for r in trace.rows if r.size_bytes >= 1024 and r.time_inplace_s]
    return np.array([abs(r.time_inplace_s / r.time_s - 1) for r in rows]) * 100


def main() -> None:
    print(f"{'bundle':>28} {'op':>15} {'out-of-place vs in-place, sizes >= 1 KiB: mean |diff|':>55} {'max':>7}")
    for bundle in ("h200x2-nvlink-2026-11-22", "h200x4-nvlink-2026-11-22"):
        for op in OPS:
            path = ROOT / "calibration" / bundle / "nccl-tests" / f"{op}.txt"
            if path.is_file():
                d = diffs(nccl_tests.parse(path))
                print(f"{bundle:>28} {op:>15} {d.mean():54.1f}% {d.max():6.1f}%")
    old = nccl_tests.parse(ROOT / "calibration/h200x4-nvlink-2026-11-22/nccl-tests/all_reduce.txt")
    new = nccl_tests.parse(ROOT / "calibration/h200x4-collect-2026-11-22/nccl-tests/all_reduce/stdout.txt")
    same = {r.size_bytes: r.time_s for r in new.rows}
    d = np.array([abs(same[r.size_bytes] / r.time_s - 1) * 100 for r in old.rows if r.size_bytes >= 1024 and r.size_bytes in same])
    print(f"all_reduce, 4 x H200, two sessions (two machines of the same kind): mean |diff| {d.mean():.1f}%, max {d.max():.1f}%")


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    main()
