"""Read calibration/h200x1-attention-cudnn-2026-11-30's run against its registration (issue 44, session 39, cudnnwave).

The predictions and the rule are registered.yaml's (written by device_run.py --predict before the run), read as
registered, not recomputed. Per shape: torch's default backend (cuDNN) forward and backward measured vs the card's
curve ('card', today's price) and the schedule form ('form', studies/cudnn_wave.py); flash beside it vs the model's
'fa2' time (diagnostic). Then the controls against their prior times and the rule's verdict. Error: predicted /
measured - 1 (+ = the prediction is slower than the GPU). A default record that failed or is missing is listed and
left out (below the rule's min_complete share of the probe shapes, or a control not measured, as in a run cut short:
INCOMPLETE, no verdict; checked before the controls' drift, VOID).
    python studies/cudnn_wave_read.py [cudnn.json [registered.yaml]]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "studies"))
import fa2_wave_read as wr  # noqa: E402  (its registration reader and ReadError)

ReadError = wr.ReadError
BUNDLE = ROOT / "calibration" / "h200x1-attention-cudnn-2026-11-30"
PASSES = ("fwd", "bwd")
MODELS = ("form", "card")
SHAPE = ("head_dim", "batch", "heads", "kv_heads", "seq_q", "seq_kv")
RULE_KEYS = ("max_ratio", "max_mean_abs", "full_waves_min", "control_tolerance", "min_complete")


def _key(row: dict) -> tuple:
    return tuple(int(row[k]) for k in SHAPE) + (bool(row["causal"]),)


def _label(key: tuple) -> str:
    d, b, h, kv, sq, skv, causal = key
    s = f"{sq}" if sq == skv else f"{sq}/{skv}"
    return f"d {d} b {b} h {h}/{kv} s {s}{'' if causal else ' nc'}"


def registered(path: Path) -> tuple[dict, dict]:
    """(rule, {shape: row}); each row needs form_* and card_* a pass, units_fwd, slots_fwd, group; a control before_*."""
    return wr.registered(path, ("form",), ("units_fwd", "slots_fwd", "group"), RULE_KEYS, _key, _label)


def measured(path: Path) -> dict[tuple, dict | None]:
    """{(role, backend, shape): {fwd_s, bwd_s}, or None for a failed record of either backend} from the run's document."""
    return wr.measured(path, _key, _label, tolerate=("default", "flash"))


def errors(meas: dict, rows: dict) -> list[dict]:
    """One dict per measured probe shape and pass (default backend); a measured shape not registered is refused."""
    probe = {k for k, r in rows.items() if r["role"] == "probe"}
    extra = {k for (role, _, k) in meas if role == "probe"} - probe
    if extra:
        raise ReadError(f"{len(extra)} measured probe shape(s) not registered, first {_label(sorted(extra)[0])}")
    out = []
    for k in sorted(probe):
        r, m = rows[k], meas.get(("probe", "default", k))
        if m is None:
            continue
        fl = meas.get(("probe", "flash", k))
        for p in PASSES:
            e = {"shape": k, "group": r["group"], "pass": p, "measured_s": m[f"{p}_s"],
                 "waves_fwd": r["units_fwd"] / r["slots_fwd"]}
            e.update({model: r[f"{model}_{p}_s"] / m[f"{p}_s"] - 1 for model in MODELS})
            fa2 = r.get(f"fa2_{p}_s")
            e["fa2"] = fa2 / fl[f"{p}_s"] - 1 if fl and fa2 else None
            out.append(e)
    return out


def missing(meas: dict, rows: dict) -> list[tuple]:
    """The probe shapes without a usable default record (failed or absent)."""
    return sorted(k for k, r in rows.items() if r["role"] == "probe" and not meas.get(("probe", "default", k)))


def mean_abs(errs: list[dict], model: str) -> float:
    vals = [abs(e[model]) for e in errs if e[model] is not None]
    return sum(vals) / len(vals) if vals else float("nan")


def meets(errs: list[dict], rule: dict) -> bool:
    form, card = mean_abs(errs, "form"), mean_abs(errs, "card")
    return bool(errs) and form <= float(rule["max_ratio"]) * card and form <= float(rule["max_mean_abs"])


def controls(meas: dict, rows: dict, rule: dict) -> list[str]:
    """A line per control run and default pass off its prior time by more than the tolerance."""
    return wr.controls(meas, rows, rule, _label, "its prior time", backend="default")


def unmeasured_controls(meas: dict, rows: dict) -> list[str]:
    """'LABEL ROLE' of each control run (start, end) without a default record: a run cut short lacks its end control."""
    return [f"{_label(k)} {role}" for k, r in rows.items() if r["role"] == "control"
            for role in ("control-start", "control-end") if meas.get((role, "default", k)) is None]


def verdict(meas: dict, rule: dict, rows: dict, errs: list[dict]) -> str:
    """Completeness first (below min_complete of the probe shapes, or a control not measured: INCOMPLETE), then the
    lease (a measured control off its prior time: VOID), then the rule."""
    n_probe = sum(r["role"] == "probe" for r in rows.values())
    gone = missing(meas, rows)
    if n_probe - len(gone) < float(rule["min_complete"]) * n_probe:
        return f"INCOMPLETE ({n_probe - len(gone)} of {n_probe} probe shapes measured): no verdict, repeat the run once"
    unmeasured = unmeasured_controls(meas, rows)
    if unmeasured:
        return (f"INCOMPLETE (control not measured: {unmeasured[0]}{'; ...' if len(unmeasured) > 1 else ''}): no "
                "verdict, repeat the run once")
    off = controls(meas, rows, rule)
    if off:
        return f"VOID (the lease: {off[0]}{'; ...' if len(off) > 1 else ''}): repeat the run once"
    over = f" (over the {n_probe - len(gone)} of {n_probe} probe shapes measured)" if gone else ""
    if meets(errs, rule):
        return f"ADOPT: the form meets the rule over every probe shape{over}"
    full = [e for e in errs if e["waves_fwd"] >= float(rule["full_waves_min"])]
    if meets(full, rule):
        return (f"ADOPT FOR >= {rule['full_waves_min']} FORWARD WAVES ONLY ({len(full) // 2} shapes; the card's curve "
                f"below): the rule fails over every shape but holds there{over}")
    return f"NOT ADOPTED: nothing changes{over}"


def _cell(x) -> str:
    return f"{x:+7.1%}" if x is not None else "    n/a"


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else BUNDLE / "cudnn.json"
    reg = Path(argv[1]) if len(argv) > 1 else BUNDLE / "registered.yaml"
    try:
        (rule, rows), meas = registered(reg), measured(path)
        errs = errors(meas, rows)
    except ReadError as exc:
        print(f"cudnn_wave_read: {exc}", file=sys.stderr)
        return 1
    print("default (cuDNN): predicted / measured - 1 (the form, the card's curve); flash vs the model's 'fa2' (diagnostic)")
    print(f"{'shape':30} {'group':9} {'waves':>5} | {'pass':4} {'meas ms':>8} {'form':>7} {'card':>7} | {'fa2':>7}")
    for e in errs:
        print(f"{_label(e['shape']):30} {e['group']:9} {e['waves_fwd']:5.1f} | {e['pass']:4} {e['measured_s'] * 1e3:8.3f} "
              f"{e['form']:+7.1%} {e['card']:+7.1%} | {_cell(e['fa2'])}")
    gone = missing(meas, rows)
    if gone:
        print(f"\n{len(gone)} probe shape(s) without a default record (failed or missing), first {_label(gone[0])}")
    full = float(rule["full_waves_min"])
    groups = [("all probe passes", errs)] + [(f"pass {p}", [e for e in errs if e["pass"] == p]) for p in PASSES]
    groups += [(f"head dim {d}", [e for e in errs if e["shape"][0] == d]) for d in sorted({e["shape"][0] for e in errs})]
    groups += [(f"group {g}", [e for e in errs if e["group"] == g]) for g in sorted({e["group"] for e in errs})]
    groups += [(f">= {rule['full_waves_min']} fwd waves", [e for e in errs if e["waves_fwd"] >= full]),
               (f"<  {rule['full_waves_min']} fwd waves", [e for e in errs if e["waves_fwd"] < full])]
    print(f"\n{'mean |error|':26}" + "  ".join(f"{m:>6}" for m in (*MODELS, "fa2")))
    for name, sub in groups:
        print(f"  {name:24}" + "  ".join(f"{mean_abs(sub, m):6.1%}" for m in (*MODELS, "fa2")) + f"   ({len(sub)} passes)")
    off = controls(meas, rows, rule)
    print(f"\ncontrols (default vs its prior time, tolerance {float(rule['control_tolerance']):.0%}): "
          + ("all within" if not off else "; ".join(off)))
    print(f"rule (registered): form mean |error| <= {rule['max_ratio']} x the card curve's and <= "
          f"{float(rule['max_mean_abs']):.0%}")
    print(f"verdict: {verdict(meas, rule, rows, errs)}")
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check(words=2, usage="[DOCUMENT [REGISTERED_YAML]]")
    sys.exit(main(sys.argv[1:]))
