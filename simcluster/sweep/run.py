"""Running a sweep: its points on Dask workers (a LocalCluster of processes, or an existing scheduler), rows into
the results store as they finish, and only the points the store does not hold yet.

`evaluate(items)` is what a worker runs: each point's Scenario through build.run_scenario, its results flattened
into one row. The driver builds and checks every point (spec.points), skips those already stored, sends the rest
in chunks, writes a part file every `flush_rows` rows or `flush_s` seconds, and prints progress on stderr.
`workers=0` runs the points in this process (no Dask), for small sweeps and for measuring Dask's own overhead.
"""

from __future__ import annotations

import atexit
import logging
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from simcluster import __version__, code_digest, output, strict
from simcluster.errors import SimclusterError
from simcluster.files import lock
from simcluster.sweep import spec as spec_module
from simcluster.sweep import store

MAX_WORKERS = 256


@dataclass(frozen=True)
class SweepSummary:
    folder: str
    points: int              # distinct points in the spec
    already: int             # found in the store, not run again
    ran: int                 # computed now (ok + failed)
    ok: int
    invalid: int             # refused by the scenario reader (stored with the reason)
    failed: int              # raised while running (stored with the reason)
    parts: int               # part files written now
    wall_s: float
    problems: list[str] = field(default_factory=list)
    statuses: dict = field(default_factory=dict)   # validation status -> answers (jobs) of the points computed now

    def to_json(self) -> dict:
        out = {k: getattr(self, k) for k in ("folder", "points", "already", "ran", "ok", "invalid", "failed", "parts",
                                             "wall_s")}
        out["validation"] = {"status_counts": dict(sorted(self.statuses.items())),
                             "bands": "each stored row's jobs[i].<key>_band columns (80%) and jobs[i].validation.*"}
        return out


@lru_cache(maxsize=256)
def card_name(path: str) -> str:
    try:
        doc = strict.load_yaml(path)
    except SimclusterError:
        return Path(path).stem
    return str(doc.get("name", Path(path).stem)) if isinstance(doc, dict) else Path(path).stem


def machine_facts(sc) -> dict:
    """What cost and energy need about a point's machine: counts and card names."""
    from simcluster.cost import switch_count

    m = sc.machine
    nics = m.nodes * m.nic.per_node if m.nic else 0
    return {"machine.nodes": m.nodes, "machine.gpus_per_node": m.gpus_per_node, "machine.gpus": m.nodes * m.gpus_per_node,
            "machine.gpu_card": card_name(str(m.gpu_card)) if m.gpu_card else None,
            "machine.nic_card": card_name(str(m.nic.card)) if m.nic else None, "machine.nics": nics,
            "machine.switches": switch_count(m)}


WORKER_CODE = "worker_code"   # set only on the rows of a worker whose code differs from the driver's: never stored


def evaluate(items: list, code: str | None = None) -> list[dict]:
    """A worker's chunk: [(hash, params, scenario)] -> one row each (a failure is a row with its one line). `code`: the
    driver's code_digest, which named the points; a worker running other code fails them instead of storing its numbers
    under the driver's hashes."""
    from simcluster.build import run_scenario

    code = code or code_digest()
    rows = []
    for point_hash, params, sc in items:
        row = {"point_hash": point_hash, "status": "ok", "error": None, "simcluster_version": __version__,
               "simcluster_code": code, **params}
        start = time.perf_counter()
        if code_digest() != code:
            rows.append({**row, "status": "failed", "point_wall_s": 0.0, WORKER_CODE: code_digest(),
                         "error": f"this worker runs other simcluster code ({code_digest()}) than the driver ({code}); "
                                  "install the same version on every worker"})
            continue
        try:
            row.update(machine_facts(sc))
            result = run_scenario(sc, simulate=False)   # LLM steps by the DES's recurrence (llm/maxplus.py)
            row.update(store.flatten(output.check(result.to_json(), f"sweep point {params}"[:200])))
            if result.skipped:
                row["notes"] = "; ".join(result.skipped)
        except SimclusterError as exc:
            row.update(status="failed", error=exc.one_line())
        except Exception as exc:  # noqa: BLE001 - a model bug on one point must not lose the sweep; the row says what
            row.update(status="failed", error=f"{type(exc).__name__}: {exc}")
        row["point_wall_s"] = time.perf_counter() - start
        rows.append(row)
    return rows


class _Progress:
    def __init__(self, total: int, stream, label: str = "sweep"):
        self.total, self.stream, self.label = total, stream, label
        self.start = self.last = time.perf_counter()
        self.done = 0
        self.tty = bool(getattr(stream, "isatty", lambda: False)())

    def add(self, n: int, failed: int, force: bool = False):
        self.done += n
        now = time.perf_counter()
        if self.stream is None or not (force or now - self.last >= (0.2 if self.tty else 2.0)):
            return
        self.last = now
        rate = self.done / max(now - self.start, 1e-9)
        eta = (self.total - self.done) / rate if rate > 0 else float("inf")
        width = 30
        filled = int(width * self.done / max(self.total, 1))
        bar = "#" * filled + "." * (width - filled)
        line = (f"{self.label} [{bar}] {self.done}/{self.total} points, {rate:.1f}/s, "
                f"{failed} failed, eta {eta:.0f}s")
        self.stream.write(("\r" + line) if self.tty else line + "\n")
        if self.tty and force:
            self.stream.write("\n")
        self.stream.flush()


def _client(workers: int, scheduler: str | None):
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:  # pragma: no cover - a dependency
        raise SimclusterError("dask.distributed is not installed", hint="pip install 'dask[distributed]'") from None
    if scheduler:
        try:
            return Client(scheduler, timeout=10), None
        except (OSError, TimeoutError) as exc:
            raise SimclusterError(f"cannot reach the Dask scheduler {scheduler}: {exc}") from None
    scratch = tempfile.mkdtemp(prefix="simcluster-dask-")   # the workers' scratch, removed whatever ends the sweep
    atexit.register(shutil.rmtree, scratch, True)
    try:
        import dask

        dask.config.set({"temporary-directory": scratch})   # the nannies' and workers' dask-scratch-space too
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                               silence_logs=logging.ERROR, local_directory=scratch)
        cluster.scratch = scratch
        return Client(cluster), cluster
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise


def run(sweep: spec_module.SweepFile, out: str | Path, points: list | None = None, workers: int = 2,
        scheduler: str | None = None, chunk: int | None = None, flush_rows: int = 1000, flush_s: float = 10.0,
        progress=None, extra_manifest: dict | None = None) -> SweepSummary:
    """Every point of `sweep` (or `points`) not yet in the store at `out`, computed and stored; progress on `progress`
    (default: sys.stderr as it is at the call, not at import)."""
    progress = sys.stderr if progress is None else progress
    if not 0 <= workers <= MAX_WORKERS:
        raise SimclusterError(f"--workers {workers}: expected 0 to {MAX_WORKERS}")
    if chunk is not None and not 1 <= chunk <= 100_000:
        raise SimclusterError(f"--chunk {chunk}: expected 1 to 100,000 points per task")
    if flush_rows < 1 or not 0 <= flush_s <= 86400:
        raise SimclusterError("--flush-rows must be >= 1 and --flush-seconds from 0 to 86400")
    start = time.perf_counter()
    pts = spec_module.points(sweep) if points is None else points
    folder = Path(out)
    store.check_folder(folder)
    folder.mkdir(parents=True, exist_ok=True)
    types = store.param_types(_keys(sweep, pts))
    with lock(folder):
        have = store.stored_hashes(folder)
        manifest = {"scenario": str(sweep.path), "name": sweep.doc.get("name"), "mode": sweep.spec.mode,
                    "keys": {k: [store.param_value(v, "str") if not isinstance(v, (int, float, str, bool)) else v
                                 for v in vals] for k, vals in sweep.spec.keys},
                    "points": len(pts), "simcluster_version": __version__, "simcluster_code": code_digest(),
                    **(extra_manifest or {})}
        manifest.update({k: v for k, v in sweep.sections.items() if k == "plan"})
        store.write_manifest(folder, manifest)
        todo = [p for p in pts if p.hash not in have]
        writer = _Writer(folder, types, flush_rows, flush_s)
        invalid = [p for p in todo if p.scenario is None]
        runnable = [p for p in todo if p.scenario is not None]
        for p in invalid:   # held until the first part of computed rows, so the first part has every column
            writer.hold([{"point_hash": p.hash, "status": "invalid", "error": p.error, "simcluster_version": __version__,
                          "simcluster_code": code_digest(), **_params(p, types)}])
        bar = _Progress(len(runnable), progress)
        items = [(p.hash, _params(p, types), p.scenario) for p in runnable]
        failed = ok = 0
        statuses: dict[str, int] = {}
        problems = [f"invalid point {dict(p.params)}: {p.error}" for p in invalid]
        try:
            for rows in _execute(items, workers, scheduler, chunk):
                stale = next((r for r in rows if WORKER_CODE in r), None)
                if stale is not None:   # stored, these rows would name numbers of other code; resume re-runs them
                    raise SimclusterError(stale["error"], where=str(folder),
                                          hint="stored points are kept; run again once every worker has the driver's code")
                for r in rows:
                    for key, value in r.items():
                        if key.endswith(".validation.status") and isinstance(value, str):
                            statuses[value] = statuses.get(value, 0) + 1
                    if r["status"] == "ok":
                        ok += 1
                    else:
                        failed += 1
                        problems.append(f"failed point {r['point_hash'][:12]}: {r['error']}")
                writer.add(rows)
                bar.add(len(rows), failed)
        except SimclusterError:
            writer.flush()
            raise
        except Exception as exc:  # noqa: BLE001 - Dask's own failures (a worker lost, a closed connection): keep what ran
            writer.flush()
            raise SimclusterError(f"the sweep stopped: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}",
                                  where=str(folder), hint="run the same command again: stored points are kept") from None
        writer.flush()
        bar.add(0, failed, force=True)
    return SweepSummary(str(folder), len(pts), len(pts) - len(todo), ok + failed, ok, len(invalid), failed,
                        writer.written, time.perf_counter() - start, problems, statuses)


def _keys(sweep, pts) -> list:
    if sweep.spec.keys:
        keys = {k: list(v) for k, v in sweep.spec.keys}
    else:
        keys = {}
    for p in pts:
        for k, v in p.params:
            keys.setdefault(k, [])
            if v not in keys[k]:
                keys[k].append(v)
    return list(keys.items())


def _params(point, types) -> dict:
    return {f"param.{k}": store.param_value(v, types[f"param.{k}"]) for k, v in point.params}


def _chunks(items, size):
    return [items[i:i + size] for i in range(0, len(items), size)]


def _execute(items, workers, scheduler, chunk):
    """Rows in the order chunks finish."""
    if not items:
        return
    if workers == 0 and not scheduler:
        for part in _chunks(items, chunk or 1):
            yield evaluate(part, code_digest())
        return
    client, cluster = _client(workers, scheduler)
    try:
        from dask.distributed import as_completed

        n = max(1, len(client.scheduler_info().get("workers", {})) or workers or 1)
        size = chunk or max(1, min(100, len(items) // (n * 8)))
        futures = [client.submit(evaluate, part, code_digest(), pure=False) for part in _chunks(items, size)]
        for future in as_completed(futures):
            yield future.result()
            future.release()
    finally:
        try:
            client.close()
            if cluster is not None:
                cluster.close()
        finally:
            if cluster is not None:
                shutil.rmtree(cluster.scratch, ignore_errors=True)


class _Writer:
    def __init__(self, folder: Path, types, flush_rows: int, flush_s: float):
        self.folder, self.types, self.flush_rows, self.flush_s = folder, types, max(1, flush_rows), flush_s
        self.buffer: list[dict] = []
        self.held: list[dict] = []
        self.last = time.perf_counter()
        self.written = 0

    def hold(self, rows):
        self.held.extend(rows)

    def add(self, rows):
        self.buffer.extend(rows)
        if len(self.buffer) >= self.flush_rows or time.perf_counter() - self.last >= self.flush_s:
            self.flush()

    def flush(self):
        self.buffer, self.held = self.buffer + self.held, []
        if self.buffer:
            store.write_part(self.folder, self.buffer, self.types, self.written)
            self.written += 1
            self.buffer = []
        self.last = time.perf_counter()
