"""Read calibration/h200x1-attention-cudnnd128-2026-11-30's run against its registration (issue 44, session 40, cudnnd128).

The predictions and the rule are registered.yaml's (written by device_run.py --predict before the run), read as
registered, not recomputed. Per shape and harness (sustained: the form's development timer; burst-ones: the cudnnstep
set's SDPA check; burst-rand: the same with a random dO), forward and backward measured against the kept form ('form',
the product) and the candidate ('boost'), with the median SM clock nvidia-smi saw. Then the registered verdicts, in
order: completeness (INCOMPLETE), the controls (VOID), the adoption rule (KEEP / ADOPT boost), the head-size-128
backward question (HOLDS / SLOW / UNDECIDED) and the harness explanation of the cudnnstep reading (EXPLAINED / NOT).
Error: predicted / measured - 1 (+ = the prediction is slower than the GPU). Shares studies/fa2_wave_read.py's
registration reader and control check and studies/cudnn_wave_read.py's mean |error|.
    python studies/cudnn_d128_read.py [cudnnd128.json [registered.yaml]]
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "studies"))
import cudnn_wave_read as cwr  # noqa: E402  (mean |error|)
import fa2_wave_read as wr  # noqa: E402  (the registration reader, the control check, ReadError)

ReadError = wr.ReadError
BUNDLE = ROOT / "calibration" / "h200x1-attention-cudnnd128-2026-11-30"
PASSES = ("fwd", "bwd")
MODELS = ("form", "boost")
HARNESSES = ("sustained", "burst-ones", "burst-rand")
SHAPE = ("head_dim", "batch", "heads", "kv_heads", "seq")
RULE_KEYS = ("max_ratio", "max_mean_abs", "short_slack", "slow_min", "holds_max", "harness_min", "control_tolerance",
             "min_complete")


def _key(row: dict) -> tuple:
    return tuple(int(row[k]) for k in SHAPE)


def _label(key: tuple) -> str:
    d, b, h, kv, s = key
    return f"d {d} b {b} h {h}/{kv} s {s}"


def registered(path: Path) -> tuple[dict, dict]:
    """(rule, {shape: row}); each row needs form_*, boost_* and card_* a pass, group; a control before_*."""
    return wr.registered(path, MODELS, ("group",), RULE_KEYS, _key, _label)


def measured(path: Path) -> dict[tuple, dict | None]:
    """{(role, harness, shape): {fwd_s, bwd_s, MHz}}, None for a failed record, from the run's document (fa2_wave_read's
    reader, the harness in the key)."""
    got = wr.measured(path, lambda r: (r["harness"],) + _key(r), lambda k: f"{k[0]} {_label(k[1:])}")
    odd = sorted({k[2][0] for k in got} - set(HARNESSES))
    if odd:
        raise ReadError(f"{path}: unknown harness {odd[0]!r}")
    clocks = {(r["role"], r["harness"], _key(r)): (r.get("clock") or {}).get("sm_MHz")
              for r in json.loads(path.read_text())["records"]}
    return {(role, k[0], k[1:]): v and v | {"MHz": clocks[(role, k[0], k[1:])]} for (role, _, k), v in got.items()}


def errors(meas: dict, rows: dict) -> list[dict]:
    """One dict per measured (probe or stepcall) shape, harness and pass; a measured shape not registered is refused."""
    extra = {k for (role, _, k) in meas if role in ("probe", "stepcall") and k not in rows}
    if extra:
        raise ReadError(f"{len(extra)} measured shape(s) not registered, first {_label(sorted(extra)[0])}")
    out = []
    for k, r in rows.items():
        if r["role"] == "control":
            continue
        for h in HARNESSES:
            m = meas.get((r["role"], h, k))
            if m is None:
                continue
            for p in PASSES:
                e = {"shape": k, "role": r["role"], "group": r["group"], "harness": h, "pass": p,
                     "measured_s": m[f"{p}_s"], "MHz": m["MHz"]}
                e.update({model: r[f"{model}_{p}_s"] / m[f"{p}_s"] - 1 for model in MODELS})
                out.append(e)
    return out


def pick(errs: list[dict], want: dict) -> list[dict]:
    """The errors whose fields equal want's (keys: shape, role, group, harness, pass)."""
    return [e for e in errs if all(e[k] == v for k, v in want.items())]


def missing(meas: dict, rows: dict) -> list[tuple]:
    return sorted(k for k, r in rows.items() if r["role"] == "probe" and not meas.get(("probe", "sustained", k)))


def harness_effect(meas: dict, rows: dict, harness: str, d: int = 128, pass_: str = "bwd") -> list[float]:
    """harness / sustained - 1 of each stepcall shape of head size d measured in both."""
    out = []
    for k, r in rows.items():
        if r["role"] == "stepcall" and k[0] == d:
            a, s = meas.get(("stepcall", harness, k)), meas.get(("stepcall", "sustained", k))
            if a and s:
                out.append(a[f"{pass_}_s"] / s[f"{pass_}_s"] - 1)
    return out


def _mean(xs: list[float]) -> float:
    return statistics.mean(xs) if xs else float("nan")


def verdicts(meas: dict, rule: dict, rows: dict, errs: list[dict]) -> list[str]:
    """The registered verdicts as lines: INCOMPLETE or VOID alone, else adopt, d128 and explain."""
    n = sum(r["role"] == "probe" for r in rows.values())
    gone = missing(meas, rows)
    if n - len(gone) < float(rule["min_complete"]) * n:
        return [f"INCOMPLETE ({n - len(gone)} of {n} probe shapes measured): no verdict, repeat the run once"]
    off = wr.controls(meas, rows, rule, _label, "its prior time", backend="sustained")
    if any(line.endswith("not measured") for line in off):
        return [f"INCOMPLETE (control {off[0]}): no verdict, repeat the run once"]
    if off:
        return [f"VOID (the lease: {off[0]}{'; ...' if len(off) > 1 else ''}): repeat the run once"]
    probe = pick(errs, {"role": "probe", "harness": "sustained"})
    short = [e for e in probe if e["group"] == "short"]
    form, boost = cwr.mean_abs(probe, "form"), cwr.mean_abs(probe, "boost")
    adopt = (boost <= float(rule["max_ratio"]) * form and boost <= float(rule["max_mean_abs"])
             and cwr.mean_abs(short, "boost") <= cwr.mean_abs(short, "form") + float(rule["short_slack"]))
    out = [f"adopt: {'ADOPT boost (its constants replace llm/cudnn_schedule.CONSTS)' if adopt else 'KEEP (nothing changes)'}"
           f" -- sustained probe passes: boost {boost:.1%} vs the kept form {form:.1%}"]
    d128 = [e for e in probe if e["group"] == "d128long" and e["pass"] == "bwd"]
    mean, mabs = _mean([e["form"] for e in d128]), cwr.mean_abs(d128, "form")
    word = ("SLOW (the form is slow at head size 128's backward: issue 44 reopened for the form)"
            if mean >= float(rule["slow_min"]) else
            "HOLDS" if abs(mean) <= float(rule["holds_max"]) and mabs <= float(rule["max_mean_abs"]) else "UNDECIDED")
    out.append(f"d128: {word} -- the kept form's mean error {mean:+.1%} (mean |error| {mabs:.1%}) over {len(d128)} "
               "head size 128 backward passes, sustained")
    eff = harness_effect(meas, rows, "burst-ones")
    sus = [e["form"] for e in pick(errs, {"role": "stepcall", "harness": "sustained", "pass": "bwd"}) if e["shape"][0] == 128]
    ok = bool(eff) and _mean(eff) <= -float(rule["harness_min"]) and abs(_mean(sus)) <= float(rule["holds_max"])
    out.append(f"explain: {'EXPLAINED' if ok else 'NOT EXPLAINED'} -- burst-ones / sustained - 1 {_mean(eff):+.1%} "
               f"(backward, {len(eff)} head size 128 step calls); the kept form there, sustained: {_mean(sus):+.1%}")
    return out


def main(argv: list[str]) -> int:
    got = wr.read_all("cudnn_d128_read", argv, BUNDLE / "cudnnd128.json", BUNDLE / "registered.yaml", registered,
                      measured, errors)
    if got is None:
        return 1
    rule, rows, meas, errs = got
    print("torch's default backend (cuDNN): predicted / measured - 1, the kept form and the boost candidate, per harness")
    print(f"{'shape':28} {'role':8} {'group':12} {'pass':4} | " + " | ".join(f"{h:>10} ms  form boost  MHz" for h in HARNESSES))
    for k, r in rows.items():
        if r["role"] == "control":
            continue
        for p in PASSES:
            cells = []
            for h in HARNESSES:
                e = pick(errs, {"shape": k, "harness": h, "pass": p})
                cells.append(f"{e[0]['measured_s'] * 1e3:13.3f} {e[0]['form']:+5.1%} {e[0]['boost']:+5.1%} "
                             f"{e[0]['MHz'] or 0:4.0f}" if e else f"{'n/a':>13} {'':5} {'':5} {'':4}")
            print(f"{_label(k):28} {r['role']:8} {r['group']:12} {p:4} | " + " | ".join(cells))
    gone = missing(meas, rows)
    if gone:
        print(f"\n{len(gone)} probe shape(s) without a sustained record (failed or missing), first {_label(gone[0])}")
    print(f"\n{'mean |error| (mean error)':34}" + "".join(f"{m:>18}" for m in MODELS))
    sets = [(f"{role} {g} {p} {h}", [e for e in pick(errs, {"role": role, "harness": h, "pass": p})
                                     if g == "all" or e["group"] == g or (g == "d128" and e["shape"][0] == 128)])
            for role, groups in (("probe", ("all", "d128long", "d64", "short")), ("stepcall", ("d128",)))
            for g in groups for p in PASSES for h in HARNESSES]
    for name, sub in sets:
        if sub:
            print(f"  {name:32}" + "".join(f"{cwr.mean_abs(sub, m):9.1%} ({_mean([e[m] for e in sub]):+6.1%})"
                                           for m in MODELS) + f"   ({len(sub)})")
    for h in ("burst-ones", "burst-rand"):
        eff = harness_effect(meas, rows, h)
        print(f"{h} / sustained - 1, head size 128 step calls' backward: mean {_mean(eff):+.1%} over {len(eff)}")
    lease = [meas[("stepcall", "burst-ones", k)]["bwd_s"] / r["step_bwd_s"] - 1 for k, r in rows.items()
             if r["role"] == "stepcall" and "step_bwd_s" in r and meas.get(("stepcall", "burst-ones", k))]
    print(f"burst-ones against the cudnnstep reading (the same harness, another lease), backward: mean {_mean(lease):+.1%}")
    for h in HARNESSES:
        mhz = [e["MHz"] for e in errs if e["harness"] == h and e["pass"] == "bwd" and e["MHz"] and e["shape"][0] == 128
               and e["shape"][4] >= 16384]
        print(f"median SM clock, {h:10}, head size 128 >= 16K: " + (f"{statistics.median(mhz):.0f} MHz" if mhz else "n/a"))
    off = wr.controls(meas, rows, rule, _label, "its prior time", backend="sustained")
    print(f"\ncontrols (sustained vs their prior time, tolerance {float(rule['control_tolerance']):.0%}): "
          + ("all within" if not off else "; ".join(off)))
    for line in verdicts(meas, rule, rows, errs):
        print(f"verdict {line}")
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check(words=2, usage="[DOCUMENT [REGISTERED_YAML]]")
    sys.exit(main(sys.argv[1:]))
