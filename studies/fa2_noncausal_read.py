"""Read calibration/h200x1-attention-noncausal-2026-11-29's run against its registration (issue 44, session 38, fa2adopt).

The predictions and the rule are registered.yaml's (written by device_run.py --predict before the run), read as
registered. Per shape: flash forward and backward measured vs the model's non-causal flash time (the schedule form with
full tiles, 'form') and the ratio card it replaced ('ratio'); torch's default backend vs the card's cuDNN curve
('card', diagnostic). Then the controls and the rule's verdict. Error: predicted / measured - 1 (+ = predicted slower).
    python studies/fa2_noncausal_read.py [noncausal.json [registered.yaml]]
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "studies"))
import fa2_wave_read as wr  # noqa: E402  (its registration / document readers; ReadError)

ReadError = wr.ReadError
BUNDLE = ROOT / "calibration" / "h200x1-attention-noncausal-2026-11-29"
PASSES = ("fwd", "bwd")
MODELS = ("form", "ratio")
SHAPE = ("head_dim", "batch", "heads", "kv_heads", "seq_q", "seq_kv")


def _key(row: dict) -> tuple:
    return tuple(int(row[k]) for k in SHAPE) + (bool(row["causal"]),)


def _label(key: tuple) -> str:
    d, b, h, kv, sq, skv, causal = key
    return f"d {d} b {b} h {h}/{kv} s {sq}/{skv}{' causal' if causal else ''}"


def registered(path: Path) -> tuple[dict, dict]:
    """(rule, {shape: row}) from registered.yaml (the wave probe's reader, this probe's models and keys)."""
    return wr.registered(path, MODELS, ("group",), ("control_tolerance",), _key, _label)


def measured(path: Path) -> dict[tuple, dict]:
    """{(role, backend, shape): {fwd_s, bwd_s}} from the run's document."""
    return wr.measured(path, _key, _label)


def errors(meas: dict, rows: dict) -> list[dict]:
    """One dict per probe shape and pass; refuses a shape either side lacks."""
    probe = {k for k, r in rows.items() if r["role"] == "probe"}
    got = {k for (role, be, k) in meas if role == "probe" and be == "flash"}
    if got ^ probe:
        extra = sorted(got ^ probe)[0]
        raise ReadError(f"{len(got ^ probe)} probe shape(s) registered or measured, not both: first {_label(extra)}")
    out = []
    for k in sorted(probe):
        r, m = rows[k], meas[("probe", "flash", k)]
        for p in PASSES:
            e = {"shape": k, "group": r["group"], "pass": p, "measured_s": m[f"{p}_s"]}
            e.update({model: r[f"{model}_{p}_s"] / m[f"{p}_s"] - 1 for model in MODELS})
            dflt = meas.get(("probe", "default", k))
            e["card"] = r[f"card_{p}_s"] / dflt[f"{p}_s"] - 1 if dflt else None
            out.append(e)
    return out


def mean_abs(errs: list[dict], model: str) -> float:
    return statistics.mean(abs(e[model]) for e in errs) if errs else float("nan")


def controls(meas: dict, rows: dict, rule: dict) -> list[str]:
    return wr.controls(meas, rows, rule, _label, "the wave probe's time")


def verdict(meas: dict, rule: dict, rows: dict, errs: list[dict]) -> str:
    off = controls(meas, rows, rule)
    if off:
        return f"VOID (the lease: {off[0]}{'; ...' if len(off) > 1 else ''}): repeat the run once"
    if mean_abs(errs, "form") <= mean_abs(errs, "ratio"):
        return "KEEP: non-causal flash calls stay on the schedule form"
    return "REVERT: non-causal flash calls go back to the ratio card"


def main(argv: list[str]) -> int:
    got = wr.read_all("fa2_noncausal_read", argv, BUNDLE / "noncausal.json", BUNDLE / "registered.yaml", registered,
                      measured, errors)
    if got is None:
        return 1
    rule, rows, meas, errs = got
    print("non-causal flash: predicted / measured - 1 (the form, the ratio card); default vs the card's curve")
    print(f"{'shape':34} {'group':8} | {'pass':4} {'meas ms':>8} {'form':>7} {'ratio':>7} | {'card':>7}")
    for e in errs:
        print(f"{_label(e['shape']):34} {e['group']:8} | {e['pass']:4} {e['measured_s'] * 1e3:8.3f} {e['form']:+7.1%} "
              f"{e['ratio']:+7.1%} | {wr.card_cell(e)}")
    groups = [("all probe passes", errs)] + [(f"pass {p}", [e for e in errs if e["pass"] == p]) for p in PASSES]
    groups += [(f"group {g}", [e for e in errs if e["group"] == g]) for g in sorted({e["group"] for e in errs})]
    wr.print_summary(meas, errs, MODELS, groups, f"{'mean |error|':26}", controls(meas, rows, rule), rule, "the wave probe",
                     "rule (registered): the form stays for non-causal calls if its mean |error| <= the ratio card's",
                     verdict(meas, rule, rows, errs), _label)
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check(words=2, usage="[DOCUMENT [REGISTERED_YAML]]")
    sys.exit(main(sys.argv[1:]))
