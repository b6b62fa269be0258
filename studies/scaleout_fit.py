"""Scale-out losses (llm/scaleout.py): fit the GPU speed spread s and the OS jitter J on one source's published
weak-scaling series, check the others.

A series is one source's runs of one model and parallel layout (tp, pp, cp, v, zero, recompute, precision) at
several GPU counts (dp grows). For each, the per-GPU throughput relative to the series' smallest run, measured and
predicted. s and J are fitted (least squares on those ratios) on llm/scaleout.FITTED_ON only; every other series is held out:
the per-GPU throughput lost from its smallest run to its largest, measured vs predicted, in percentage points.

    python studies/scaleout_fit.py            # prints the fit, then every series; --json for the rows
"""

from __future__ import annotations

import argparse
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

CONFIG = re.compile(r"(?P<name>.*?), (?P<gpus>\d+) x [^,]+, t(?P<t>\d+) p(?P<p>\d+) d\d+ (?P<rest>.*)")
PROBE = 0.01          # a run at this spread gives each row's time slope in s (the term is linear in s)
PROBE_J = 0.1         # a run at this jitter (s) gives each row's time slope in J (linear in J)


def rows_at(spread: float, noise_s: float) -> dict:
    saved = scaleout.SPEED_SPREAD, scaleout.OS_NOISE_S
    scaleout.SPEED_SPREAD, scaleout.OS_NOISE_S = spread, noise_s
    try:
        v = validate_published_llm()
    finally:
        scaleout.SPEED_SPREAD, scaleout.OS_NOISE_S = saved
    return {(r.source, r.run): r for r in v.rows if r.predicted and r.measured and r.metric == "tokens_per_s"}


def series() -> dict:
    """(source, model, layout, regime) -> [(gpus, measured tokens/s, predicted at (0, 0), at (PROBE, 0), at (0, PROBE_J))]."""
    base, probe, probe_j = rows_at(0.0, 0.0), rows_at(PROBE, 0.0), rows_at(0.0, PROBE_J)
    out = defaultdict(list)
    for key, r in base.items():
        m = CONFIG.match(r.configuration)
        if not m or not (r.held_out or r.source in scaleout.FITTED_ON):   # development rows: neither fit nor check
            continue
        out[(r.source, m["name"], f"t{m['t']} p{m['p']} {m['rest']}", r.regime)].append(
            (int(m["gpus"]), r.measured, r.predicted, probe[key].predicted, probe_j[key].predicted))
    return {k: sorted(v) for k, v in out.items() if len({g for g, *_ in v}) >= 2}


def per_gpu_ratios(points, spread: float, noise_s: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(GPUs, measured, predicted) per-GPU throughput relative to the smallest run; the prediction at (spread, noise_s)."""
    g = np.array([p[0] for p in points], float)
    meas = np.array([p[1] for p in points]) / g
    t0 = 1 / np.array([p[2] for p in points])                  # seconds per token at spread 0, no jitter
    t1 = 1 / np.array([p[3] for p in points])
    t2 = 1 / np.array([p[4] for p in points])
    pred = 1 / (t0 + (t1 - t0) * spread / PROBE + (t2 - t0) * noise_s / PROBE_J) / g
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


def eightfold_errors(groups: dict, spread: float, noise_s: float) -> list[float]:
    """|predicted - measured| per-GPU throughput lost (pp) from N to 8N GPUs, every such pair of every held-out series
    (issue 41's reading of weak scaling: the loss over one eightfold step)."""
    errors = []
    for key, points in sorted(groups.items()):
        if key[0] in scaleout.FITTED_ON:
            continue
        g, meas, pred = per_gpu_ratios(points, spread, noise_s)
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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    groups = series()
    s, _ = fit(groups, jitter=False)           # the shipped model: the stragglers term alone (J = 0, below)
    s_j, j = fit(groups, jitter=True)          # both fitted together: reported, not shipped (docs/models/llm.md)
    rows = []
    for (source, name, layout, regime), points in sorted(groups.items()):
        g, meas, pred = per_gpu_ratios(points, s_j, j)
        _, _, pred0 = per_gpu_ratios(points, 0.0, 0.0)
        _, _, pred_s = per_gpu_ratios(points, s, 0.0)
        rows.append({"source": source, "model": name, "layout": layout, "precision": regime.split(" | ")[-1],
                     "gpus": [int(g[0]), int(g[-1])], "held_out": source not in scaleout.FITTED_ON,
                     "loss_measured_pp": round((1 - meas[-1]) * 100, 2), "loss_predicted_with_jitter_pp": round((1 - pred[-1]) * 100, 2),
                     "loss_without_stragglers_pp": round((1 - pred0[-1]) * 100, 2),
                     "loss_stragglers_only_pp": round((1 - pred_s[-1]) * 100, 2)})
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
    repro = release_spread(groups)
    spreads = [r["spread_pp"] for r in repro]
    summary["release_spread"] = {"pairs": len(repro), "median_pp": round(float(np.median(spreads)), 2) if spreads else None,
                                 "max_pp": max(spreads, default=None), "within_2pp": int(sum(x <= 2.0 for x in spreads))}
    if args.json:
        print(json.dumps({"summary": summary, "series": rows, "release_spread": repro}, indent=1))
        return
    print(f"fitted on {', '.join(scaleout.FITTED_ON)}: shipped, the stragglers term alone: s = {s:.4f} (shipped "
          f"{scaleout.SPEED_SPREAD}); with OS jitter fitted too: s = {s_j:.4f}, J = {j * 1e3:.1f} ms per GPU and step "
          f"(shipped {scaleout.OS_NOISE_S * 1e3:.1f})")
    print(f"{'source':46s} {'model':24s} {'prec':4s} {'GPUs':>11s} {'meas pp':>8s} {'shipped':>8s} {'+jitter':>8s} {'neither':>8s}")
    for r in rows:
        mark = "" if r["held_out"] else "  (fit)"
        print(f"{r['source'][:46]:46s} {r['model'][:24]:24s} {r['precision']:4s} {r['gpus'][0]:>5d}-{r['gpus'][1]:<5d} "
              f"{r['loss_measured_pp']:8.2f} {r['loss_stragglers_only_pp']:8.2f} {r['loss_predicted_with_jitter_pp']:8.2f} "
              f"{r['loss_without_stragglers_pp']:8.2f}{mark}")
    print(f"held out: {summary['held_out_series']} series; shipped (stragglers): mean |error| "
          f"{summary['mean_abs_error_pp_stragglers_only']} pp ({summary['within_2pp_stragglers_only']} within 2 pp); with OS "
          f"jitter fitted too: {summary['mean_abs_error_pp_with_jitter']} pp ({summary['within_2pp_with_jitter']} within 2 pp); "
          f"neither: {summary['mean_abs_error_pp_without_stragglers']} pp")
    e = {k: summary[f"eightfold_pairs_{k}"] for k in ("shipped", "with_jitter", "neither")}
    print(f"N -> 8N pairs of the held-out series ({e['shipped']['pairs']}): shipped {e['shipped']['mean_abs_error_pp']} pp "
          f"({e['shipped']['within_2pp']} within 2 pp); with jitter {e['with_jitter']['mean_abs_error_pp']} pp "
          f"({e['with_jitter']['within_2pp']}); neither {e['neither']['mean_abs_error_pp']} pp ({e['neither']['within_2pp']})")
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
