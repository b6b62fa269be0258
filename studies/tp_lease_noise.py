"""Eager TP at 2 GPUs: model error or lease noise? (issue 44, session 42; a diagnostic, not a test, no model input)

Reads every 2-rank DTensor TP llm-step document under calibration/h200x2-* (runs/*.json, host/*.json, llm-step/*/stdout.txt,
...) and prints, with the natural log of each process's median step as the unit (a spread s of logs is about s*100%):
  1. each process: shape, call (the device call that ran it: its lease), median step, host issue / step, model (today's,
     heldout/eager_regimes.regime_predict with the product's host fits) and its error (+ = predicted slower);
  2. the spread of process medians of one shape within one call (processes on one lease), pooled;
  3. the spread of one shape's call means across leases, pooled, beside what the within-call spread alone would give;
  4. the model error split into the call's mean (its lease bias) and the rows' scatter around it, on the 22 rows of
     the error-band table (the sealed and registered sets) and on every process with a preset; the mean lease bias
     (each call weighted once, as the sd of call biases weighs them) with its standard error (sd / sqrt(calls));
  5. the floor: the mean |error| a model exactly right on each shape's mean over all its processes would score on a
     single process (the mean |deviation| of one process from its shape's mean, n/(n-1) corrected), and the model and
     that floor on the SAME processes (the table's rows, every preset process: those whose shape ran more than once);
     the drift across a call: log step against the process's place in the call's run order (runs/status.txt), with
     one level per shape, fitted within each call that has an order;
  6. whether the lease's sign follows its host probe (the hidden-128 tp-L<n> runs of the same call: faster / slower
     than the product's fit lease) or the predicted GPU share of the step.
    python studies/tp_lease_noise.py
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.heldout.eager_regimes import regime_predict  # noqa: E402

CAL = ROOT / "calibration"
# calls on one lease (the bundles' READMEs): the product's host fit lease, and folders that ran on another's lease
SAME_LEASE = {"h200x2-llm-host-2026-11-27": "h200x2-llm-2gpu-sealed6-2026-11-27"}   # its README: sealed6's lease
FIT_LEASE = "h200x2-llm-host-2026-11-23"   # eager.MODE_HOST: the product's tp host fit
TABLE_SETS = ("h200x2-llm-2gpu-sealed-2026-11-23", "h200x2-llm-2gpu-sealed2-2026-11-23", "h200x2-llm-2gpu-sealed3-2026-11-27",
              "h200x2-llm-2gpu-sealed6-2026-11-27", "h200x2-llm-eager-two-2026-11-29", "h200x2-llm-eager-twohost-2026-11-29")
PROBE_PRESET = None   # the host runs' decoders (hidden 128) have no preset


def call_of(path: Path) -> str:
    """The device call a document came from: its bundle, plus runs2/ or profiled/ where a bundle holds a second call
    (host/ and runs/ of one bundle are one call; llm-step/ folders are the bundle's call)."""
    rel = path.relative_to(CAL).parts
    bundle = SAME_LEASE.get(rel[0], rel[0])
    return bundle + ("/" + rel[1] if len(rel) > 2 and rel[1] in ("runs2", "profiled") else "")


def documents() -> list[tuple[Path, dict]]:
    out = []
    for path in sorted(CAL.glob("h200x2-*/**/*")):
        if path.name == "run.json" or path.name == "manifest.json" or not (path.suffix == ".json" or path.name == "stdout.txt"):
            continue
        try:
            doc = json.loads(path.read_text())
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(doc, dict) and doc.get("tool") == "llm-step" and doc.get("mode") == "tp" and doc.get("world_size") == 2:
            out.append((path, doc))
    return out


def processes() -> list[dict]:
    """One row per timed shape of each process."""
    rows = []
    for path, doc in documents():
        m = doc["model"]
        for s in doc.get("shapes", []):
            if s.get("status") != "ok" or not s.get("step_times_s"):
                continue
            key = (m["layers"], m["hidden"], m["ffn"], m["heads"], m["kv_heads"], m["vocab"], s["seq"], s["micro_batch"])
            issue = s.get("host_issue_s")
            rows.append({"path": str(path.relative_to(CAL)), "call": call_of(path), "preset": m.get("preset"), "key": key,
                         "seq": s["seq"], "mb": s["micro_batch"], "layers": m["layers"], "hidden": m["hidden"],
                         "ms": s["median_step_s"] * 1e3, "steps": s["step_times_s"],
                         "issue": statistics.median(issue) / s["median_step_s"] if issue else None})
    for r in rows:
        if r["preset"]:
            p = regime_predict(r["preset"], r["mb"], "tp", "h200", seq=r["seq"])
            r["pred"], r["gpu_share"] = p["step_ms"], 1 - (p["host_share"] or 0)
            r["err"] = r["pred"] / r["ms"] - 1
    return rows


def label(r: dict) -> str:
    return (r["preset"] or f"L{r['layers']} h{r['hidden']}") + f" {r['seq']}:{r['mb']}"


def pooled_sd(groups: list[list[float]]) -> tuple[float, int]:
    """Pooled standard deviation of the groups' values around their own means, and its degrees of freedom."""
    ss = sum(sum((x - statistics.mean(g)) ** 2 for x in g) for g in groups if len(g) > 1)
    dof = sum(len(g) - 1 for g in groups if len(g) > 1)
    return (math.sqrt(ss / dof) if dof else float("nan")), dof


def numbers(rows: list[dict], table_sets: tuple[str, ...] = TABLE_SETS) -> dict:
    """The study's summary (logs of process medians): the within-call process sd, the across-lease sd of call means and
    the lease term beyond process noise, the floor (a model on each shape's mean, scored on one process: empirical and
    normal), and the error-band table's rows' (those of `table_sets`) mean |error| under today's model. trust/noise.py
    recorded these until session 48 (FLOOR_VERDICTS' checks are computed through it). Rows: dicts with key (the shape), call (the lease), ms (the process
    median) and, where a model prices them, err (predicted / measured - 1); studies/sacop_lease_noise.py reuses it."""
    by_call = defaultdict(list)
    for r in rows:
        by_call[(r["key"], r["call"])].append(math.log(r["ms"]))
    within, dof_w = pooled_sd(list(by_call.values()))
    by_key = defaultdict(dict)
    for (key, call), g in by_call.items():
        by_key[key][call] = g
    across = [[statistics.mean(g) for g in calls.values()] for calls in by_key.values() if len(calls) > 1]
    sd_a, dof_a = pooled_sd(across)
    shared = [c for c in by_key.values() if len(c) > 1]
    # a call mean of n processes: within^2 / n; no shape on two calls (studies/eager_noise_floors.py): no lease term measured
    inv_n = statistics.mean(1 / len(g) for c in shared for g in c.values()) if shared else 0.0
    lease = math.sqrt(max(sd_a ** 2 - within ** 2 * inv_n, 0)) if shared else 0.0
    devs = []
    for g in by_key.values():
        logs = [x for xs in g.values() for x in xs]
        if len(logs) > 1:
            mu = statistics.mean(logs)
            devs += [abs(math.exp(x - mu) - 1) * math.sqrt(len(logs) / (len(logs) - 1)) for x in logs]
    for r in rows:   # the same deviation, on each row (None: its shape ran once)
        logs = [x for xs in by_key[r["key"]].values() for x in xs]
        r["dev"] = (abs(r["ms"] / math.exp(statistics.mean(logs)) - 1) * math.sqrt(len(logs) / (len(logs) - 1))
                    if len(logs) > 1 else None)
    table = [r for r in rows if "err" in r and r["call"] in table_sets]
    preset = [r for r in rows if "err" in r]
    return {"table": bias_and_floor(table), "preset": bias_and_floor(preset), **{
            "process_sd": within, "process_dof": dof_w, "across_sd": sd_a, "across_dof": dof_a, "lease_sd": lease,
            "noise_alone_sd": within * math.sqrt(inv_n), "shared_shapes": len(shared),
            "floor_empirical": statistics.mean(devs), "floor_processes": len(devs),
            "floor_normal": math.sqrt(within ** 2 + lease ** 2) * math.sqrt(2 / math.pi),
            "table_rows": len(table), "table_calls": len({r["call"] for r in table}),
            "table_mean_abs": statistics.mean(abs(r["err"]) for r in table) if table else float("nan"),
            "by_call": by_call, "by_key": by_key}}


def bias_and_floor(pick: list[dict]) -> dict:
    """The rows' lease biases (mean log error of each call), their mean with each call weighted once and its standard
    error, and the model's mean |error| beside the floor on the same rows (those whose shape ran in more than one
    process). Empty rows: {}."""
    if not pick:
        return {}
    calls = defaultdict(list)
    for r in pick:
        calls[r["call"]].append(math.log(1 + r["err"]))
    biases = [statistics.mean(v) for v in calls.values()]
    same = [r for r in pick if r.get("dev") is not None]
    return {"rows": len(pick), "calls": len(calls), "biases": dict(zip(calls, biases, strict=True)),
            "bias_mean": statistics.mean(biases),
            "bias_se": statistics.stdev(biases) / math.sqrt(len(biases)) if len(biases) > 1 else float("nan"),
            "same_rows": len(same), "model_same": statistics.mean(abs(r["err"]) for r in same) if same else float("nan"),
            "floor_same": statistics.mean(r["dev"] for r in same) if same else float("nan")}


def run_order(call: str) -> list[str]:
    """The process stems of a call in the order they ran (its runs/status.txt), or [] where none is recorded."""
    bundle, _, sub = call.partition("/")
    status = CAL / bundle / (sub or "runs") / "status.txt"
    if not status.is_file():
        return []
    return [ln.split()[0] for ln in status.read_text().splitlines() if " exit 0" in ln]


def drift(rows: list[dict]) -> dict[str, dict]:
    """Per call with a run order and >= 3 processes: the least-squares slope of log step on the process's place in the
    order (0, 1, ...), with one level per shape, its standard error, and the fitted first -> last change."""
    import numpy as np

    out = {}
    for call in sorted({r["call"] for r in rows}):
        order = run_order(call)
        pick = [r for r in rows if r["call"] == call and Path(r["path"]).stem in order]
        if len({r["path"] for r in pick}) < 3:
            continue
        keys = sorted({r["key"] for r in pick})
        x = np.array([[order.index(Path(r["path"]).stem)] + [r["key"] == k for k in keys] for r in pick], float)
        y = np.array([math.log(r["ms"]) for r in pick])
        beta, *_ = np.linalg.lstsq(x, y, rcond=None)
        dof = len(y) - x.shape[1]
        if dof < 1:
            continue
        s2 = float(((y - x @ beta) ** 2).sum()) / dof
        se = math.sqrt(s2 * np.linalg.inv(x.T @ x)[0, 0])
        span = max(order.index(Path(r["path"]).stem) for r in pick) - min(order.index(Path(r["path"]).stem) for r in pick)
        out[call] = {"slope": float(beta[0]), "se": se, "dof": dof, "processes": len({r["path"] for r in pick}),
                     "rows": len(pick), "first_to_last": math.exp(beta[0] * span) - 1}
    return out


def main() -> int:
    rows = processes()
    if not rows:
        print("no 2-rank TP llm-step document under calibration/h200x2-*", file=sys.stderr)
        return 1
    print("1. every 2-rank TP process (ms; issue = median host issue / median step; err: + = predicted slower)")
    for r in sorted(rows, key=lambda r: (r["key"], r["call"])):
        model = f"{r['pred']:7.1f} {r['err']:+6.1%}" if "err" in r else " " * 14
        print(f"  {label(r):22} {r['ms']:7.1f}  issue {r['issue'] or float('nan'):.3f}  {model}  {r['path']}")
    n = numbers(rows)
    by_call, by_key, within = n["by_call"], n["by_key"], n["process_sd"]
    print(f"\n2. within one call (same lease, separate processes): pooled sd of log medians {within:.3f} "
          f"({n['process_dof']} dof, {sum(len(g) > 1 for g in by_call.values())} shape-call groups)")
    for (key, call), g in sorted(by_call.items()):
        if len(g) > 1:
            ms = [math.exp(x) for x in g]
            print(f"  {label(next(r for r in rows if r['key'] == key)):22} {call:44} n={len(g)}  "
                  f"{' / '.join(f'{x:.0f}' for x in ms)}  max/min-1 {max(ms) / min(ms) - 1:.1%}")
    print(f"\n3. across leases (one shape's call means): pooled sd {n['across_sd']:.3f} ({n['across_dof']} dof, "
          f"{n['shared_shapes']} shapes); process noise alone would give {n['noise_alone_sd']:.3f}; a lease term on top: "
          f"{n['lease_sd']:.3f}")
    for key, calls in ((k, c) for k, c in by_key.items() if len(c) > 1):
        means = {c: math.exp(statistics.mean(g)) for c, g in calls.items()}
        print(f"  {label(next(r for r in rows if r['key'] == key)):22} "
              + "  ".join(f"{c.replace('h200x2-', '')} {v:.0f}" + (f" (n={len(calls[c])})" if len(calls[c]) > 1 else "")
                          for c, v in sorted(means.items()))
              + f"  max/min-1 {max(means.values()) / min(means.values()) - 1:.1%}")

    print("\n4. the model's error: lease bias (the call's mean log error) and scatter around it")
    for name, pick in (("the error-band table's 22 rows", [r for r in rows if "err" in r and r["call"] in TABLE_SETS]),
                       ("every process with a preset", [r for r in rows if "err" in r])):
        calls = defaultdict(list)
        for r in pick:
            calls[r["call"]].append(math.log(1 + r["err"]))
        biases = {c: statistics.mean(v) for c, v in calls.items()}
        scatter, dof_s = pooled_sd(list(calls.values()))
        print(f"  {name}: {len(pick)} rows, {len(calls)} calls; mean |err| {statistics.mean(abs(r['err']) for r in pick):.1%}, "
              f"rms log err {math.sqrt(statistics.mean(math.log(1 + r['err']) ** 2 for r in pick)):.3f}; "
              f"sd of call biases {statistics.pstdev(biases.values()):.3f}, scatter within a call {scatter:.3f} ({dof_s} dof)")
        for c, b in sorted(biases.items()):
            print(f"    {c:46} n={len(calls[c]):2}  bias {math.exp(b) - 1:+6.1%}")
        bf = n["table" if "table" in name else "preset"]
        print(f"    mean lease bias (each call once) {math.exp(bf['bias_mean']) - 1:+.1%} (log {bf['bias_mean']:+.3f}, "
              f"se {bf['bias_se']:.3f}, {bf['bias_mean'] / bf['bias_se']:+.1f} se; {bf['calls']} calls)")

    total = math.sqrt(within ** 2 + n["lease_sd"] ** 2)
    print(f"\n5. floor: a model exactly on each shape's mean of all its processes scores mean |err| "
          f"{n['floor_empirical']:.1%} on one process ({n['floor_processes']} processes of the shapes with more than one); "
          f"normal with sd {total:.3f} (process + lease): {n['floor_normal']:.1%}; process noise alone: "
          f"{within * math.sqrt(2 / math.pi):.1%}")
    for name, part in (("the table's 22 rows", "table"), ("every preset process", "preset")):
        bf = n[part]
        print(f"   on the same processes, {name} whose shape ran more than once ({bf['same_rows']} of {bf['rows']}): "
              f"model mean |err| {bf['model_same']:.1%}, floor {bf['floor_same']:.1%}")
    for call, d in drift(rows).items():
        print(f"   drift across the call {call}: {d['slope']:+.3f} of log step per process in run order (se {d['se']:.3f}, "
              f"{d['processes']} processes, {d['rows']} rows, {d['dof']} dof): first to last {d['first_to_last']:+.1%}")
    steps = [statistics.stdev(math.log(t) for t in r["steps"]) for r in rows if len(r["steps"]) > 2]
    print(f"   within a process: median sd of log step times {statistics.median(steps):.3f} "
          f"(a median of 10 steps: standard error about {1.2533 * statistics.median(steps) / math.sqrt(10):.3f})")
    pairs = [(a, b) for a in rows for b in rows if a["path"] == b["path"] and a["key"][:6] == b["key"][:6] and a["seq"] < b["seq"]]
    measured = [b["ms"] / a["ms"] - 1 for a, b in pairs]
    model = [b["pred"] / a["pred"] - 1 for a, b in pairs if "pred" in a]
    print(f"   one process, two sequence lengths: the longer one slower in {sum(p > 0 for p in measured)} of {len(pairs)} "
          f"pairs (median {statistics.median(measured):+.1%}); the model moves the {len(model)} preset pairs by "
          f"{statistics.median(model):+.1%} (median)")

    print("\n6. the lease's sign against its host probe (hidden-128 tp-L<n> runs of the same call, ratio to the fit lease's "
          "same shapes) and against the GPU share")
    probes = defaultdict(dict)
    for r in rows:
        if r["preset"] is PROBE_PRESET:
            probes[r["call"]][r["key"]] = r["ms"]
    base = probes.get(FIT_LEASE, {})
    for call, shapes in sorted(probes.items()):
        common = [k for k in shapes if k in base]
        if call == FIT_LEASE or not common:
            continue
        speed = math.exp(statistics.mean(math.log(shapes[k] / base[k]) for k in common))
        errs = [r["err"] for r in rows if r["call"] == call and "err" in r]
        print(f"  {call:46} probe {speed - 1:+6.1%} vs the fit lease ({len(common)} shapes); "
              + (f"its TP rows' mean error {statistics.mean(errs):+.1%} (n={len(errs)}; a probe-following lease would be "
                 f"{1 / speed - 1:+.1%})" if errs else "no preset TP row in this call"))
    print("\n7. sensitivity: the same numbers on subsets of the processes")
    for name, pick in (("preset shapes only", [r for r in rows if r["preset"]]),
                       ("host-probe shapes only (hidden 128)", [r for r in rows if not r["preset"]]),
                       ("without the 11-23 profile and 2gpu-tp calls", [r for r in rows if "profile" not in r["call"]
                                                                       and "2gpu-tp-" not in r["call"]])):
        m = numbers(pick)
        print(f"  {name:44} process sd {m['process_sd']:.3f} ({m['process_dof']} dof); across {m['across_sd']:.3f} "
              f"({m['across_dof']} dof, {m['shared_shapes']} shapes); lease term {m['lease_sd']:.3f}; floor "
              f"{m['floor_empirical']:.1%} / {m['floor_normal']:.1%}")
    table = [r for r in rows if "err" in r and r["call"] in TABLE_SETS]
    xs, ys = [r["gpu_share"] for r in table], [r["err"] for r in table]
    print(f"  GPU share of the predicted step (1 - host share) {min(xs):.2f}..{max(xs):.2f} over the 22 rows; "
          f"correlation with the error {statistics.correlation(xs, ys):+.2f}; with the issue ratio "
          f"{statistics.correlation([r['issue'] for r in table], ys):+.2f}")
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    sys.exit(main())
