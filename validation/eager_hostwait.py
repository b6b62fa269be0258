"""Issue 44, session 42 (hostwait): which host time leaves out the blocking waits? A registered 2 x H200 set
(calibration/h200x2-eager-hostwait-2026-11-30).

    python validation/eager_hostwait.py --register calibration/h200x2-eager-hostwait-2026-11-30/registered.yaml   # before
    python validation/eager_hostwait.py [calibration/BUNDLE]                                                      # after

The runner's host issue (`host_issue_s`: wall time until the step's last call returns) includes waits where the GPU is the
bottleneck (session 41: FSDP2 0.5b 5120:4 "issues" 1600 kernels in 118-124 ms against the model's 79.0), so the model's
host term (kernels x c + a, llm/host.py) is never measured there. The candidates (simcluster/runner/host_cpu.py):
  a-auto      host_cpu_s: the issuing threads' CPU time (main + pt_autograd_*), CUDA's default scheduling (spin)
  a-blocking  the same with `--sched blocking` (CU_CTX_SCHED_BLOCKING_SYNC: synchronising calls sleep)
  b           the profiled step's issue window less its synchronising calls and each launch's time beyond 50 us
              (profile.host.host_s, rank 0, default scheduling)
  c           the launch loop up to the first synchronising call, its pace extrapolated to the step's launches
              (to_first_sync_s x launches / launches_to_first_sync, rank 0, default scheduling; none where the
              profiled window has no synchronising call: "no sync in window")
Each row runs once under `--sched auto` and once under `--sched blocking` (runs/ROW-auto.json, runs/ROW-blocking.json):
the same decoder, 3 warm-up, 10 timed and 1 profiled step.

RULE (fixed at registration, registered.yaml `rules`):
  HB   a candidate holds on a HOST-BOUND row iff its host time / the issue wall > HB_RATIO (a, every rank: medians over
       the timed steps; b, c: over the profiled step's window)
  GB   a candidate holds on a GPU-BOUND row iff |its host time (a: the slowest rank's median) / the model's host term - 1|
       <= GB_TOL, the model's host term = kernels x c + a of the row's mode at the shipped fit (registered)
  KEEP the runner keeps the first candidate of CANDIDATES that holds HB on every host-bound row and GB on every GPU-bound
       row (a-blocking also: every row's median step within STEP_TOL of the same row under auto); none: NONE
  reported: each GPU-bound row's candidates / the same mode's tiny row's issue (same kernel count, this lease)
  moved: a recomputed registered host term further than 0.05 ms from the registered one: the read is refused
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import yaml

from simcluster.errors import SimclusterError
from simcluster.heldout.registration import read_run_set, registering_commit, set_main, write_registration

ROOT = Path(__file__).resolve().parents[1]
BUNDLE = ROOT / "calibration" / "h200x2-eager-hostwait-2026-11-30"
TINY = dict(layers=16, hidden=128, ffn=352, heads=4, kv_heads=2, vocab=512, tied=False)   # the host fit's decoder
# (name, mode, preset or None for TINY, seq, micro-batch, regime)
ROWS = (
    ("fsdp-0.5b-5120x4", "fsdp", "0.5b", 5120, 4, "gpu"),    # session 41: issue 118-124 ms vs model 79.0
    ("fsdp-tiny-L16", "fsdp", None, 128, 1, "host"),
    ("single-0.5b-2048x8", "single", "0.5b", 2048, 8, "gpu"),
    ("single-tiny-L16", "single", None, 128, 1, "host"),
    ("ddp-1b-4096x3", "ddp", "1b", 4096, 3, "gpu"),
)
SCHEDS = ("auto", "blocking")
CANDIDATES = ("a-auto", "a-blocking", "b", "c")
HB_RATIO, GB_TOL, STEP_TOL, MOVED_MS = 0.9, 0.30, 0.03, 0.05
HEADER = "# Predictions registered before the runs (issue 44, session 42, hostwait); never edited after them.\n"


def host_term(row: tuple) -> dict:
    """The model's host term of the row: kernels a step (layers x host.layer_kernels of the mode's framework) x the
    mode's host seconds per kernel + its seconds per step, at the shipped fit (eager_regimes.regime_framework)."""
    from simcluster.heldout.eager import model_of
    from simcluster.heldout.eager_regimes import layout_of, regime_framework
    from simcluster.llm import host
    from simcluster.llm.spec import BatchSpec
    from simcluster.runner.llm_step import PRESETS

    _, mode, preset, seq, mb, _ = row
    fw, how = regime_framework(mode if mode != "single" else "single", "h200")
    par, _, m = layout_of(mode)
    model = model_of({"model": PRESETS[preset] if preset else TINY}, seq)
    kernels = model.layers * host.layer_kernels(model, par, BatchSpec(mb * m * par.dp, mb, "bf16"), fw)
    return {"kernels": kernels, "host_kernel_us": round(fw.host_kernel_s * 1e6, 3), "host_step_ms": round(fw.host_step_s * 1e3, 3),
            "host_term_ms": round((kernels * fw.host_kernel_s + fw.host_step_s) * 1e3, 2), "host": how}


def rules() -> dict:
    return {"HB": f"host-bound row: candidate host time / issue wall > {HB_RATIO} (a: every rank, medians over timed "
                  "steps; b, c: the profiled step's window, rank 0)",
            "GB": f"GPU-bound row: |candidate host time (a: slowest rank's median) / registered host_term_ms - 1| <= {GB_TOL}",
            "KEEP": f"first of {list(CANDIDATES)} holding HB on every host-bound row and GB on every GPU-bound row (a-blocking "
                    f"also: every row's median step within {STEP_TOL:.0%} of its auto run); none: NONE",
            "candidates": {"a-auto": "host_cpu_s_by_rank, --sched auto", "a-blocking": "host_cpu_s_by_rank, --sched blocking",
                           "b": "profile.host.host_s (rank 0, --sched auto)",
                           "c": "profile.host.to_first_sync_s x launches / launches_to_first_sync (rank 0, --sched auto)"},
            "reported": "each GPU-bound row's candidates / the same mode's tiny row's issue under auto (same kernels, this lease)",
            "moved": f"a recomputed host_term_ms further than {MOVED_MS} ms from the registered one: the read is refused"}


def register(path: Path) -> None:
    commit = registering_commit(ROOT)
    rows = []
    for row in ROWS:
        t = host_term(row)
        rows.append({"name": row[0], "mode": row[1], "preset": row[2] or "tiny-L16 (hidden 128)", "seq": row[3],
                     "micro_batch": row[4], "regime": row[5], "predicted": {k: t[k] for k in t if k != "host"}})
    doc = {"registered_at_commit": commit, "script": "validation/eager_hostwait.py --register",
           "calibration": {"shipped_host": "calibration/h200x2-llm-host-2026-11-23 (eager.fit_modes: the row's mode)"},
           "rules": rules(), "rows": rows}
    write_registration(path, HEADER + yaml.safe_dump(doc, sort_keys=False))
    print(f"registered {', '.join(r['name'] for r in rows)} in {path} (model at {commit[:10]})")


def _median_lists(path: Path, shape: dict, key: str) -> list[float]:
    """Each rank's median of shape[key] (a list per rank of numbers); a one-line SimclusterError where it is not."""
    value = shape.get(key)
    if not (isinstance(value, list) and value and all(isinstance(x, list) and x for x in value)
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for x in value for v in x)):
        raise SimclusterError(f"{path}: {key}: not a non-empty list per rank of numbers (seconds per timed step): {str(value)[:60]}")
    return [statistics.median(x) for x in value]


def measure(path: Path) -> dict:
    """One run: per rank the median issue wall, host CPU, step (ms); rank 0's profiled host numbers (ms)."""
    from simcluster.llm.eager import read_document

    try:
        doc = read_document(path)
        shape = doc["shapes"][0]
        step = float(shape["median_step_s"]) * 1e3
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise SimclusterError(f"{path}: not an llm-step run with a timed shape ({type(exc).__name__}: {exc})") from None
    if path.stem.endswith("-blocking") and not (doc.get("cuda_sched") or {}).get("set"):
        raise SimclusterError(f"{path}: cuda_sched: the blocking flag was not set ({str(doc.get('cuda_sched'))[:80]})")
    issue = [x * 1e3 for x in _median_lists(path, shape, "host_issue_s_by_rank")]
    cpu = [x * 1e3 for x in _median_lists(path, shape, "host_cpu_s_by_rank")]
    if len(issue) != len(cpu):
        raise SimclusterError(f"{path}: host_issue_s_by_rank / host_cpu_s_by_rank: {len(issue)} / {len(cpu)} ranks")
    prof = (shape.get("profile") or {}).get("host") or {}
    b = c = window = c_note = None
    try:
        if prof:
            window, b = prof["window_s"] * 1e3, prof["host_s"] * 1e3
            if prof.get("sync_calls") == 0 or prof["to_first_sync_s"] is None:   # the window itself: nothing to extrapolate
                c_note = "no sync in window"
            elif prof["launches_to_first_sync"] >= 1:
                c = prof["to_first_sync_s"] * 1e3 * prof["launches"] / prof["launches_to_first_sync"]
    except (KeyError, TypeError) as exc:
        raise SimclusterError(f"{path}: shapes[0].profile.host: {type(exc).__name__}: {exc}") from None
    return {"step_ms": step, "issue_ms": issue, "cpu_ms": cpu, "window_ms": window, "b_ms": b, "c_ms": c, "c_note": c_note,
            "threads": shape.get("thread_cpu_s_by_rank"), "process_ms": shape.get("process_cpu_s_by_rank")}


def candidate_value(cand: str, runs: dict) -> tuple[float | None, float | None, list[float]]:
    """(host time for GB, ms; its wall for HB, ms; the per-rank HB ratios) of a candidate on one row's runs."""
    sched = "blocking" if cand == "a-blocking" else "auto"
    m = runs.get(sched)
    if m is None:
        return None, None, []
    if cand.startswith("a"):
        return max(m["cpu_ms"]), max(m["issue_ms"]), [c / i for c, i in zip(m["cpu_ms"], m["issue_ms"], strict=True)]
    v = m["b_ms"] if cand == "b" else m["c_ms"]
    if v is None or not m["window_ms"]:
        return None, None, []
    return v, m["window_ms"], [v / m["window_ms"]]


def verdict(rows: list[dict]) -> dict:
    """Per candidate: held / failed parts; the kept candidate (the registered KEEP rule)."""
    out, kept = {}, None
    for cand in CANDIDATES:
        fails = []
        for r in rows:
            value, _, ratios = candidate_value(cand, r["runs"])
            if value is None:
                note = (r["runs"].get("auto") or {}).get("c_note") if cand == "c" else None
                fails.append(f"{r['name']}: {note or 'not measured'}")
            elif r["regime"] == "host" and min(ratios) <= HB_RATIO:
                fails.append(f"{r['name']}: HB {min(ratios):.2f} <= {HB_RATIO}")
            elif r["regime"] == "gpu" and abs(value / r["host_term_ms"] - 1) > GB_TOL:
                fails.append(f"{r['name']}: GB {value:.1f} ms vs {r['host_term_ms']:.1f} ({value / r['host_term_ms'] - 1:+.0%})")
            if cand == "a-blocking" and "auto" in r["runs"] and "blocking" in r["runs"]:
                d = r["runs"]["blocking"]["step_ms"] / r["runs"]["auto"]["step_ms"] - 1
                if abs(d) > STEP_TOL:
                    fails.append(f"{r['name']}: step under blocking {d:+.1%} vs auto")
        out[cand] = "HOLDS" if not fails else "FAILS: " + "; ".join(fails)
        if not fails and kept is None:
            kept = cand
    return {"candidates": out, "keep": kept or "NONE"}


def read_out(bundle: Path) -> dict:
    reg = read_run_set(bundle)
    runs_dir = Path(bundle) / "runs"
    rows, dropped = [], []
    for i, r in enumerate(reg["rows"]):
        row = next((x for x in ROWS if x[0] == (r or {}).get("name")), None)
        if row is None:
            raise SimclusterError(f"{Path(bundle) / 'registered.yaml'}: rows[{i}]: {r!r:.60} is not one of {[x[0] for x in ROWS]}")
        now = host_term(row)
        try:
            was = float(r["predicted"]["host_term_ms"])
        except (KeyError, TypeError, ValueError) as exc:
            raise SimclusterError(f"{Path(bundle) / 'registered.yaml'}: rows[{i}].predicted.host_term_ms: {type(exc).__name__}: {exc}") from None
        if abs(was - now["host_term_ms"]) > MOVED_MS:
            raise SimclusterError(f"{Path(bundle) / 'registered.yaml'}: rows[{i}].predicted.host_term_ms: registered {was} ms, the "
                                  f"model now gives {now['host_term_ms']} ms: the model moved; read at registered_at_commit")
        runs = {}
        for sched in SCHEDS:
            path = runs_dir / f"{row[0]}-{sched}.json"
            if path.exists():
                try:
                    runs[sched] = measure(path)
                except SimclusterError as exc:
                    dropped.append(str(exc))
        rows.append({"name": row[0], "regime": row[5], "host_term_ms": was, "kernels": now["kernels"], "runs": runs})
    return {"rows": rows, "dropped": dropped, "verdict": verdict(rows), "lease": lease_conditioned(rows)}


def lease_conditioned(rows: list[dict]) -> list[str]:
    """Reported, not judged: each GPU-bound row's candidates against the host-bound tiny row of its mode on this lease
    (the same kernel count: its slowest rank's median issue under auto is this lease's host term of those kernels)."""
    ref = {}
    for r in rows:
        if r["regime"] == "host" and "auto" in r["runs"]:
            ref[(r["name"].split("-")[0], r["kernels"])] = max(r["runs"]["auto"]["issue_ms"])
    out = []
    for r in rows:
        base = ref.get((r["name"].split("-")[0], r["kernels"]))
        if r["regime"] != "gpu" or base is None:
            continue
        got = [(c, candidate_value(c, r["runs"])[0]) for c in CANDIDATES]
        out.append(f"{r['name']}: lease host term {base:.1f} ms (its tiny row); " + ", ".join(
            f"{c} {v / base:.2f}x" for c, v in got if v is not None))
    return out


def show(result: dict) -> None:
    print(f"{'row':20} {'sched':8} {'regime':6} {'model':>7} {'step':>7} {'issue (ms, by rank)':>20} {'host CPU':>18} "
          f"{'window':>7} {'b':>7} {'c':>7}")
    f = lambda v: "-" if v is None else f"{v:.1f}"   # noqa: E731
    for r in result["rows"]:
        for sched, m in r["runs"].items():
            print(f"{r['name']:20} {sched:8} {r['regime']:6} {r['host_term_ms']:7.1f} {m['step_ms']:7.1f} "
                  f"{' / '.join(f(x) for x in m['issue_ms']):>20} {' / '.join(f(x) for x in m['cpu_ms']):>18} "
                  f"{f(m['window_ms']):>7} {f(m['b_ms']):>7} {'no sync' if m.get('c_note') else f(m['c_ms']):>7}")
    for line in result["dropped"]:
        print(f"dropped: {line}")
    for cand, line in result["verdict"]["candidates"].items():
        print(f"{cand}: {line}")
    for line in result["lease"]:
        print(f"reported: {line}")
    print(f"KEEP: {result['verdict']['keep']}")


def main(argv: list[str]) -> int:
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
