"""Points per second of `simcluster sweep` and the engine's overhead per point against calling the model directly
(not a test).

The sweep: the seed 000 DDP job (scenarios/plans/seed000-ddp.yaml's machine and job, ResNet-18 DDP) over
machine.nodes (1..50) x machine.nic.card (100G RoCE, 100G TCP) x jobs[0].loader_cpu_per_sample (100 values),
10,000 points by default. Measured, on the same points:
  direct    predict_training(machine, job) for every point's already-built Scenario, in this process, serially
            (the model alone; cards parsed once per process, as in the engine)
  build     spec.points(): each point's document set, read by the strict scenario reader, hashed
  engine-0  run.run(workers=0): build + run_scenario + row flattening + Parquet parts, in this process
  engine-N  run.run(workers=N): the same through a Dask LocalCluster of N worker processes (cluster start included)
Overhead per point: engine-0 wall / points - direct / points (serial), and for Dask the core-seconds the engine
spends beyond the model: engine-N wall x min(N + 1, cores) / points - direct / points (N workers and the driver).
    python bench/sweep_scale.py [--points 10000] [--workers 2[,8,15]]
"""

from __future__ import annotations

import io
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from simcluster.predict_training import predict_training  # noqa: E402
from simcluster.sweep import run, spec, store  # noqa: E402

PLAN = ROOT / "scenarios" / "plans" / "seed000-ddp.yaml"


def scenario(folder: Path, points: int) -> Path:
    doc = yaml.safe_load(PLAN.read_text())
    for key in ("plan",):
        doc.pop(key)
    base = PLAN.parent
    m = doc["machine"]
    m["card"] = str((base / m["card"]).resolve())
    m["gpu"]["card"] = str((base / m["gpu"]["card"]).resolve())
    m["nic"]["card"] = str((base / m["nic"]["card"]).resolve())
    for k in ("workload", "ddp"):
        doc["jobs"][0][k] = str((base / doc["jobs"][0][k]).resolve())
    nics = [str((ROOT / "models/nic" / n).resolve()) for n in ("seed000-roce-100g.yaml", "seed000-tcp-100g.yaml")]
    per = max(1, points // (50 * len(nics)))
    doc["sweep"] = {"mode": "product", "keys": {"machine.nodes": list(range(1, 51)), "machine.nic.card": nics,
                                                "jobs[0].loader_cpu_per_sample": [f"{0.1 * (i + 1):.1f}ms" for i in range(per)]}}
    path = folder / "bench-sweep.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def main() -> None:
    from simcluster.script_args import ArgumentParser  # a bad argument: one line

    ap = ArgumentParser()
    ap.add_argument("--points", type=int, default=10_000)
    ap.add_argument("--workers", default="2", help="Dask worker counts to measure, e.g. 2 or 2,8,15")
    ap.add_argument("--compute-only", action="store_true", help="time the engine without the Parquet store (run._execute: "
                    "points to rows on Dask), e.g. where pyarrow is not installed")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="sweep-bench-"))
    try:
        sweep = spec.read_sweep(scenario(tmp, args.points))
        t0 = time.perf_counter()
        pts = spec.points(sweep)
        build = time.perf_counter() - t0
        n = len(pts)
        predict_training(pts[0].scenario.machine, pts[0].scenario.jobs[0])      # warm: cards parsed once
        t0 = time.perf_counter()
        for p in pts:
            predict_training(p.scenario.machine, p.scenario.jobs[0])
        direct = time.perf_counter() - t0
        def engine(workers: int, name: str) -> float:
            t0 = time.perf_counter()
            if args.compute_only:
                items = [(p.hash, {}, p.scenario) for p in spec.points(sweep)]
                rows = [r for chunk in run._execute(items, workers, None, None) for r in chunk]
                assert len(rows) == n and all(r["status"] == "ok" for r in rows)
            else:
                s = run.run(sweep, tmp / name, workers=workers, flush_rows=1000, progress=io.StringIO())
                assert s.ok == n and store.read(tmp / name).num_rows == n
            return time.perf_counter() - t0

        engine0 = engine(0, "engine0")
        cores = os.cpu_count() or 1
        print(f"{n} points (seed 000 DDP: nodes x NIC card x loader cost), {cores} cores")
        print(f"  model directly      {direct:8.2f} s  {n / direct:8.0f} points/s  {direct / n * 1e3:6.2f} ms/point")
        print(f"  build + check + hash{build:8.2f} s  {n / build:8.0f} points/s  {build / n * 1e3:6.2f} ms/point")
        print(f"  engine in process   {engine0:8.2f} s  {n / engine0:8.0f} points/s  overhead {(engine0 - direct) / n * 1e3:.2f} ms/point")
        out = {"points": n, "cpu_count": cores, "direct_s": direct, "build_s": build, "engine0_s": engine0,
               "overhead_per_point_serial_ms": (engine0 - direct) / n * 1e3, "dask": [],
               "store": not args.compute_only}
        for workers in (int(w) for w in args.workers.split(",")):
            wall = engine(workers, f"engine{workers}")
            used = min(workers + 1, cores)              # the workers and the driver
            over = (wall * used - direct) / n * 1e3
            out["dask"].append({"workers": workers, "wall_s": wall, "points_per_s": n / wall, "overhead_core_ms_per_point": over,
                                "speedup_vs_direct": direct / wall})
            print(f"  engine, Dask x{workers:<3}  {wall:8.2f} s  {n / wall:8.0f} points/s  {direct / wall:5.2f}x the model alone, "
                  f"overhead {over:.2f} core-ms/point (cluster start included)")
        print(json.dumps(out))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
