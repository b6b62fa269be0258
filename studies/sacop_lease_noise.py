"""SAC by op at 1 GPU: its noise floor computed as TP's (issue 44, session 43, engineer eagerlab; a diagnostic, not a
test, no model input).

studies/sacop_spread.py read the regime's launches with its own floor (a process term and a lease term net of it,
10.0%); studies/tp_lease_noise.py computes TP 2's floor another way. This study puts every one-GPU selective-by-op
launch (`--ac-mode op`: the sac, compile2, ophost2, lease3 sets, the sac set's profiled diagnostic re-run on another
lease, eager-today's two op processes and the registered sacop set, calibration/h200x1-eager-sacop-2026-11-30) through
tp_lease_noise.numbers: the unit is the natural log of each launch's median step, the lease is its device call
(bundle, or bundle/profiled-diagnostic), today's model is heldout/eager_registered.flag_hosts_predict (FLAG_HOSTS' host
fits, the one model all these launches' registrations used since compile2); it prints
  1. every launch: shape, call, median, today's model and its error, the model's host share (host-bound: llm/host_bound.py);
  2. the pooled process sd (one shape's launches inside one call), the lease term beyond it, the floor (a model exactly
     on each shape's mean, scored on one launch: empirical and normal) against issue 44's 8%;
  3. the model's lease biases, their mean (each call once) and its standard error, and the model beside the floor on
     the same launches (those whose shape ran more than once);
  4. the same on the regime's own launches (the model's prediction not host-bound: single+sac-op) and on all op launches
     (single+sac-op+host-bound's 0.8b 2048:4 included);
  5. the regime's rows in the error-band table (simcluster/trust/error_bands.json): rows, sets, today's mean |error|.
trust/noise.py recorded the regime's numbers (part 4) until session 48 (SACOP1_CHECKED);
tests/test_trust_noise.py recomputes the floor (under the target: no verdict).
    python studies/sacop_lease_noise.py
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.heldout import eager_registered as er  # noqa: E402
from simcluster.llm.host_bound import is_host_bound  # noqa: E402

CAL = ROOT / "calibration"
REGIME = "llm | PyTorch eager | single+sac-op | bf16"
TABLE_SETS = ("h200x1-llm-sac-2026-11-29", "h200x1-llm-compile2-2026-11-29", "h200x1-llm-ophost2-2026-11-29",
              "h200x1-llm-lease3-2026-11-29", "h200x2-eager-today-2026-11-30")   # the regime's band rows' sets


def study(name: str):
    """A study script beside this one (studies/NAME.py), loaded as a module."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, ROOT / "studies" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def tp_study():
    return study("tp_lease_noise")


# sacop_spread's launches and the registered sacop set's
GLOBS = (*study("sacop_spread").LAUNCH_GLOBS, "h200x1-eager-sacop-2026-11-30/runs/op-*.json")


def call_of(path: Path) -> str:
    rel = path.relative_to(CAL).parts
    return rel[0] + ("/" + rel[1] if rel[1] == "profiled-diagnostic" else "")


def launches() -> list[dict]:
    """One row per op launch (its one timed shape), in tp_lease_noise.numbers' form, with today's model."""
    rows = []
    for pattern in GLOBS:
        for path in sorted(CAL.glob(pattern)):
            doc = json.loads(path.read_text())
            if doc.get("ac_mode") != "op" or doc.get("world_size", 1) != 1:
                continue
            s = doc["shapes"][0]
            if s.get("status") != "ok" or not s.get("step_times_s"):
                continue
            preset = doc["model"]["preset"]
            p = er.flag_hosts_predict(preset, None, s["seq"], s["micro_batch"], False, ("op", 1))
            ms = s["median_step_s"] * 1e3
            rows.append({"path": str(path.relative_to(CAL)), "call": call_of(path), "preset": preset,
                         "key": (preset, s["seq"], s["micro_batch"]), "seq": s["seq"], "mb": s["micro_batch"], "ms": ms,
                         "steps": s["step_times_s"], "pred": p.step_time_s * 1e3, "err": p.step_time_s * 1e3 / ms - 1,
                         "host_share": p.host_share, "host_bound": is_host_bound(p.host_share)})
    return rows


def regime_numbers(rows: list[dict] | None = None) -> dict:
    """tp_lease_noise.numbers over the regime's own launches (the model's prediction not host-bound)."""
    rows = launches() if rows is None else rows
    return tp_study().numbers([r for r in rows if not r["host_bound"]], TABLE_SETS)


def table_rows() -> tuple[int, int, float]:
    """The regime's rows in the error-band table at 1 GPU: rows, sets, today's mean |error| (%) (a registered row's
    error at today's prediction: today_over_registered / rho - 1)."""
    from simcluster.trust.table import load_table

    rows = [r for r in load_table().regimes[REGIME].rows if r.scale == 1]
    errs = [r.today_error for r in rows]
    return len(rows), len({r.source for r in rows}), 100 * statistics.mean(map(abs, errs))


def show(name: str, n: dict) -> None:
    total = math.sqrt(n["process_sd"] ** 2 + n["lease_sd"] ** 2)
    p = n["preset"]
    print(f"\n{name}")
    print(f"  process sd {n['process_sd']:.3f} ({n['process_dof']} dof); across leases {n['across_sd']:.3f} "
          f"({n['across_dof']} dof, {n['shared_shapes']} shapes), process noise alone {n['noise_alone_sd']:.3f}, lease "
          f"term {n['lease_sd']:.3f}")
    print(f"  floor: a model exactly on each shape's mean scores {n['floor_empirical']:.1%} on one launch "
          f"({n['floor_processes']} launches); normal with sd {total:.3f}: {n['floor_normal']:.1%}; target 8%")
    for c, b in sorted(p["biases"].items()):
        print(f"    {c:46} bias {math.expm1(b):+6.1%}")
    print(f"  mean lease bias (each call once) {math.expm1(p['bias_mean']):+.1%} (log {p['bias_mean']:+.3f}, se "
          f"{p['bias_se']:.3f}, {p['bias_mean'] / p['bias_se']:+.1f} se; {p['calls']} calls, {p['rows']} launches)")
    print(f"  on the same launches (shape ran more than once: {p['same_rows']} of {p['rows']}): model mean |err| "
          f"{p['model_same']:.1%}, floor {p['floor_same']:.1%}")


def main() -> int:
    rows = launches()
    print("1. every op launch (ms; err: today's model (FLAG_HOSTS), + = predicted slower; hb: predicted host-bound)")
    for r in sorted(rows, key=lambda r: (r["key"], r["call"])):
        print(f"  {r['preset']:5} {r['seq']:5}x{r['mb']:<3} {r['ms']:7.1f} {r['pred']:7.1f} {r['err']:+6.1%} "
              f"share {r['host_share']:.2f}{' hb' if r['host_bound'] else '   '}  {r['path']}")
    tp = tp_study()
    show("2-3. the regime's own launches (single+sac-op: the model's prediction not host-bound)", regime_numbers(rows))
    show("4. every op launch (single+sac-op+host-bound's 0.8b 2048:4 included)", tp.numbers(rows, TABLE_SETS))
    n, sets, mean = table_rows()
    print(f"\n5. the error-band table's {REGIME} rows at 1 GPU: {n} rows from {sets} sets, today's mean |error| {mean:.1f}%")
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    sys.exit(main())
