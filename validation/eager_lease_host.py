"""Issue 44, session 41 (leasehost): is FSDP2 0.5b 5120:2 host-bound on a lease whose host is slower than the one the
product's host fit came from? A registered 2 x H200 set (calibration/h200x2-eager-leasehost-2026-11-30).

    python validation/eager_lease_host.py --register calibration/h200x2-eager-leasehost-2026-11-30/registered.yaml   # before
    python validation/eager_lease_host.py [calibration/BUNDLE]                                                      # after

One device call on one lease: FIRST the hidden-128 host-fit runs of calibration/h200x2-llm-host-2026-11-23's
device_run.sh (fsdp at 2 / 8 / 32 layers, ddp at 2 / 32; runs/MODE-L<n>.json: the lease's own host fit, eager.fit_modes
over runs/, the product's `framework.host` path), THEN ROWS (`simcluster.runner.llm_step`, 3 warm-up and 10 timed steps,
every rank's host issue per step recorded: runner/host_issue.py).

The conditional prediction (fixed at registration because the function and the GPU numbers are): each row's step is
heldout/eager_regimes.regime_predict with own_host = the bundle's runs/ (the model's own combination of the GPU path and
the host issue: llm/host.py's issue bound on every forward and backward plus host_step_s, llm/work.py), i.e. the product
answering with `framework: {name: torch, host: <runs/>}`. Registered per row: the GPU path (every host cost 0), the model's
kernel count, the step at the shipped fit (h200x2-llm-host-2026-11-23) and at a grid of host costs per kernel (GRID_US,
host_step_s the shipped one's) -- the read-out recomputes them and refuses to judge where the model moved. Reported
beside it: the simple form max(GPU path, kernels x c + a) and the shipped fit's prediction.

RULE (fixed at registration, registered.yaml `rules`):
  HOST-BOUND HOLDS iff  |mean of HOST_ROW's process medians / its lease-fit prediction - 1| <= max(its processes'
    spread, HOST_TOL) and the median over its processes of each process's median over timed steps of (the step minus
    the host issue of the rank that issued that step slowest, both on that rank's clock) <= GAP_MS; else FAILS, naming
    the part(s).
  CONTROLS HOLD iff every other row's mean of process medians is within CONTROL_TOL of its lease-fit prediction; else
    FAIL, naming the row(s).
  Measured: each process's rank-0 median step (`median_step_s`); the by-rank lists for the gap.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import yaml

from simcluster.errors import SimclusterError
from simcluster.heldout.registration import read_run_set, registering_commit, set_main, write_registration

ROOT = Path(__file__).resolve().parents[1]
BUNDLE = ROOT / "calibration" / "h200x2-eager-leasehost-2026-11-30"
# (name, mode, preset, seq, micro-batch, processes): device_run.sh's file stems (NAME-rK.json)
ROWS = (
    ("fsdp-0.5b-5120x2", "fsdp", "0.5b", 5120, 2, 3),   # the row: 121-152 ms on two leases, model 115.4 (GPU-bound flag)
    ("fsdp-0.5b-5120x4", "fsdp", "0.5b", 5120, 4, 2),   # same kernels, twice the GPU work: far from the crossing
    ("ddp-1b-4096x3", "ddp", "1b", 4096, 3, 1),         # DDP control (host share 0.018)
)
HOST_ROW = "fsdp-0.5b-5120x2"
HOST_TOL, CONTROL_TOL, GAP_MS = 0.05, 0.03, 5.0
GRID_US = (45.0, 60.0, 75.0, 90.0, 105.0)   # host seconds per kernel (us) of the row's mode, for the registered grid
HEADER = "# Predictions registered before the runs (issue 44, session 41, leasehost); never edited after them.\n"
MOVED_MS = 0.05                              # a recomputed registered number further than this: the model moved


def _fits(base: dict, mode: str, c_s: float | None) -> dict:
    """The shipped fits with `mode`'s cost per kernel replaced (None: every mode's host cost 0, the GPU path)."""
    if c_s is None:
        return {k: (0.0, 0.0, v[2]) for k, v in base.items()}
    return base | {mode: (c_s, base[mode][1], base[mode][2])}


def predict(row: tuple, own_host: Path | None = None) -> dict:
    """The row's model numbers: GPU path, kernels, the step with the shipped fit or the lease's (`own_host`), the
    simple max form, the grid (the grid and GPU path do not depend on `own_host`)."""
    from simcluster.heldout.eager_regimes import MODE_HOST, layout_of, model_of, regime_framework, regime_predict
    from simcluster.llm import eager, host
    from simcluster.llm.spec import BatchSpec
    from simcluster.runner.llm_step import PRESETS

    _, mode, preset, seq, mb, _ = row
    base = eager.fit_modes(MODE_HOST)
    r = regime_predict(preset, mb, mode, "h200", seq=seq, own_host=own_host)
    gpu = regime_predict(preset, mb, mode, "h200", seq=seq, fits=_fits(base, mode, None))["step_ms"]
    fw, how = regime_framework(mode, "h200", own_host)
    par, _, m = layout_of(mode)
    model = model_of({"model": PRESETS[preset]}, seq)
    kernels = model.layers * host.layer_kernels(model, par, BatchSpec(mb * m * par.dp, mb, "bf16"), fw)
    issue_ms = (kernels * fw.host_kernel_s + fw.host_step_s) * 1e3
    grid = {f"{c:g}": regime_predict(preset, mb, mode, "h200", seq=seq, fits=_fits(base, mode, c * 1e-6))["step_ms"] for c in GRID_US}
    return {"step_ms": r["step_ms"], "host_share": r["host_share"], "gpu_path_ms": gpu, "kernels": kernels,
            "host_kernel_us": round(fw.host_kernel_s * 1e6, 3), "host_step_ms": round(fw.host_step_s * 1e3, 3),
            "host_issue_ms": round(issue_ms, 2), "simple_max_ms": round(max(gpu, issue_ms), 2), "grid_step_ms": grid, "host": how}


def rules() -> dict:
    """The registered rule's text (registered.yaml `rules`; the module docstring)."""
    return {"prediction": "regime_predict(preset, micro_batch, mode, 'h200', seq, own_host=runs/): the model's own "
                          "combination with the lease's fit (conditional on the fit measured in the same call)",
            "HOST-BOUND": f"{HOST_ROW}: |mean of process medians / prediction - 1| <= max(process spread, {HOST_TOL}) and "
                          f"median over processes of (median over timed steps of step - slowest rank's host issue) "
                          f"<= {GAP_MS} ms -> HOLDS; else FAILS naming the part",
            "CONTROLS": f"every other row: |mean of process medians / prediction - 1| <= {CONTROL_TOL} -> HOLD; else FAIL",
            "reported": "the shipped fit's prediction and error; the simple max(GPU path, kernels x c + a); the lease "
                        "fit's c and a; each row's slowest-rank issue against kernels x c + a",
            "moved": f"a recomputed gpu_path_ms / shipped step / grid step further than {MOVED_MS} ms from the "
                     "registered one: the read is refused (read at registered_at_commit)"}


def register(path: Path) -> None:
    from simcluster.runner.llm_step import PRESETS

    commit = registering_commit(ROOT)
    rows = []
    for row in ROWS:
        name, mode, preset, seq, mb, procs = row
        p = predict(row)
        rows.append({"name": name, "mode": mode, "preset": preset, "seq": seq, "micro_batch": mb, "processes": procs,
                     "layers": PRESETS[preset]["layers"], "hidden": PRESETS[preset]["hidden"],
                     "predicted": {"gpu_path_ms": p["gpu_path_ms"], "kernels": p["kernels"],
                                   "shipped": {k: p[k] for k in ("step_ms", "host_share", "host_kernel_us", "host_step_ms",
                                                                 "host_issue_ms", "simple_max_ms")},
                                   "grid_step_ms": p["grid_step_ms"]}})
    doc = {"registered_at_commit": commit, "script": "validation/eager_lease_host.py --register",
           "calibration": {"gpu_card": "models/gpu/h200-sxm-interleaved.yaml", "collective_card": "models/collective/h200x2-primitives.yaml",
                           "shipped_host": "calibration/h200x2-llm-host-2026-11-23",
                           "lease_host": "runs/ of this bundle (fsdp-L2/8/32, ddp-L2/32: eager.fit_modes)",
                           "grid": f"the row's mode's host seconds per kernel at {list(GRID_US)} us, host_step_s the shipped fit's"},
           "rules": rules(), "rows": rows}
    write_registration(path, HEADER + yaml.safe_dump(doc, sort_keys=False))
    print(f"registered {', '.join(r['name'] for r in rows)} in {path} (model at {commit[:10]})")


def _by_rank(path: Path, shape: dict, key: str) -> list[list[float]] | None:
    """shape[key]: a list per rank of seconds per timed step (None where the run has no such key); anything else is a
    one-line SimclusterError naming the file and the key."""
    value = shape.get(key)
    if value is None:
        return None
    if not (isinstance(value, list) and value and all(isinstance(x, list) for x in value)
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for x in value for v in x)):
        raise SimclusterError(f"{path}: {key}: not a list per rank of numbers (seconds per timed step): {str(value)[:60]}")
    return value


def process(path: Path) -> dict:
    """One process's run: rank 0's median step (ms) and the median over timed steps of (step - host issue) of the rank
    issuing each step slowest (ms; None where the by-rank lists are missing). A file that is not a run with a timed
    shape, or whose by-rank lists are not lists per rank of numbers of one length, is a SimclusterError naming it."""
    from simcluster.llm.eager import read_document

    try:
        shape = read_document(path)["shapes"][0]
        median = float(shape["median_step_s"]) * 1e3
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise SimclusterError(f"{path}: not an llm-step run with a timed shape ({type(exc).__name__}: {exc})") from None
    issues = _by_rank(path, shape, "host_issue_s_by_rank")
    steps = _by_rank(path, shape, "step_times_s_by_rank")
    gaps, slow = [], []
    if issues and steps:
        if len({len(x) for x in (*issues, *steps)}) != 1 or len(issues) != len(steps):
            raise SimclusterError(f"{path}: host_issue_s_by_rank / step_times_s_by_rank: not one timed-step count for "
                                  f"every rank ({[len(x) for x in issues]} / {[len(x) for x in steps]})")
        for i in range(len(issues[0])):
            r = max(range(len(issues)), key=lambda k: issues[k][i])
            gaps.append((steps[r][i] - issues[r][i]) * 1e3)
            slow.append(issues[r][i] * 1e3)
    return {"median_ms": median, "gap_ms": statistics.median(gaps) if gaps else None,
            "slow_issue_ms": statistics.median(slow) if slow else None}


def read_out(bundle: Path) -> dict:
    from simcluster.heldout.eager_regimes import MODE_HOST
    from simcluster.llm import eager

    reg = read_run_set(bundle)
    runs = Path(bundle) / "runs"
    try:
        lease = eager.fit_modes(runs)
    except ValueError as exc:
        raise SimclusterError(f"{runs}: the lease's host fit: {exc}") from None
    shipped = eager.fit_modes(MODE_HOST)
    out, dropped = [], []
    for i, r in enumerate(reg["rows"]):
        row = next((x for x in ROWS if x[0] == r.get("name")), None)
        if row is None:
            raise SimclusterError(f"{Path(bundle) / 'registered.yaml'}: rows[{i}]: {r.get('name')!r} is not one of {[x[0] for x in ROWS]}")
        now = predict(row)
        check_moved(bundle, i, r, now)
        procs = []
        for path in sorted(runs.glob(f"{row[0]}-r*.json")):
            try:
                procs.append(process(path))
            except SimclusterError as exc:
                dropped.append(str(exc))
        if not procs:
            continue
        meds = [p["median_ms"] for p in procs]
        gaps = [p["gap_ms"] for p in procs if p["gap_ms"] is not None]
        lease_p = predict(row, runs) if row[1] in lease else None
        mean = statistics.mean(meds)
        out.append({"name": row[0], "mode": row[1], "medians": meds, "mean": mean,
                    "spread": max(meds) / min(meds) - 1 if len(meds) > 1 else None,
                    "gap_ms": statistics.median(gaps) if gaps else None,
                    "slow_issue_ms": [p["slow_issue_ms"] for p in procs], "gpu_path_ms": now["gpu_path_ms"],
                    "kernels": now["kernels"], "shipped": now, "lease": lease_p})
    return {"rows": out, "fits": {"lease": lease, "shipped": shipped}, "dropped": dropped,
            "verdict": verdict(out, [x[0] for x in ROWS])}


def check_moved(bundle: Path, i: int, r: dict, now: dict) -> None:
    """The registered numbers recomputed: one SimclusterError line where the model moved (or the file is malformed)."""
    try:
        p = r["predicted"]
        pairs = [("gpu_path_ms", float(p["gpu_path_ms"]), now["gpu_path_ms"]), ("shipped.step_ms", float(p["shipped"]["step_ms"]), now["step_ms"])]
        pairs += [(f"grid_step_ms[{k}]", float(v), now["grid_step_ms"][k]) for k, v in p["grid_step_ms"].items()]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise SimclusterError(f"{Path(bundle) / 'registered.yaml'}: rows[{i}].predicted: {type(exc).__name__}: {exc}") from None
    for key, was, got in pairs:
        if abs(was - got) > MOVED_MS:
            raise SimclusterError(f"{Path(bundle) / 'registered.yaml'}: rows[{i}].predicted.{key}: registered {was} ms, the model now "
                                  f"gives {got} ms: the model moved since registration; read at registered_at_commit")


def verdict(rows: list[dict], names: list[str]) -> dict:
    """The registered rule (module docstring): {'host_bound': line, 'controls': line, 'lease_vs_shipped': line}."""
    got = {r["name"]: r for r in rows}
    missing = [n for n in names if n not in got or got[n]["lease"] is None]
    if missing:
        why = "no lease host fit of its mode (runs/MODE-L<n>.json at two or more layer counts)"
        return {"host_bound": f"INCOMPLETE: {', '.join(missing)} not run or {why}", "controls": "INCOMPLETE", "lease_vs_shipped": "-"}
    h = got[HOST_ROW]
    err = h["mean"] / h["lease"]["step_ms"] - 1
    tol = max(h["spread"] or 0.0, HOST_TOL)
    fails = []
    if abs(err) > tol:
        fails.append(f"step {h['mean']:.1f} ms vs lease-fit prediction {h['lease']['step_ms']:.1f} ({err:+.1%}, tolerance {tol:.1%})")
    if h["gap_ms"] is None:
        fails.append("slowest rank's issue not recorded")
    elif h["gap_ms"] > GAP_MS:
        fails.append(f"slowest rank's issue ends {h['gap_ms']:.1f} ms before its step (> {GAP_MS:g})")
    host_line = ("HOST-BOUND HOLDS" if not fails else "HOST-BOUND FAILS: " + "; ".join(fails)) + (
        f" ({HOST_ROW}: {err:+.1%} vs tolerance {tol:.1%}, gap {h['gap_ms'] if h['gap_ms'] is None else round(h['gap_ms'], 1)} ms)")
    bad = []
    for n in names:
        if n == HOST_ROW:
            continue
        e = got[n]["mean"] / got[n]["lease"]["step_ms"] - 1
        if abs(e) > CONTROL_TOL:
            bad.append(f"{n} {e:+.1%}")
    ctrl = "CONTROLS HOLD" if not bad else f"CONTROLS FAIL: {', '.join(bad)} (tolerance {CONTROL_TOL:.0%})"
    e_ship = h["mean"] / h["shipped"]["step_ms"] - 1
    ship_ok = abs(e_ship) <= tol
    lease_ok = abs(err) <= tol
    what = {(True, False): "the lease fit is what mattered", (True, True): "both fits predict it (the lease fit did not matter)",
            (False, True): "the shipped fit predicts it, the lease's does not", (False, False): "neither fit predicts it"}[(lease_ok, ship_ok)]
    return {"host_bound": host_line, "controls": ctrl,
            "lease_vs_shipped": f"{HOST_ROW}: lease fit {err:+.1%}, shipped fit {e_ship:+.1%} (tolerance {tol:.1%}): {what}"}


def show(result: dict) -> None:
    for key, fits in result["fits"].items():
        print(f"{key} host fit: " + ", ".join(f"{m} {v[0] * 1e6:.2f} us/kernel + {v[1] * 1e3:.2f} ms" for m, v in fits.items()
                                               if m in ("fsdp", "ddp")))
    print(f"{'row':18} {'process medians (ms)':>24} {'spread':>7} {'GPU path':>8} {'kernels':>7} {'lease':>7} {'err':>7} "
          f"{'shipped':>7} {'err':>7} {'max form':>8} {'issue fit':>9} {'slow issue (ms)':>22} {'gap':>5}")
    for r in result["rows"]:
        spread = "-" if r["spread"] is None else f"{r['spread']:.1%}"
        lp = r["lease"] or {}
        lease = f"{lp['step_ms']:7.1f} {r['mean'] / lp['step_ms'] - 1:+7.1%}" if lp else f"{'-':>7} {'-':>7}"
        slow = " / ".join("-" if x is None else f"{x:.1f}" for x in r["slow_issue_ms"])
        gap = "-" if r["gap_ms"] is None else f"{r['gap_ms']:.1f}"
        print(f"{r['name']:18} {' / '.join(f'{x:.1f}' for x in r['medians']):>24} {spread:>7} {r['gpu_path_ms']:8.1f} "
              f"{r['kernels']:7d} {lease} {r['shipped']['step_ms']:7.1f} {r['mean'] / r['shipped']['step_ms'] - 1:+7.1%} "
              f"{lp.get('simple_max_ms', float('nan')):8.1f} {lp.get('host_issue_ms', float('nan')):9.1f} {slow:>22} {gap:>5}")
    for line in result["dropped"]:
        print(f"dropped: {line}")
    for key in ("host_bound", "controls", "lease_vs_shipped"):
        print(result["verdict"][key])


def main(argv: list[str]) -> int:
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
