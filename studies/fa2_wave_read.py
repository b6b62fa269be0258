"""Read calibration/h200x1-attention-wave-2026-11-29's run against its registration (issue 44, session 38, fa2wave).

The predictions and the rule are registered.yaml's (written by device_run.py --predict before the run), read as
registered, not recomputed. Per shape: flash forward and backward measured vs today's 'fa2' price, the tile-and-wave
form (studies/fa2_wave.py) and its no-wave diagnostic ('fluid'); torch's default backend vs the card's cuDNN curve.
Then the controls against their backends-bundle times and the rule's verdict. Error convention throughout: predicted /
measured - 1 (+ = the prediction is slower than the GPU).
    python studies/fa2_wave_read.py [wave.json [registered.yaml]]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
BUNDLE = ROOT / "calibration" / "h200x1-attention-wave-2026-11-29"
PASSES = ("fwd", "bwd")
MODELS = ("today", "form", "fluid")
SHAPE = ("head_dim", "batch", "heads", "kv_heads", "seq")


class ReadError(Exception):
    """A one-line reason the read cannot go on (printed without a traceback)."""


def _key(row: dict) -> tuple:
    return tuple(int(row[k]) for k in SHAPE)


def _label(key: tuple) -> str:
    d, b, h, kv, s = key
    return f"d {d} b {b} h {h}/{kv} s {s}"


RULE_KEYS = ("max_ratio", "max_mean_abs", "full_waves_min", "control_tolerance")


def registered(path: Path, models=MODELS, extra=("ctas_fwd", "slots_fwd"), rule_keys=RULE_KEYS, key=None,
               label=None) -> tuple[dict, dict]:
    """(rule, {shape: row}) from registered.yaml; each row needs every model's and the card's time a pass, `extra`,
    and a control its before_* times (studies/fa2_noncausal_read.py reads its probe with its own models and keys)."""
    key, label = key or _key, label or _label
    try:
        doc = yaml.safe_load(path.read_text())
        rule = doc["rule"]
        for k in rule_keys:
            float(rule[k])
        rows = {}
        for r in doc["shapes"]:
            need = [f"{m}_{p}_s" for m in tuple(models) + ("card",) for p in PASSES] + list(extra) + ["role"]
            need += ["before_fwd_s", "before_bwd_s"] if r.get("role") == "control" else []
            missing = [k for k in need if k not in r]
            if missing:
                raise ReadError(f"{path}: shape {label(key(r))} lacks {missing[0]}")
            rows[key(r)] = r
    except OSError as exc:
        raise ReadError(f"{path}: {exc.strerror}") from None
    except (yaml.YAMLError, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ReadError(f"{path}: not the probe's registration ({type(exc).__name__}: {exc})") from None
    if not any(r["role"] == "probe" for r in rows.values()):
        raise ReadError(f"{path}: no probe shape registered")
    return rule, rows


def measured(path: Path, key=None, label=None, tolerate: tuple = ("default",)) -> dict[tuple, dict | None]:
    """{(role, backend, shape): {fwd_s, bwd_s}} from the run's document; role control-start / control-end / probe. A
    failed record of a backend in `tolerate` (here torch's default: the rules only report it) is None: its card column
    reads n/a; a failed record of another backend (flash) stops the read."""
    key, label = key or _key, label or _label
    try:
        out = {}
        for r in json.loads(path.read_text())["records"]:
            k = (r["role"], r["backend"], key(r))
            if "error" in r and r["backend"] in tolerate:
                out[k] = None
                continue
            if "error" in r:
                raise ReadError(f"{path}: {r['backend']} {label(k[2])} ({r['role']}) failed: {r['error'][:80]}")
            f, b = float(r["fwd_s"]), float(r["bwd_s"])
            if not (f > 0 and b > 0):
                raise ReadError(f"{path}: {r['backend']} {label(k[2])} ({r['role']}): a time not > 0 (fwd {f}, bwd {b})")
            out[k] = {"fwd_s": f, "bwd_s": b}
    except OSError as exc:
        raise ReadError(f"{path}: {exc.strerror}") from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ReadError(f"{path}: not the probe's document ({type(exc).__name__}: {exc})") from None
    if not out:
        raise ReadError(f"{path}: no record")
    return out


def read_all(prog: str, argv: list[str], default_doc: Path, default_reg: Path, registered_fn, measured_fn, errors_fn):
    """(rule, rows, meas, errs) from argv's [document [registration]], or None after the one-line error on stderr."""
    path = Path(argv[0]) if argv else default_doc
    reg = Path(argv[1]) if len(argv) > 1 else default_reg
    try:
        (rule, rows), meas = registered_fn(reg), measured_fn(path)
        return rule, rows, meas, errors_fn(meas, rows)
    except ReadError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return None


def card_cell(e: dict) -> str:
    """The default backend vs the card's curve, or n/a where it was not measured or its record failed."""
    return f"{e['card']:+7.1%}" if e["card"] is not None else "    n/a"


def print_summary(meas: dict, errs: list[dict], models: tuple, groups: list, head: str, off: list[str], rule: dict,
                  against: str, rule_line: str, verdict_line: str, label=None) -> None:
    """The failed default records (if any), mean |error| per group (`head`: its title, padded to the columns), the controls, the rule and its verdict."""
    failed = sorted(k for k, v in meas.items() if v is None)
    if failed:
        print(f"torch's default backend failed on {len(failed)} record(s) (card n/a; the rule reads flash only), "
              f"first {(label or _label)(failed[0][2])} ({failed[0][0]})")
    print("\n" + head + "  ".join(f"{m:>6}" for m in models))
    for name, sub in groups:
        print(f"  {name:22} " + "  ".join(f"{mean_abs(sub, m):6.1%}" for m in models) + f"   ({len(sub)} passes)")
    print(f"\ncontrols (flash vs {against}, tolerance {float(rule['control_tolerance']):.0%}): "
          + ("all within" if not off else "; ".join(off)))
    print(rule_line)
    print(f"verdict: {verdict_line}")


def errors(meas: dict, rows: dict) -> list[dict]:
    """One dict per probe shape and pass: measured flash time and each model's error; refuses a shape either side lacks."""
    probe = {k for k, r in rows.items() if r["role"] == "probe"}
    got = {k for (role, be, k) in meas if role == "probe" and be == "flash"}
    if got - probe:
        raise ReadError(f"{len(got - probe)} measured probe shape(s) not registered, first {_label(sorted(got - probe)[0])}")
    if probe - got:
        raise ReadError(f"{len(probe - got)} registered probe shape(s) without a flash record, first {_label(sorted(probe - got)[0])}")
    out = []
    for k in sorted(probe):
        r, m = rows[k], meas[("probe", "flash", k)]
        for p in PASSES:
            e = {"shape": k, "pass": p, "measured_s": m[f"{p}_s"], "waves_fwd": r["ctas_fwd"] / r["slots_fwd"]}
            for model in MODELS:
                e[model] = r[f"{model}_{p}_s"] / m[f"{p}_s"] - 1
            dflt = meas.get(("probe", "default", k))
            e["card"] = r[f"card_{p}_s"] / dflt[f"{p}_s"] - 1 if dflt else None
            out.append(e)
    return out


def mean_abs(errs: list[dict], model: str) -> float:
    return sum(abs(e[model]) for e in errs) / len(errs) if errs else float("nan")


def meets(errs: list[dict], rule: dict) -> bool:
    form, today = mean_abs(errs, "form"), mean_abs(errs, "today")
    return bool(errs) and form <= float(rule["max_ratio"]) * today and form <= float(rule["max_mean_abs"])


def controls(meas: dict, rows: dict, rule: dict, label=None, against: str = "its backends-bundle time",
             backend: str = "flash") -> list[str]:
    """A line per control run and pass of `backend` that is off its before_* time (`against`) by more than the tolerance."""
    label = label or _label
    tol, off = float(rule["control_tolerance"]), []
    for k, r in rows.items():
        if r["role"] != "control":
            continue
        for role in ("control-start", "control-end"):
            m = meas.get((role, backend, k))
            if m is None:
                off.append(f"{label(k)} {role}: not measured")
                continue
            for p in PASSES:
                dev = m[f"{p}_s"] / r[f"before_{p}_s"] - 1
                if abs(dev) > tol:
                    off.append(f"{label(k)} {role} {p}: {dev:+.1%} off {against}")
    return off


def verdict(meas: dict, rule: dict, rows: dict, errs: list[dict]) -> str:
    off = controls(meas, rows, rule)
    if off:
        return f"VOID (the lease: {off[0]}{'; ...' if len(off) > 1 else ''}): repeat the run once"
    if meets(errs, rule):
        return "ADOPT: the form meets the rule over every probe shape"
    full = [e for e in errs if e["waves_fwd"] >= float(rule["full_waves_min"])]
    if meets(full, rule):
        return (f"ADOPT FOR >= {rule['full_waves_min']} FORWARD WAVES ONLY ({len(full) // 2} shapes; today's price "
                "below): the rule fails over every shape but holds there")
    return "NOT ADOPTED: nothing changes"


def main(argv: list[str]) -> int:
    got = read_all("fa2_wave_read", argv, BUNDLE / "wave.json", BUNDLE / "registered.yaml", registered, measured, errors)
    if got is None:
        return 1
    rule, rows, meas, errs = got
    print("flash: predicted / measured - 1 (today's 'fa2', the form, its no-wave 'fluid'); default vs the card's curve")
    print(f"{'shape':28} {'waves':>5} | {'pass':4} {'meas ms':>8} {'today':>7} {'form':>7} {'fluid':>7} | {'card':>7}")
    for e in errs:
        print(f"{_label(e['shape']):28} {e['waves_fwd']:5.1f} | {e['pass']:4} {e['measured_s'] * 1e3:8.3f} "
              f"{e['today']:+7.1%} {e['form']:+7.1%} {e['fluid']:+7.1%} | {card_cell(e)}")
    full = float(rule["full_waves_min"])
    groups = [("all probe passes", errs)] + [(f"pass {p}", [e for e in errs if e["pass"] == p]) for p in PASSES]
    groups += [(f"head dim {d}", [e for e in errs if e["shape"][0] == d]) for d in sorted({e["shape"][0] for e in errs})]
    groups += [(f">= {rule['full_waves_min']} fwd waves", [e for e in errs if e["waves_fwd"] >= full]),
               (f"<  {rule['full_waves_min']} fwd waves", [e for e in errs if e["waves_fwd"] < full])]
    print_summary(meas, errs, MODELS, groups, f"{'mean |error|':24}", controls(meas, rows, rule), rule, "the backends bundle",
                  f"rule (registered): form mean |error| <= {rule['max_ratio']} x today's and <= "
                  f"{float(rule['max_mean_abs']):.0%}", verdict(meas, rule, rows, errs))
    print(f"the model now (attention_kernels 'fa2' on the H200 card, llm/flash_schedule.py): max |model / registered "
          f"form - 1| over the registered shapes' passes {model_vs_registered(rows):.1e}")
    return 0


def model_vs_registered(rows: dict) -> float:
    """The adopted model's 'fa2' time against the form's registered time, the largest relative difference (the
    registration rounds to 6 significant figures)."""
    sys.path.insert(0, str(ROOT))
    from simcluster.hardware.gpu import load_gpu
    from simcluster.llm import attention_kernels

    fa2 = attention_kernels.for_kernel(load_gpu(attention_kernels.FORM_REFERENCE)[0], "fa2")
    return max(abs(fa2.attention_time_s(b, h, kv, s, s, d, True, p == "bwd") / r[f"form_{p}_s"] - 1)
               for (d, b, h, kv, s), r in rows.items() for p in PASSES)


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check(words=2, usage="[DOCUMENT [REGISTERED_YAML]]")
    sys.exit(main(sys.argv[1:]))
