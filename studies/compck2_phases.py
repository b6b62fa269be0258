"""Session 48 compck2 (issue 44): compck's two readings of its 0.5b miss -- (a) the lease's host, (b) the compiled step
-- looked at on the development rows, and the term that showed up, framework.fsdp_free_phases (off):
  1. every compiled FSDP2 + full-checkpointing process run so far (compilefsdp, compileac, repeats47, compck: 18; the
     fsdp variant): measured step, the slowest rank's measured host issue per step (host_issue_median_s_by_rank: the
     seconds the host took to issue a step, an upper bound on its host work), the model's host issue per step (the
     forward's and backward's issue seconds and the fixed per-step term), and the step priced shipped, with compck's
     candidate (whole_model_graph), the candidate at each process's own measured host issue (every host fit scaled by
     measured / modelled issue), and the candidate with fsdp_free_phases. DEVELOPMENT: these rows chose the term.
  2. compck's two shapes priced with the candidate under each 2 x H200 lease's own single and fsdp host fits (the
     leases with both, heldout/eager_compilefsdp.fits(own_host), each folder's leases.yaml unread) against compck's
     measured process means (compck_means: its runs, as 1. reads them), and the fsdp-only leases' own fsdp cost per
     kernel against the product's: how far a lease's host speed moves the 0.5b shape.
  3. every held-out eager llm-step row the error-band table takes (trust/build.eager_held_out_rows) that moves with
     fsdp_free_phases on, by regime: the switch reaches eager FSDP2 steps too.

    PYTHONPATH=. python studies/compck2_phases.py > studies/compck2_phases-session49.txt
studies/compck2_phases-session48.txt is session 48's print, kept as the record the model pages cite. Session 49's differs
in 2.'s errors by up to 0.1 point (compck's means read from its runs, 98.735 / 168.134 ms, where session 48 had typed
98.7 / 168.1) and in 3., which prices today's model (since mendB48 an eager FSDP2 row does not move with the switch);
re-printed by mendB49 (cold review B49 item 5) at main 4c3b6152, after wire49 added x2set49's and mem49's rows: 3.
reads 415 rows, 13 move, and the switch moves the compiled FSDP2 rows without checkpointing 12.9 -> 7.2% (x2set49's
rule CN read the free-off column +12.6% on its shape).
"""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SETS = ("compilefsdp", "compileac", "repeats47", "compck")
FULL_LEASES = ("h200x2-llm-host-2026-11-23", "h200x2-llm-host-2026-11-27", "h200x2-eager-hostbound-noise-2026-11-29/runs/host")
FSDP_LEASES = ("h200x2-llm-eager-twohost-2026-11-29/host", "h200x2-eager-leasehost-2026-11-30/runs",
               "h200x2-eager-fsdphost-2026-11-30/runs/host", "h200x2-eager-fsdphost-lease2-2026-11-30/runs/host",
               "h200x2-eager-fsdphost-lease3-2026-11-30/runs/host")
COMPCK_SHAPES = (("1b", 3872, 2), ("0.5b", 3232, 3))


def _price(preset: str, seq: int, mb: int, fits: dict, **flags) -> tuple[float, float]:
    """(step ms, the model's host issue ms per step) of the fsdp variant with `flags` on the framework."""
    import simcluster.llm.predict as predict_mod
    from simcluster.heldout.eager_compilefsdp import before_adopt48
    from simcluster.heldout.eager_regimes import regime_predict
    from simcluster.llm import eager

    issue, build = [], predict_mod.build_work

    def spy(*a, **k):   # the first build is the printed step's (the second, host_bound's slower host)
        w = build(*a, **k)
        st, fw = w.stages[0], a[6]
        issue.append(st.forward[0].issue_s + st.backward[0].issue_s + fw.host_step_s)
        return w

    predict_mod.build_work = spy
    try:
        with eager.torch_framework_as(lambda fw: replace(before_adopt48(fw), **flags)):   # the model of session 48's start
            step = regime_predict(preset, mb, "fsdp+ckpt", "h200", seq=seq, fits=fits, compiled=True)["step_ms"]
    finally:
        predict_mod.build_work = build
    return step, issue[0] * 1e3


def _scaled(fits: dict, k: float) -> dict:
    return {m: (f[0] * k, f[1] * k, f[2]) for m, f in fits.items()}


def processes() -> list[tuple[str, dict]]:
    out = []
    for name in SETS:
        for path in sorted((ROOT / "calibration" / f"h200x2-{name}-2026-11-30" / "runs").glob("*fsdp*.json")):
            text = path.read_text()
            doc = json.loads(text[text.index("{"):])
            if doc.get("mode") == "fsdp" and doc.get("compile") and doc["shapes"][0]["status"] == "ok":
                out.append((f"{name} {path.stem}", doc))
    return out


def compck_means() -> dict[tuple[str, int, int], float]:
    """compck's measured step (ms) per shape in COMPCK_SHAPES: the mean over its processes of each one's median step
    (calibration/h200x2-compck-2026-11-30/runs, read by processes())."""
    steps: dict[tuple[str, int, int], list[float]] = {}
    for name, doc in processes():
        s = doc["shapes"][0]
        if name.startswith("compck "):
            steps.setdefault((doc["model"]["preset"], s["seq"], s["micro_batch"]), []).append(s["median_step_s"] * 1e3)
    missing = [k for k in COMPCK_SHAPES if k not in steps]
    if missing:
        sys.exit(f"compck2_phases.py: calibration/h200x2-compck-2026-11-30/runs: no fsdp process of {missing[0]}")
    return {k: statistics.mean(steps[k]) for k in COMPCK_SHAPES}


def development() -> None:
    from simcluster.heldout.eager_compilefsdp import fits

    print("1. compiled FSDP2 + full checkpointing processes (DEVELOPMENT); error = predicted / measured - 1")
    print(f"{'process':36} {'meas':>6} {'issue':>6} {'model':>6}  {'shipped':>15} {'candidate':>15} "
          f"{'cand@issue':>15} {'cand+free':>15}")
    cols: dict[str, list[float]] = {"shipped": [], "candidate": [], "cand@issue": [], "cand+free": []}
    for name, doc in processes():
        s = doc["shapes"][0]
        preset, seq, mb, meas = doc["model"]["preset"], s["seq"], s["micro_batch"], s["median_step_s"] * 1e3
        issue = max(s["host_issue_median_s_by_rank"]) * 1e3
        cand, model_issue = _price(preset, seq, mb, fits(), whole_model_graph=True)
        got = {"shipped": _price(preset, seq, mb, fits())[0], "candidate": cand,
               "cand@issue": _price(preset, seq, mb, _scaled(fits(), issue / model_issue), whole_model_graph=True)[0],
               "cand+free": _price(preset, seq, mb, fits(), whole_model_graph=True, fsdp_free_phases=True)[0]}
        for k, v in got.items():
            cols[k].append(v / meas - 1)
        print(f"{name:36} {meas:6.1f} {issue:6.1f} {model_issue:6.1f}  "
              + " ".join(f"{v:6.1f} ({v / meas - 1:+6.1%})" for v in got.values()))
    for k, errs in cols.items():
        print(f"  {k:11} mean |error| {statistics.mean(abs(e) for e in errs):5.1%}  mean {statistics.mean(errs):+5.1%}  "
              f"within 8%: {sum(abs(e) <= 0.08 for e in errs)} of {len(errs)}")


def leases() -> None:
    from simcluster.heldout.eager_compilefsdp import fits
    from simcluster.llm import eager

    print("\n2. compck's shapes, the candidate under each lease's own host fits (measured: compck's process means)")
    measured = compck_means()
    rows = [("product (pooled leases)", fits())]
    with eager.leases_unread():
        rows += [(lease, fits(ROOT / "calibration" / lease)) for lease in FULL_LEASES]
        own_fsdp = [(lease, eager.fit_modes(ROOT / "calibration" / lease)["fsdp"][0]) for lease in FSDP_LEASES]
    for name, f in rows:
        line = "  ".join(f"{p} {v:6.1f} ({v / measured[(p, s, mb)] - 1:+.1%})"
                         for p, s, mb in COMPCK_SHAPES for v in [_price(p, s, mb, f, whole_model_graph=True)[0]])
        print(f"  {name:52} single {f['single'][0] * 1e6:5.1f} us  fsdp {f['fsdp'][0] * 1e6:5.1f} us  {line}")
    for name, c in own_fsdp:
        print(f"  {name:52} fsdp {c * 1e6:5.1f} us (x{c / fits()['fsdp'][0]:.2f} the product's; no single runs)")


def eager_rows() -> None:
    from simcluster.llm import eager
    from simcluster.trust.build import eager_held_out_rows, eager_residuals

    print("\n3. held-out eager rows that move with fsdp_free_phases on, by regime (mean |error| off -> on)")
    from simcluster.heldout.eager_compilefsdp import before_adopt48

    with eager.torch_framework_as(before_adopt48):   # the model of session 48's start (adopt48 switched these on later)
        off = eager_held_out_rows()
    with eager.torch_framework_as(lambda fw: replace(before_adopt48(fw), fsdp_free_phases=True)):
        on = eager_held_out_rows()
    def today(r: dict) -> float:   # the sets' readers without a `today_s` give today's model as predicted_s
        return r.get("today_s", r["predicted_s"])

    moved: dict[str, list[tuple[float, float]]] = {}
    for a, b, r in zip(off, on, eager_residuals(off), strict=True):
        if today(a) != today(b):
            moved.setdefault(r.regime, []).append((today(a) / a["measured_s"] - 1, today(b) / b["measured_s"] - 1))
    print(f"  {len(off)} rows; {sum(len(v) for v in moved.values())} move (the model now: `today_s`, else predicted_s)")
    for regime, pairs in sorted(moved.items()):
        print(f"  {regime:52} {len(pairs):3} rows  {statistics.mean(abs(a) for a, _ in pairs):5.1%} -> "
              f"{statistics.mean(abs(b) for _, b in pairs):5.1%}  (mean {statistics.mean(a for a, _ in pairs):+.1%} -> "
              f"{statistics.mean(b for _, b in pairs):+.1%})")


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    development()
    leases()
    eager_rows()
