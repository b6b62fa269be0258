"""Read calibration/h200x1-attention-noncausal-2026-11-29's run against its registration (issue 44, session 38, fa2adopt).

The predictions and the rule are registered.yaml's (written by device_run.py --predict before the run), read as
registered. Per shape: flash forward and backward measured vs the model's non-causal flash time (the schedule form with
full tiles, 'form') and the ratio card it replaced ('ratio'); torch's default backend vs the card's cuDNN curve
('card', diagnostic). Then the controls and the rule's verdict. Error: predicted / measured - 1 (+ = predicted slower).
    python studies/fa2_noncausal_read.py [noncausal.json [registered.yaml]]
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
BUNDLE = ROOT / "calibration" / "h200x1-attention-noncausal-2026-11-29"
PASSES = ("fwd", "bwd")
MODELS = ("form", "ratio")
SHAPE = ("head_dim", "batch", "heads", "kv_heads", "seq_q", "seq_kv")


class ReadError(Exception):
    """A one-line reason the read cannot go on (printed without a traceback)."""


def _key(row: dict) -> tuple:
    return tuple(int(row[k]) for k in SHAPE) + (bool(row["causal"]),)


def _label(key: tuple) -> str:
    d, b, h, kv, sq, skv, causal = key
    return f"d {d} b {b} h {h}/{kv} s {sq}/{skv}{' causal' if causal else ''}"


def registered(path: Path) -> tuple[dict, dict]:
    """(rule, {shape: row}) from registered.yaml."""
    try:
        doc = yaml.safe_load(path.read_text())
        rule = doc["rule"]
        float(rule["control_tolerance"])
        rows = {}
        for r in doc["shapes"]:
            need = [f"{m}_{p}_s" for m in MODELS + ("card",) for p in PASSES] + ["role", "group"]
            need += ["before_fwd_s", "before_bwd_s"] if r.get("role") == "control" else []
            missing = [k for k in need if k not in r]
            if missing:
                raise ReadError(f"{path}: shape {_label(_key(r))} lacks {missing[0]}")
            rows[_key(r)] = r
    except OSError as exc:
        raise ReadError(f"{path}: {exc.strerror}") from None
    except (yaml.YAMLError, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ReadError(f"{path}: not the probe's registration ({type(exc).__name__}: {exc})") from None
    if not any(r["role"] == "probe" for r in rows.values()):
        raise ReadError(f"{path}: no probe shape registered")
    return rule, rows


def measured(path: Path) -> dict[tuple, dict]:
    """{(role, backend, shape): {fwd_s, bwd_s}} from the run's document."""
    try:
        out = {}
        for r in json.loads(path.read_text())["records"]:
            key = (r["role"], r["backend"], _key(r))
            if "error" in r:
                raise ReadError(f"{path}: {r['backend']} {_label(key[2])} ({r['role']}) failed: {r['error'][:80]}")
            f, b = float(r["fwd_s"]), float(r["bwd_s"])
            if not (f > 0 and b > 0):
                raise ReadError(f"{path}: {r['backend']} {_label(key[2])} ({r['role']}): a time not > 0 (fwd {f}, bwd {b})")
            out[key] = {"fwd_s": f, "bwd_s": b}
    except OSError as exc:
        raise ReadError(f"{path}: {exc.strerror}") from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ReadError(f"{path}: not the probe's document ({type(exc).__name__}: {exc})") from None
    if not out:
        raise ReadError(f"{path}: no record")
    return out


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
    tol, off = float(rule["control_tolerance"]), []
    for k, r in rows.items():
        if r["role"] != "control":
            continue
        for role in ("control-start", "control-end"):
            m = meas.get((role, "flash", k))
            if m is None:
                off.append(f"{_label(k)} {role}: not measured")
                continue
            off += [f"{_label(k)} {role} {p}: {m[f'{p}_s'] / r[f'before_{p}_s'] - 1:+.1%} off the wave probe's time"
                    for p in PASSES if abs(m[f"{p}_s"] / r[f"before_{p}_s"] - 1) > tol]
    return off


def verdict(meas: dict, rule: dict, rows: dict, errs: list[dict]) -> str:
    off = controls(meas, rows, rule)
    if off:
        return f"VOID (the lease: {off[0]}{'; ...' if len(off) > 1 else ''}): repeat the run once"
    if mean_abs(errs, "form") <= mean_abs(errs, "ratio"):
        return "KEEP: non-causal flash calls stay on the schedule form"
    return "REVERT: non-causal flash calls go back to the ratio card"


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else BUNDLE / "noncausal.json"
    reg = Path(argv[1]) if len(argv) > 1 else BUNDLE / "registered.yaml"
    try:
        (rule, rows), meas = registered(reg), measured(path)
        errs = errors(meas, rows)
    except ReadError as exc:
        print(f"fa2_noncausal_read: {exc}", file=sys.stderr)
        return 1
    print("non-causal flash: predicted / measured - 1 (the form, the ratio card); default vs the card's curve")
    print(f"{'shape':34} {'group':8} | {'pass':4} {'meas ms':>8} {'form':>7} {'ratio':>7} | {'card':>7}")
    for e in errs:
        card = f"{e['card']:+7.1%}" if e["card"] is not None else "    n/a"
        print(f"{_label(e['shape']):34} {e['group']:8} | {e['pass']:4} {e['measured_s'] * 1e3:8.3f} {e['form']:+7.1%} "
              f"{e['ratio']:+7.1%} | {card}")
    print("\nmean |error|              " + "  ".join(f"{m:>6}" for m in MODELS))
    groups = [("all probe passes", errs)] + [(f"pass {p}", [e for e in errs if e["pass"] == p]) for p in PASSES]
    groups += [(f"group {g}", [e for e in errs if e["group"] == g]) for g in sorted({e["group"] for e in errs})]
    for name, sub in groups:
        print(f"  {name:22} " + "  ".join(f"{mean_abs(sub, m):6.1%}" for m in MODELS) + f"   ({len(sub)} passes)")
    off = controls(meas, rows, rule)
    print(f"\ncontrols (flash vs the wave probe, tolerance {float(rule['control_tolerance']):.0%}): "
          + ("all within" if not off else "; ".join(off)))
    print("rule (registered): the form stays for non-causal calls if its mean |error| <= the ratio card's")
    print(f"verdict: {verdict(meas, rule, rows, errs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
