"""Points per second of every shipped plan (scenarios/plans/*.yaml with a plan: section; not a test).

For each plan: the candidates enumerated and read (search.candidates: the scenario reader and the memory filter), then
every point evaluated in this one process as a sweep worker evaluates it (sweep.run.evaluate: the prediction, its JSON
checked and flattened into a row), after one point run first so that imports and card reads are not counted; then the
whole plan (run_plan with --workers 0: the points again, the store's writes, pricing, the answer) into a scratch folder.
  points        configurations evaluated
  cand s        wall seconds to enumerate and read the candidates
  eval s / CPU  wall and CPU seconds of the points' evaluation; points/s and points/CPU s from them (on a shared
                machine the CPU figure is the steadier one)
  pred CPU      CPU seconds of the predictions alone (build.run_scenario of each point, as evaluate calls it; no row)
  plan s        wall seconds of the whole plan (Dask's start-up not included: `simcluster plan` starts 2 workers)
    python bench/plan_points.py [--eval-only] [PLAN ...]     (--eval-only: no whole-plan run, plan s left blank)
"""

from __future__ import annotations

import inspect
import io
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster import build  # noqa: E402
from simcluster.plan import search  # noqa: E402
from simcluster.sweep import run as sweep_run  # noqa: E402


def plans() -> list[Path]:
    return [p for p in sorted((ROOT / "scenarios" / "plans").glob("*.yaml")) if "kind: catalogue" not in p.read_text()]


def bench(path: Path, whole: bool = True) -> dict:
    t0 = time.perf_counter()
    sweep, plan = search.read_plan(path)
    points, _ = search.candidates(sweep, plan)
    out = {"points": len(points), "cand_s": time.perf_counter() - t0}
    items = [(p.hash, {}, p.scenario) for p in points if p.scenario is not None]
    sweep_run.evaluate(items[:1])
    w, c = time.perf_counter(), time.process_time()
    rows = sweep_run.evaluate(items)
    out.update(eval_s=time.perf_counter() - w, eval_cpu_s=time.process_time() - c,
               failed=sum(r["status"] != "ok" for r in rows))
    kwargs = {"simulate": False} if "simulate" in inspect.signature(build.run_scenario).parameters else {}   # as evaluate
    c = time.process_time()
    for _, _, sc in items:
        build.run_scenario(sc, **kwargs)
    out["pred_cpu_s"] = time.process_time() - c
    out["plan_s"] = float("nan")
    if whole:
        w = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="plan-points-") as tmp:
            search.run_plan(path, Path(tmp) / "plan", workers=0, progress=io.StringIO())
        out["plan_s"] = time.perf_counter() - w
    return out


def main() -> None:
    from simcluster.errors import SimclusterError
    from simcluster.script_args import check

    args = [a for a in check(options=("--eval-only",), words=None, usage="[--eval-only] [PLAN.yaml ...]") if a != "--eval-only"]
    paths = [Path(p).resolve() for p in args] or plans()
    try:
        _table(paths)
    except SimclusterError as exc:   # a plan file that cannot be read: its one line, not a traceback
        raise SystemExit(f"plan_points.py: {exc}") from None


def _table(paths: list[Path]) -> None:
    print(f"{'plan':<14} {'points':>6} {'cand s':>7} {'eval s':>7} {'points/s':>9} {'CPU s':>6} {'points/CPU s':>12} {'pred CPU':>8} {'plan s':>7}")
    for path in paths:
        r = bench(path, whole="--eval-only" not in sys.argv)
        n = r["points"]
        print(f"{path.stem:<14} {n:>6} {r['cand_s']:>7.2f} {r['eval_s']:>7.2f} {n / r['eval_s']:>9.1f} {r['eval_cpu_s']:>6.2f} "
              f"{n / r['eval_cpu_s']:>12.1f} {r['pred_cpu_s']:>8.2f} {r['plan_s']:>7.2f}" + (f"  ({r['failed']} failed)" if r["failed"] else ""), flush=True)


if __name__ == "__main__":
    main()
