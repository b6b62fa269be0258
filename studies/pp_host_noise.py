"""Eager 2-stage pipelines at 2 GPUs when the host issues the step (PP+host-bound): the host fit's lease, process noise,
or a missing host term? (issue 44, session 44, engineer pphost; a diagnostic, not a test, no model input; nothing is
fitted on the processes.)

Every 2-rank, 2-stage torch.distributed.pipelining llm-step process (1F1B, GPipe) over NVLink under calibration/h200x2-*
whose shape today's model prices host-bound (llm/host_bound.py), put through studies/tp_lease_noise.numbers (the unit:
the log of a process's median step; the lease: its device call, tp_lease_noise.call_of). Printed:
  1. every process: shape, schedule, call, median (ms), and three models' errors (+ = predicted slower): today's
     (heldout/eager_regimes.regime_predict, the product's host fits: the single mode's 21.0 us per kernel), the
     candidate registered in calibration/h200x2-pphost-2026-11-30 (the single host term the mean of four leases' own
     fits: validation/pphost.py SINGLE_LEASES), and the call's own single fit where its call ran hidden-128 single-mode
     host runs (runs/host/single-L<n>.json; `-` where none);
  2. the floor as TP's and FSDP's (process sd, lease term, a model exactly on each shape's mean scored on one process);
  3. each model's lease biases and mean |error| beside the floor on the same processes;
  4. each lease's single-mode host cost per kernel (the leases validation/pphost.py pools).
    python studies/pp_host_noise.py
"""

from __future__ import annotations

import importlib.util
import statistics
import sys
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.heldout.eager_regimes import regime_predict  # noqa: E402
from simcluster.heldout.eager_runs import regime_mode_of  # noqa: E402
from simcluster.llm.host_bound import is_host_bound  # noqa: E402

CAL = ROOT / "calibration"
REGIME = "llm | PyTorch eager | PP+host-bound | bf16"


def _load(relative: str):
    spec = importlib.util.spec_from_file_location(Path(relative).stem, ROOT / relative)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@cache
def scripts():
    """(studies/tp_lease_noise.py, studies/fsdp_lease_noise.py, validation/pphost.py) as modules."""
    return _load("studies/tp_lease_noise.py"), _load("studies/fsdp_lease_noise.py"), _load("validation/pphost.py")


@cache
def candidate_fits() -> dict:
    from simcluster.heldout.eager import MODE_HOST
    from simcluster.llm import eager

    pooled = scripts()[2].pooled_single()
    return eager.fit_modes(MODE_HOST) | {"single": (pooled["per_kernel_s"], pooled["per_step_s"], 0)}


@cache
def predict(preset: str, seq: int, mb: int, mode: str, m: int, own: Path | None = None, candidate: bool = False) -> tuple[float, float]:
    """(step ms, host share) of one 2-stage pipeline: today's model, with `own` host runs, or the candidate's fits."""
    p = regime_predict(preset, mb, mode, "h200", own, m, seq, fits=candidate_fits() if candidate else None)
    return p["step_ms"], p["host_share"] or 0.0


def own_host(path: Path) -> Path | None:
    """The call's hidden-128 single-mode host runs (two or more layer counts) beside the process, or None."""
    for folder in (path.parent / "host", path.parent, path.parent.parent / "host"):
        if len(list(folder.glob("single-L*.json"))) >= 2:
            return folder
    return None


def processes() -> list[dict]:
    tp, fsdp, _ = scripts()
    rows = []
    for path, doc in fsdp.documents("pp"):
        if (doc.get("pipeline") or {}).get("stages", 2) != 2:
            continue
        mode, preset = regime_mode_of(doc), doc["model"]["preset"]
        if mode not in ("pp-1f1b", "pp-gpipe"):
            continue
        for s in doc.get("shapes", []):
            if s.get("status") != "ok" or not s.get("median_step_s"):
                continue
            m = int(s.get("microbatches") or doc["pipeline"].get("microbatches", 4))
            pred, share = predict(preset, s["seq"], s["micro_batch"], mode, m)
            if not is_host_bound(share):
                continue
            ms = s["median_step_s"] * 1e3
            host = own_host(path)
            row = {"path": str(path.relative_to(CAL)), "call": tp.call_of(path), "preset": preset, "mode": mode,
                   "key": (preset, s["seq"], s["micro_batch"], mode, m), "ms": ms, "pred": pred, "err": pred / ms - 1,
                   "share": share, "cand": predict(preset, s["seq"], s["micro_batch"], mode, m, candidate=True)[0] / ms - 1,
                   "own": None if host is None else predict(preset, s["seq"], s["micro_batch"], mode, m, host)[0] / ms - 1}
            rows.append(row)
    return rows


def main() -> int:
    tp, fsdp, pphost = scripts()
    rows = processes()
    if not rows:
        sys.exit("no 2-stage host-bound pipeline process under calibration/h200x2-*")
    print("1. every 2-stage pipeline process of a shape today's model prices host-bound (ms; errors: + = predicted slower)")
    print(f"  {'shape':24} {'measured':>8} {'today':>7} {'cand.':>7} {'own':>7}  share  call")
    for r in sorted(rows, key=lambda r: (r["key"], r["call"])):
        p, s, mb, mode, m = r["key"]
        own = "-" if r["own"] is None else f"{r['own']:+.1%}"
        print(f"  {p:5} {s:5}:{mb} x{m} {mode:9} {r['ms']:8.1f} {r['err']:+7.1%} {r['cand']:+7.1%} {own:>7}  "
              f"{r['share']:.2f}  {r['path']}")
    from simcluster.trust.table import load_table

    tables = tuple(sorted({r.source for r in load_table().regimes[REGIME].rows if r.scale == 2}))
    for name, key in (("today's model", "err"), ("the candidate (pooled single host term)", "cand"),
                      ("each call's own single host fit", "own")):
        pick = [r | {"err": r[key]} for r in rows if r[key] is not None]
        calls = {k: {r["call"] for r in pick if r["key"] == k} for k in {r["key"] for r in pick}}
        if max(map(len, calls.values())) < 2:   # the floor needs a shape on two leases: only the errors
            print(f"\n2-3. {name}: {len(pick)} processes; no shape on two leases (no floor)")
        else:
            fsdp.show(f"2-3. {name}: {len(pick)} processes", tp.numbers(pick, tables))
        print(f"  mean |err| over all {len(pick)}: {statistics.mean(abs(r['err']) for r in pick):.1%}, mean err "
              f"{statistics.mean(r['err'] for r in pick):+.1%}")
    print("\n4. the single mode's host cost per kernel on each 2 x H200 lease with hidden-128 single runs (validation/pphost.py)")
    pooled = pphost.pooled_single()
    for lease in pooled["leases"]:
        print(f"  {lease['folder']:66} {lease['per_kernel_s'] * 1e6:5.1f} us  {lease['per_step_s'] * 1e3:+.2f} ms per step")
    print(f"  mean {pooled['per_kernel_s'] * 1e6:.1f} us, sd of the log {pooled['lease_sd_log']:.3f} "
          f"(the product's, the first: {pooled['leases'][0]['per_kernel_s'] * 1e6:.1f} us)")
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    sys.exit(main())
