"""Scale-out losses (llm/scaleout.py): fit the GPU speed spread s and the OS jitter J on one source's published
weak-scaling series, check the others.

A series is one source's runs of one model and parallel layout (tp, pp, cp, v, zero, recompute, precision) at
several GPU counts (dp grows). For each, the per-GPU throughput relative to the series' smallest run, measured and
predicted. s and J are fitted (least squares on those ratios) on llm/scaleout.FITTED_ON only; every other series is held out:
the per-GPU throughput lost from its smallest run to its largest, measured vs predicted, in percentage points.
Session 43: the FP8 amax term (scaleout.amax_sync_s) in three forms, "nccl" (shipped, nothing fitted) and two jitter
forms with j fitted on the same source; the FP8 series that prompted it (AMAX_PROMPTED_BY) are development for it and
reported apart ("development"), the rest ("others") held out.

    python studies/scaleout_fit.py            # prints the fit, then every series; --json for the rows
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.llm import scaleout  # noqa: E402
from simcluster.reference.llm import validate_published_llm  # noqa: E402
from simcluster.script_args import ArgumentParser  # noqa: E402

CONFIG = re.compile(r"(?P<name>.*?), (?P<gpus>\d+) x [^,]+(?:, \d+ a (?:node|VM))?, t(?P<t>\d+) p(?P<p>\d+) d\d+ (?P<rest>.*)")   # ", 8 a node": MLPerf labels
PROBE = 0.01          # a run at this spread gives each row's time slope in s (the term is linear in s)
PROBE_J = 0.1         # a run at this jitter (s) gives each row's time slope in J (linear in J)
FORMS = ("fixed", "white", "nccl")   # scaleout.AMAX_SYNC_FORM: each form's probe
PROBE_A = {"fixed": 1e-4, "white": 1e-4, "nccl": 1.0}   # a run at this j gives each row's slope in j (linear in j)
# the FP8 series that prompted the amax-synchronisation candidate or were read as evidence for it (docs/models/llm.md,
# session 32's five pairs; the Llama 3.1 70B / 405B fp8 step-growth ratios, marked after cold review A): (source, model,
# precision), development for it, reported apart from the other held-out series
AMAX_PROMPTED_BY = {("llm-dgxc-benchmarking-v24.11.1-nemotron4-gpt3-h100", "GPT-3 175B", "fp8"),
                    ("llm-dgxc-benchmarking-v24.11.1-nemotron4-gpt3-h100", "Nemotron-4 340B", "fp8"),
                    ("llm-dgxc-benchmarking-v25.02-nemotron4-gpt3-h100", "GPT-3 175B", "fp8"),
                    ("llm-dgxc-benchmarking-v25.02-nemotron4-gpt3-h100", "Nemotron-4 340B", "fp8"),
                    *((f"llm-dgxc-benchmarking-{v}-llama31-h100", m, "fp8") for v in ("v25.02", "v25.04")
                      for m in ("Llama 3.1 70B", "Llama 3.1 405B"))}


def rows_at(spread: float, noise_s: float, amax_s: float = 0.0, form: str = "fixed") -> dict:
    """The published rows at these parameters; amax_s is j (seconds) in the jitter forms, the unitless
    AMAX_CALL_FACTOR in "nccl"."""
    names = ("SPEED_SPREAD", "OS_NOISE_S", "AMAX_SYNC_NOISE_S", "AMAX_CALL_FACTOR", "AMAX_SYNC_FORM")
    saved = {n: getattr(scaleout, n) for n in names}
    for n, v in zip(names, (spread, noise_s, 0.0 if form == "nccl" else amax_s, amax_s if form == "nccl" else 0.0, form), strict=True):
        setattr(scaleout, n, v)
    try:
        v = validate_published_llm()
    finally:
        for n, v_ in saved.items():
            setattr(scaleout, n, v_)
    return {(r.source, r.run): r for r in v.rows if r.predicted and r.measured and r.metric == "tokens_per_s"}


def series() -> dict:
    """(source, model, layout, regime) -> [(gpus, measured tokens/s, predicted with every term 0, with s = PROBE, with
    J = PROBE_J, with j = PROBE_A in each of FORMS)]."""
    base, probe, probe_j = rows_at(0.0, 0.0), rows_at(PROBE, 0.0), rows_at(0.0, PROBE_J)
    probe_a = [rows_at(0.0, 0.0, PROBE_A[form], form) for form in FORMS]
    out = defaultdict(list)
    for key, r in base.items():
        m = CONFIG.match(r.configuration)
        key4 = (r.source, m["name"], f"t{m['t']} p{m['p']} {m['rest']}", r.regime) if m else None
        if not m or not (r.held_out or r.source in scaleout.FITTED_ON or prompted(key4)):   # other development rows:
            continue                                                                            # neither fit nor check
        out[key4].append(
            (int(m["gpus"]), r.measured, r.predicted, probe[key].predicted, probe_j[key].predicted,
             *(p[key].predicted for p in probe_a)))
    return {k: sorted(v) for k, v in out.items() if len({g for g, *_ in v}) >= 2}


def per_gpu_ratios(points, spread: float, noise_s: float = 0.0, amax_s: float = 0.0,
                   form: str = "fixed") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(GPUs, measured, predicted) per-GPU throughput relative to the smallest run; the prediction at (spread, noise_s,
    amax_s in `form`) (every term is linear in its parameter: the probes' slopes)."""
    g = np.array([p[0] for p in points], float)
    meas = np.array([p[1] for p in points]) / g
    t0, t1, t2, t3 = (1 / np.array([p[i] for p in points]) for i in (2, 3, 4, 5 + FORMS.index(form)))   # s per token
    pred = 1 / (t0 + (t1 - t0) * spread / PROBE + (t2 - t0) * noise_s / PROBE_J + (t3 - t0) * amax_s / PROBE_A[form]) / g
    return g, meas / meas[0], pred / pred[0]


def fit(groups: dict, jitter: bool = True) -> tuple[float, float]:
    """(s, J) minimising the squared per-GPU ratio error over the FITTED_ON source's series, on a grid (J = 0 unless
    `jitter`)."""
    fit_groups = [v for k, v in groups.items() if k[0] in scaleout.FITTED_ON]
    best, best_cost = (0.0, 0.0), np.inf
    for s in np.linspace(0.0, 0.06, 121):
        for j in np.linspace(0.0, 0.2, 201) if jitter else (0.0,):
            cost = sum(float(np.sum((r[2] - r[1]) ** 2)) for r in (per_gpu_ratios(v, s, j) for v in fit_groups))
            if cost < best_cost:
                best, best_cost = (float(s), float(j)), cost
    return best


def fit_amax(groups: dict, form: str, spread: float | None = None) -> tuple[float, float]:
    """(s, j) of the stragglers term and the FP8 amax-synchronisation term in `form`, fitted together as fit() does
    (or j alone with s held at `spread`), on the FITTED_ON source's series only."""
    fit_groups = [v for k, v in groups.items() if k[0] in scaleout.FITTED_ON]
    best, best_cost = (0.0, 0.0), np.inf
    if form == "nccl":                                     # no parameter: the NCCL price as it is (j = 1)
        return (scaleout.SPEED_SPREAD if spread is None else spread), 1.0
    top = {"fixed": 600e-6, "white": 0.03}[form]          # j: seconds per sync; "white": seconds per sqrt(second)
    for s in np.linspace(0.0, 0.06, 61) if spread is None else (spread,):
        for a in np.linspace(0.0, top, 121):
            cost = sum(float(np.sum((r[2] - r[1]) ** 2)) for r in (per_gpu_ratios(v, s, 0.0, a, form) for v in fit_groups))
            if cost < best_cost:
                best, best_cost = (float(s), float(a)), cost
    return best


def prompted(key: tuple) -> bool:
    """A series that prompted the FP8 amax candidate (session 43): development for it, reported apart."""
    return (key[0], key[1], key[3].split(" | ")[-1]) in AMAX_PROMPTED_BY


def eightfold_errors(groups: dict, spread: float, noise_s: float, amax_s: float = 0.0, form: str = "fixed",
                     which=lambda key: True) -> list[float]:
    """|predicted - measured| per-GPU throughput lost (pp) from N to 8N GPUs, every such pair of every held-out series
    (issue 41's reading of weak scaling: the loss over one eightfold step) for which `which(key)`."""
    errors = []
    for key, points in sorted(groups.items()):
        if key[0] in scaleout.FITTED_ON or not which(key):
            continue
        g, meas, pred = per_gpu_ratios(points, spread, noise_s, amax_s, form)
        for a in range(len(g)):
            for b in np.nonzero(g == 8 * g[a])[0]:
                errors.append(abs((1 - pred[b] / pred[a]) - (1 - meas[b] / meas[a])) * 100)
    return errors


def release_spread(groups: dict) -> list[dict]:
    """The measurements' own reproducibility: the per-GPU throughput lost from N to 8N GPUs by one model, layout and
    precision, as two or more sources (releases of one benchmark) measured it at the same N and 8N. Measured values
    only; no model enters."""
    losses = defaultdict(dict)
    for (source, name, layout, regime), points in groups.items():
        g = np.array([p[0] for p in points], float)
        per_gpu = np.array([p[1] for p in points]) / g
        for a in range(len(g)):
            for b in np.nonzero(g == 8 * g[a])[0]:
                losses[(name, layout, regime.split(" | ")[-1], int(g[a]))][source] = (1 - per_gpu[b] / per_gpu[a]) * 100
    return [{"model": k[0], "layout": k[1], "precision": k[2], "gpus": [k[3], 8 * k[3]],
             "loss_measured_pp": {s: round(v, 2) for s, v in sorted(by.items())},
             "spread_pp": round(max(by.values()) - min(by.values()), 2)}
            for k, by in sorted(losses.items()) if len(by) >= 2]


def main() -> None:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    groups = series()
    s, _ = fit(groups, jitter=False)           # the stragglers term alone (J = 0, below): session 42's model
    s_j, j = fit(groups, jitter=True)          # both fitted together: reported, not shipped (docs/models/llm.md)
    amax = {f"{form}{held}": fit_amax(groups, form, scaleout.SPEED_SPREAD if held else None)   # the FP8 amax candidate:
            for form in FORMS for held in (("-s-held",) if form == "nccl" else ("", "-s-held"))}                                    # (s, j) per form
    form_of = {name: name.removesuffix("-s-held") for name in amax}
    rows = []
    for (source, name, layout, regime), points in sorted(groups.items()):
        g, meas, pred = per_gpu_ratios(points, s_j, j)
        by_form = {f"loss_amax_{name}_pp": round((1 - per_gpu_ratios(points, sa, 0.0, a, form_of[name])[2][-1]) * 100, 2)
                   for name, (sa, a) in amax.items()}
        _, _, pred0 = per_gpu_ratios(points, 0.0, 0.0)
        _, _, pred_s = per_gpu_ratios(points, s, 0.0)
        rows.append({"source": source, "model": name, "layout": layout, "precision": regime.split(" | ")[-1],
                     "gpus": [int(g[0]), int(g[-1])], "held_out": source not in scaleout.FITTED_ON,
                     "loss_measured_pp": round((1 - meas[-1]) * 100, 2), "loss_predicted_with_jitter_pp": round((1 - pred[-1]) * 100, 2),
                     "loss_without_stragglers_pp": round((1 - pred0[-1]) * 100, 2),
                     "loss_stragglers_only_pp": round((1 - pred_s[-1]) * 100, 2), **by_form,
                     "amax_development": prompted((source, name, layout, regime))})
    held = [r for r in rows if r["held_out"]]
    err = [abs(r["loss_predicted_with_jitter_pp"] - r["loss_measured_pp"]) for r in held]
    err0 = [abs(r["loss_without_stragglers_pp"] - r["loss_measured_pp"]) for r in held]
    err_s = [abs(r["loss_stragglers_only_pp"] - r["loss_measured_pp"]) for r in held]
    summary = {"speed_spread_fitted": s, "speed_spread_shipped": scaleout.SPEED_SPREAD, "fitted_on": list(scaleout.FITTED_ON),
               "with_jitter_speed_spread_fitted": s_j, "with_jitter_os_noise_s_fitted": j, "os_noise_s_shipped": scaleout.OS_NOISE_S,
               "mean_abs_error_pp_stragglers_only": round(float(np.mean(err_s)), 2) if err_s else None,
               "within_2pp_stragglers_only": int(sum(e <= 2.0 for e in err_s)),
               "held_out_series": len(held), "mean_abs_error_pp_with_jitter": round(float(np.mean(err)), 2) if err else None,
               "within_2pp_with_jitter": int(sum(e <= 2.0 for e in err)),
               "mean_abs_error_pp_without_stragglers": round(float(np.mean(err0)), 2) if err0 else None}
    for name, (sp, jn) in (("shipped", (s, 0.0)), ("with_jitter", (s_j, j)), ("neither", (0.0, 0.0))):
        e8 = eightfold_errors(groups, sp, jn)
        summary[f"eightfold_pairs_{name}"] = {"pairs": len(e8), "mean_abs_error_pp": round(float(np.mean(e8)), 2) if e8 else None,
                                              "within_2pp": int(sum(e <= 2.0 for e in e8))}
    for form, (sa, a) in amax.items():
        cand, shape = {"speed_spread_fitted": sa, "amax_noise_fitted": a}, form_of[form]
        for part, keep in (("others", False), ("development", True)):
            these = [r for r in held if r["amax_development"] == keep]
            for label, col in (("shipped", "loss_stragglers_only_pp"), ("candidate", f"loss_amax_{form}_pp")):
                e = [abs(r[col] - r["loss_measured_pp"]) for r in these]
                cand[f"{part}_{label}"] = {"series": len(e), "mean_abs_error_pp": round(float(np.mean(e)), 2) if e else None,
                                           "within_2pp": int(sum(x <= 2.0 for x in e))}
            for label, (sp, am) in (("shipped", (s, 0.0)), ("candidate", (sa, a))):
                e8 = eightfold_errors(groups, sp, 0.0, am, shape, lambda k, keep=keep: prompted(k) == keep)
                cand[f"{part}_{label}_eightfold"] = {"pairs": len(e8), "within_2pp": int(sum(x <= 2.0 for x in e8)),
                                                     "mean_abs_error_pp": round(float(np.mean(e8)), 2) if e8 else None}
        insample = [r for r in rows if not r["held_out"]]
        cand["in_sample_mean_abs_error_pp"] = round(float(np.mean([abs(r[f"loss_amax_{form}_pp"] - r["loss_measured_pp"])
                                                                   for r in insample])), 2) if insample else None
        summary[f"amax_{form}"] = cand
    repro = release_spread(groups)
    spreads = [r["spread_pp"] for r in repro]
    summary["release_spread"] = {"pairs": len(repro), "median_pp": round(float(np.median(spreads)), 2) if spreads else None,
                                 "max_pp": max(spreads, default=None), "within_2pp": int(sum(x <= 2.0 for x in spreads))}
    if args.json:
        print(json.dumps({"summary": summary, "series": rows, "release_spread": repro}, indent=1))
        return
    print(f"fitted on {', '.join(scaleout.FITTED_ON)}: the stragglers term alone: s = {s:.4f} (shipped "
          f"{scaleout.SPEED_SPREAD}); with OS jitter fitted too: s = {s_j:.4f}, J = {j * 1e3:.1f} ms per GPU and step "
          f"(shipped {scaleout.OS_NOISE_S * 1e3:.1f})")
    print(f"{'source':46s} {'model':24s} {'prec':4s} {'GPUs':>11s} {'meas pp':>8s} {'s only':>8s} {'+jitter':>8s} {'neither':>8s}")
    for r in rows:
        mark = "" if r["held_out"] else "  (fit)"
        print(f"{r['source'][:46]:46s} {r['model'][:24]:24s} {r['precision']:4s} {r['gpus'][0]:>5d}-{r['gpus'][1]:<5d} "
              f"{r['loss_measured_pp']:8.2f} {r['loss_stragglers_only_pp']:8.2f} {r['loss_predicted_with_jitter_pp']:8.2f} "
              f"{r['loss_without_stragglers_pp']:8.2f}{mark}")
    dev = sum(bool(r["amax_development"]) for r in rows)
    print(f"held out (the amax term's {dev} development series among them): {summary['held_out_series']} series; stragglers "
          f"alone (session 42's model): mean |error| "
          f"{summary['mean_abs_error_pp_stragglers_only']} pp ({summary['within_2pp_stragglers_only']} within 2 pp); with OS "
          f"jitter fitted too: {summary['mean_abs_error_pp_with_jitter']} pp ({summary['within_2pp_with_jitter']} within 2 pp); "
          f"neither: {summary['mean_abs_error_pp_without_stragglers']} pp")
    e = {k: summary[f"eightfold_pairs_{k}"] for k in ("shipped", "with_jitter", "neither")}
    print(f"N -> 8N pairs of the held-out series ({e['shipped']['pairs']}): stragglers alone {e['shipped']['mean_abs_error_pp']} pp "
          f"({e['shipped']['within_2pp']} within 2 pp); with jitter {e['with_jitter']['mean_abs_error_pp']} pp "
          f"({e['with_jitter']['within_2pp']}); neither {e['neither']['mean_abs_error_pp']} pp ({e['neither']['within_2pp']})")
    for form in amax:
        c = summary[f"amax_{form}"]
        how = "s held at the shipped value" if form.endswith("-s-held") else "fitted together with s"
        how += " (SHIPPED)" if form == f"{scaleout.AMAX_SYNC_FORM}-s-held" and scaleout.AMAX_CALL_FACTOR == c["amax_noise_fitted"] else ""
        print(f"FP8 amax-sync candidate, form {form}: on the same source, {how}: s = {c['speed_spread_fitted']:.4f}, "
              f"j = {c['amax_noise_fitted']:.6g}; in-sample series mean |error| {c['in_sample_mean_abs_error_pp']} pp")
        for part in ("others", "development"):
            sh, ca, sh8, ca8 = (c[f"{part}_{x}"] for x in ("shipped", "candidate", "shipped_eightfold", "candidate_eightfold"))
            print(f"  held out, {part:11s}: {sh['series']} series stragglers alone {sh['mean_abs_error_pp']} pp ({sh['within_2pp']} within 2) "
                  f"-> {ca['mean_abs_error_pp']} pp ({ca['within_2pp']}); N -> 8N {sh8['pairs']} pairs "
                  f"{sh8['mean_abs_error_pp']} pp ({sh8['within_2pp']}) -> {ca8['mean_abs_error_pp']} pp ({ca8['within_2pp']})")
    print(f"{'':46s} {'model':24s} {'prec':4s} {'GPUs':>11s} {'meas pp':>8s} {'s only':>8s} " + " ".join(f"{f[:8]:>8s}" for f in amax))
    for r in rows:
        if r["precision"] == "fp8" or r["amax_development"]:
            print(f"{r['source'][:46]:46s} {r['model'][:24]:24s} {r['precision']:4s} {r['gpus'][0]:>5d}-{r['gpus'][1]:<5d} "
                  f"{r['loss_measured_pp']:8.2f} {r['loss_stragglers_only_pp']:8.2f} "
                  + " ".join(f"{r[f'loss_amax_{f}_pp']:8.2f}" for f in amax) + ("  (dev)" if r["amax_development"] else "")
                  + ("" if r["held_out"] else "  (fit)"))
    print("the measurements' own reproducibility: N -> 8N loss of one model, layout and precision measured by two or more "
          "releases at the same GPU counts (measured only)")
    for r in repro:
        print(f"  {r['model'][:24]:24s} {r['precision']:4s} {r['gpus'][0]:>5d}->{r['gpus'][1]:<5d} spread {r['spread_pp']:5.2f} pp  "
              + "  ".join(f"{s.removeprefix('llm-dgxc-benchmarking-')[:22]} {v:+.2f}" for s, v in r["loss_measured_pp"].items()))
    rs = summary["release_spread"]
    print(f"release-to-release spread over {rs['pairs']} pairs: median {rs['median_pp']} pp, max {rs['max_pp']} pp, "
          f"{rs['within_2pp']} within 2 pp")

if __name__ == "__main__":
    main()
