"""Points per second of every shipped plan (scenarios/plans/*.yaml with a plan: section; not a test).

For each plan: the candidates enumerated and read (search.candidates: the scenario reader and the memory filter), then
every point run in this one process (run_plan with --workers 0: no Dask start-up, one core) into a scratch store,
priced and ranked. `points` are the configurations evaluated; `sweep s` the sweep's own wall time (the points' runs
and the store's writes); points/s = points / sweep s; CPU s the process's CPU time over the whole run (sweep, pricing,
answer: on a shared machine the steadier figure), points/CPU s = points / CPU s. The whole `simcluster plan` with 2 workers adds Dask's start-up.
    python bench/plan_points.py [PLAN ...]
"""

from __future__ import annotations

import io
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.plan import search  # noqa: E402


def plans() -> list[Path]:
    return [p for p in sorted((ROOT / "scenarios" / "plans").glob("*.yaml")) if "kind: catalogue" not in p.read_text()]


def bench(path: Path) -> tuple[int, float, float, float, float]:
    """(points evaluated, candidates s, sweep s, whole s, whole CPU s) of one plan."""
    t0 = time.perf_counter()
    sweep, plan = search.read_plan(path)
    search.candidates(sweep, plan)
    t1 = time.perf_counter()
    c1 = time.process_time()
    with tempfile.TemporaryDirectory(prefix="plan-points-") as tmp:
        result = search.run_plan(path, Path(tmp) / "plan", workers=0, progress=io.StringIO())
    return result.summary.ran, t1 - t0, result.summary.wall_s, time.perf_counter() - t1, time.process_time() - c1


def main() -> None:
    paths = [Path(p).resolve() for p in sys.argv[1:]] or plans()
    print(f"{'plan':<16} {'points':>6} {'candidates s':>12} {'sweep s':>8} {'points/s':>9} {'whole s':>8} {'CPU s':>6} "
          f"{'points/CPU s':>12}")
    for path in paths:
        n, cand, sweep_s, whole, cpu = bench(path)
        print(f"{path.stem:<16} {n:>6} {cand:>12.2f} {sweep_s:>8.2f} {n / sweep_s:>9.1f} {whole:>8.2f} {cpu:>6.2f} {n / cpu:>12.1f}",
              flush=True)


if __name__ == "__main__":
    main()
