"""Every lab eager regime that misses issue 44's 8%, against its own noise floor (session 47, engineer noise44; a
diagnostic, no model input; nothing is fitted).

For each regime and GPU count (every count since mendB47, cold review B47 item 1) of the error-band rows
(trust/build.eager_held_out_rows, as the table builder reads them now: studies/eager_lab_modes.py --live's figures)
whose mean |error| misses 8%, and the two trust/noise.py marked before this rule (TP and FSDP host-bound at 2 GPUs):
  1. each table row's own processes: the llm-step documents in the row's bundle with its shape (the row's `shape`, as
     its heldout reader knows it: preset, layers, seq, micro-batch, micro-batches; and its ranks) and one variant (a file
     name less its repeat suffix -rK / -K), the group whose process medians' median (or mean) is the row's measured step;
     a row whose processes cannot be told is left out of the floor (counted; tests/test_trust_noise.py fails on one);
  2. the floor as trust/noise.py's (studies/tp_lease_noise.numbers: the log of each process's median step; one shape
     and variant = the row's label; one lease = the row's bundle): the process sd within a set, the lease term across
     sets, and the mean |error| a model exactly on each shape's mean scores on one process (empirical; normal);
  3. today's model on the SAME processes (the floor's own rows: those whose shape and variant ran more than once), each
     process's error = the row's today's prediction / the process's median - 1;
  4. the test of the difference: per process d = |model error| - |deviation from its shape's mean| (the floor's own
     term), its mean over the floor's processes, with a standard error clustered by shape (the processes of one shape
     share its mean: the shape's sum of d is the unit); the model is above its floor beyond what the repeats' spread
     allows when the mean d exceeds 2 se (trust/noise.EXCESS_SE);
  5. the row-level floor (cold review B47 item 3): a row's step is the median / mean of its n processes, so a model on
     each shape's mean misses a row by sqrt(2/pi) sqrt(process_sd^2 / n + lease_sd^2) on average (normal); its mean over
     the population's rows (a table row; a study's shape in one call) is what the per-row target is judged against;
     and the model's mean lease bias (each call's mean log error, each call once) with its se;
  6. the verdict by the ONE rule, trust/noise.verdict (docs/models/trust.md "Noise-limited or model-limited"): met
     where the rows reach the target, **thin** where they reach it pooled only (trust/thin, session 50: fewer than 3
     rows outside the largest set, the mean with each set weighing once over 8%, or the mean + 1 se over 8%: one set or
     no margin carries it; a verdict, not met; before session 50 printed for the record, judging nothing); per
     population: no floor (fewer than MIN_SHAPES shapes repeat), model-limited
     (the row-level floor under the target, the excess or the bias beyond 2 se), undecided: test too weak (2 se above
     the gap to resolve: the floor's margin over the target on the same processes, at least 2 points), else
     noise-limited; the regime is model-limited where any population is, else undecided where any is, else
     noise-limited where one is, else no floor. The rule and its thresholds were set with these regimes' numbers in
     view: development for these verdicts; the print ends with a sensitivity line (2.5 se; session 43's lease premise;
     a margin of 1 se; each distinct shape weighted once).
trust/noise.FLOOR_VERDICTS records the numbers; tests/test_trust_noise.py recomputes them.
    python studies/eager_noise_floors.py
"""

from __future__ import annotations

import importlib
import json
import math
import re
import statistics
import sys
from collections import defaultdict
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CAL = ROOT / "calibration"
TARGET_PCT = 8.0
MIN_SHAPES = 3      # shapes (and variants) that ran more than once: the clustered se needs >= 2 dof
REPEAT = re.compile(r"-r?\d+$")   # a file's repeat suffix: pp-1f1b-0.5b-r2, op-0.8b-2048x4-3
LABEL_TAIL = re.compile(r" \((?:h200|h100)[^)]*\)$| median of \d+ launches")


def _load(relative: str):
    """A study beside this one (studies/NAME.py) as a module, imported by its name from studies/."""
    if str(ROOT / "studies") not in sys.path:
        sys.path.insert(0, str(ROOT / "studies"))
    return importlib.import_module(Path(relative).stem)


@cache
def tp_study():
    return _load("studies/tp_lease_noise.py")


@cache
def step_documents(bundle: str) -> tuple[tuple[str, dict], ...]:
    """Every llm-step document under a bundle (runs/*.json, llm-step/*/stdout.txt, ...): (its path, the document)."""
    out = []
    for path in sorted((CAL / bundle).glob("**/*")):
        if not (path.suffix == ".json" or path.name == "stdout.txt") or path.name in ("manifest.json", "run.json"):
            continue
        try:
            doc = json.loads(path.read_text())
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(doc, dict) and doc.get("tool") == "llm-step" and isinstance(doc.get("model"), dict):
            out.append((str(path.relative_to(CAL)), doc))
    return tuple(out)


def _variant(path: str) -> str:
    """A process's variant in its bundle: its file (an llm-step folder for stdout.txt) less the repeat suffix."""
    p = Path(path)
    p = p.parent if p.name == "stdout.txt" else p.with_suffix("")
    return str(p.parent / REPEAT.sub("", p.name))


def row_processes(row: dict) -> list[tuple[str, float]]:
    """The processes behind one table row: [(path, median step ms)], found by the row's `shape` (heldout/eager.step_shape:
    preset, layers where set, seq, micro-batch, micro-batches where more than one; set by the heldout reader that made the
    row, not parsed from its label) and the variant group whose medians' median (or mean) is the row's measured step
    within 1e-6; [] where none is (tests/test_trust_noise.py fails on any such row)."""
    shape = row.get("shape")
    if shape is None:
        return []
    groups = defaultdict(list)
    for path, doc in step_documents(row["bundle"]):
        model = doc["model"]
        if (model.get("preset") != shape["preset"] or int(doc.get("world_size") or 1) != row["gpus"]
                or (shape["layers"] is not None and model.get("layers") != shape["layers"])):
            continue
        for s in doc.get("shapes") or []:
            if (s.get("status") == "ok" and s.get("median_step_s") and s.get("seq") == shape["seq"]
                    and s.get("micro_batch") == shape["micro_batch"]
                    and (shape["microbatches"] == 1 or int(s.get("microbatches") or (doc.get("pipeline") or {}).get("microbatches")
                                                           or 1) == shape["microbatches"])):
                groups[_variant(path)].append((path, s["median_step_s"] * 1e3))
    want = row["measured_s"] * 1e3
    for procs in groups.values():
        ms = [x for _, x in procs]
        if any(math.isclose(f(ms), want, rel_tol=1e-6) for f in (statistics.median, statistics.mean)):
            return procs
    return []


# the regimes whose study reads every lab process of the regime (any bundle, the table's sets and the rest): its module,
# and which of its processes are the regime's (single_host_noise keeps the host-bound ones)
STUDIES = {("llm | PyTorch eager | TP+host-bound | bf16", 2): "studies/tp_lease_noise.py",
           ("llm | PyTorch eager | FSDP+host-bound | bf16", 2): "studies/fsdp_lease_noise.py",
           ("llm | PyTorch eager | single+host-bound | bf16", 1): "studies/single_host_noise.py",
           ("llm | PyTorch eager | PP+host-bound | bf16", 2): "studies/pp_host_noise.py"}


def study_processes(key: str, gpus: int) -> list[dict] | None:
    """Every lab process of the regime its study reads (STUDIES), the model priced; None where no study reads them."""
    name = STUDIES.get((key, gpus))
    if name is None:
        return None
    rows = [r for r in _load(name).processes() if "err" in r and r.get("host_bound", True)]
    return [{k: r[k] for k in ("path", "call", "key", "ms", "err")} for r in rows]


@cache
def regime_rows() -> dict[tuple[str, int], list[dict]]:
    """(regime, GPUs) -> the table's rows as the builder reads them now, each with its today's error."""
    from simcluster.trust.build import eager_held_out_rows, eager_residuals

    rows = eager_held_out_rows()
    out = defaultdict(list)
    for row, res in zip(rows, eager_residuals(rows), strict=True):
        if res.family == "llm eager":
            out[(res.regime, int(res.scale))].append(row | {"err": res.today_error, "set": res.source})
    return dict(out)


def excess(procs: list[dict]) -> tuple[float, float, int]:
    """The model's mean |error| less the floor's on the same processes (mean d), its standard error clustered by shape,
    and the number of shapes (clusters)."""
    by = defaultdict(list)
    for p in procs:
        by[p["key"]].append(abs(p["err"]) - p["dev"])
    n, k = len(procs), len(by)
    mean = sum(sum(v) for v in by.values()) / n
    if k < 2:
        return mean, float("nan"), k
    var = k / (k - 1) * sum((sum(v) - len(v) * mean) ** 2 for v in by.values()) / n ** 2
    return mean, math.sqrt(var), k


def by_set(rows: list[dict]) -> dict[str, list[float]]:
    """Each set's rows' |error| in percent (trust/thin's sources in a lab regime)."""
    out = defaultdict(list)
    for r in rows:
        out[r["set"]].append(100 * abs(r["err"]))
    return dict(out)


def floor_of(key: str, gpus: int, rows: list[dict]) -> dict:
    """One regime's floor, model and verdict (the module's docstring, parts 1-5)."""
    from simcluster.trust.noise import verdict
    from simcluster.trust.thin import lab_figures

    procs, unresolved = [], []
    for i, r in enumerate(rows):
        found = row_processes(r)
        if not found:
            unresolved.append(r["label"])
            continue
        today_ms = (1 + r["err"]) * r["measured_s"] * 1e3
        label = LABEL_TAIL.sub("", r["label"])
        procs += [{"path": p, "call": r["bundle"], "key": label, "ms": ms, "err": today_ms / ms - 1, "set": r["bundle"],
                   "row": i} for p, ms in found]
    out = {"regime": key, "gpus": gpus, "rows": len(rows), "sets": len({r["set"] for r in rows}),
           "mean_abs_pct": 100 * statistics.mean(abs(r["err"]) for r in rows), "unresolved": unresolved,
           "bias_pct": 100 * statistics.mean(r["err"] for r in rows)}
    out["own"] = population(procs)
    wider = study_processes(key, gpus)
    out["study"] = None if wider is None else population(wider, STUDIES[(key, gpus)]) | {"name": STUDIES[(key, gpus)]}
    out["checks"] = tuple(p["check"] for p in (out["own"], out["study"]) if p is not None)
    # session 50 (issue 44's house rule, trust/thin): rows that meet the target pooled but rest on one set, or on no
    # 1-se margin, are thin: a verdict, not met
    lab = lab_figures(by_set(rows), TARGET_PCT)
    out["mean_se_pct"], out["thin_why"] = lab["se"], lab["why"]
    out["each_set_pct"], out["rows_outside_largest"] = lab["each_source_once_mean"], lab["rows_outside_largest"]
    thin = out["thin_why"]
    out["verdict"] = verdict(out["checks"], out["mean_abs_pct"], TARGET_PCT, thin=thin)
    # the sensitivity line (cold review B47 item 4): the same rule at 2.5 se, and with session 43's lease premise
    out["at_2_5_se"] = verdict(out["checks"], out["mean_abs_pct"], TARGET_PCT, se=2.5, thin=thin)
    out["with_premise"] = verdict(out["checks"], out["mean_abs_pct"], TARGET_PCT, premise=True, thin=thin)
    # cold review C47 item 3: an unknown lease term (across-set dof 0) taken as zero, the rule before mendC47; item 6:
    # met only with a margin, mean |error| + 1 se (the rows' sd of |error| / sqrt(rows)) at or under the target: the
    # floor rule's verdict on the miss the margin makes (thin names no such miss)
    out["lease_zero"] = verdict(out["checks"], out["mean_abs_pct"], TARGET_PCT, lease_zero=True, thin=thin)
    out["with_margin"] = verdict(out["checks"], out["mean_abs_pct"], TARGET_PCT, margin_pct=out["mean_se_pct"])
    # cold review B49 item 2: each distinct shape (heldout/eager.step_shape) weighted once, the mean of its rows' |error|
    # (a shape re-run on a later lease counts once); printed beside the row-weighted mean, judging nothing
    by_shape = defaultdict(list)
    for r in rows:
        by_shape[repr(sorted(r["shape"].items()))].append(100 * abs(r["err"]))
    out["shapes"] = len(by_shape)
    out["shape_weighted_pct"] = statistics.mean(statistics.mean(v) for v in by_shape.values())
    return out


def population(procs: list[dict], name: str = "the table rows' own processes") -> dict:
    """The floor of one population of processes (tp_lease_noise.numbers), today's model on the floor's own processes,
    the excess test, the row-level floor (each row's process count and the lease term), the model's mean lease bias,
    and the population's FloorCheck with its verdict (trust/noise.check_verdict: the one rule)."""
    from simcluster.trust.noise import FloorCheck, check_verdict

    shapes = defaultdict(set)
    for p in procs:
        shapes[p["key"]].add(p["path"])
    repeated = {k for k, v in shapes.items() if len(v) > 1}
    out = {"processes": len(procs), "repeated_shapes": len(repeated),
           "sets_with_repeats": sorted({p["call"].split("/")[0] for p in procs if p["key"] in repeated})}
    if len(repeated) < MIN_SHAPES:
        check = FloorCheck(name, len(procs), len(repeated), None)
        return out | {"check": check, "verdict": check_verdict(check, TARGET_PCT)}
    n = tp_study().numbers(procs, ())   # sets each process's deviation from its shape's mean (dev)
    same = [p for p in procs if p.get("dev") is not None]
    d, se, k = excess(same)
    # no shape ran twice in one set (process dof 0: TP x DP at 4 GPUs): the sd is not split, the across-set sd is the
    # total, and each row (one process) scores it
    ps, ls = (n["process_sd"], n["lease_sd"]) if n["process_dof"] else (n["across_sd"], 0.0)
    floor = (100 * n["floor_empirical"], 100 * math.sqrt(2 / math.pi * (ps ** 2 + ls ** 2)))
    rows = defaultdict(int)   # a row: one table row (own), or one shape in one call (a study's)
    for p in procs:
        rows[p.get("row", (p["call"], p["key"]))] += 1
    row_floor = 100 * statistics.mean(math.sqrt(2 / math.pi * (ps ** 2 / m + ls ** 2)) for m in rows.values())
    bias = tp_study().bias_and_floor(procs)
    bias_se = bias["bias_se"] if bias["calls"] > 1 else 0.0
    check = FloorCheck(name, len(procs), len(repeated), floor, 100 * statistics.mean(abs(p["err"]) for p in same),
                       100 * statistics.mean(p["dev"] for p in same), 100 * d, 100 * se, row_floor,
                       100 * bias["bias_mean"], 100 * bias_se, ls >= ps / 2 and bool(n["process_dof"]),
                       bool(n["across_dof"]))
    return out | {"process_sd": ps, "process_dof": n["process_dof"], "lease_sd": ls,
                  "across_dof": n["across_dof"], "floor_pct": floor, "floor_processes": len(same),
                  "model_same_pct": check.model_pct, "floor_same_pct": check.floor_same_pct,
                  "excess_pct": 100 * d, "excess_se_pct": 100 * se, "clusters": k, "row_floor_pct": row_floor,
                  "rows": len(rows), "bias_pct": check.bias_pct, "bias_se_pct": check.bias_se_pct,
                  "check": check, "verdict": check_verdict(check, TARGET_PCT)}


# the two regimes trust/noise.py marked noise-limited in session 43 (its NoiseFloor records, removed in session 48)
MARKED_S43 = {("llm | PyTorch eager | TP+host-bound | bf16", 2), ("llm | PyTorch eager | FSDP+host-bound | bf16", 2)}


def floors() -> list[dict]:
    """Every regime and GPU count that misses the target, each that meets it only thinly (trust/thin: one set carries it,
    or no 1-se margin; session 50: a verdict, not met), and those trust/noise.py marked before this rule (TP and FSDP
    host-bound at 2 GPUs, session 43), with its floor_of."""
    from simcluster.trust.thin import lab_figures

    out = []
    for (key, gpus), rows in sorted(regime_rows().items()):
        lab = lab_figures(by_set(rows), TARGET_PCT)
        if lab["mean"] > TARGET_PCT or lab["why"] or (key, gpus) in MARKED_S43:
            out.append(floor_of(key, gpus, rows))
    return out


def line(name: str, p: dict) -> str:
    head = f"  {name:34} {p['processes']:5d} {p['repeated_shapes']:4d} "
    if "floor_pct" not in p:
        return head + f"{'':60} {p['verdict']}"
    lo, hi = p["floor_pct"]
    lease = f"{p['lease_sd']:6.3f}" if p["check"].lease_known else f"{'n/a':>6}"
    return head + (f"{p['process_sd']:7.3f} {lease} {lo:6.1f}-{hi:4.1f}% {p['floor_processes']:4d} "
                   f"{p['model_same_pct']:5.1f}% {p['floor_same_pct']:5.1f}% {p['excess_pct']:+5.1f} (se {p['excess_se_pct']:.1f}, "
                   f"{p['excess_pct'] / p['excess_se_pct']:+.1f} se) "
                   + (f"{p['row_floor_pct']:5.1f}% " if p["check"].lease_known else f"{'unkn.':>6} ")
                   + (f"{p['bias_pct']:+5.1f} (se {p['bias_se_pct']:.1f})" if p["bias_se_pct"] else f"{'one call':>15}")
                   + f"  {p['verdict']}")


def main() -> int:
    found = floors()
    print(f"  {'population':34} {'procs':>5} {'rep.':>4} {'proc sd':>7} {'lease':>6} {'floor':>11} {'on':>4} {'model':>6} "
          f"{'floor':>6} {'excess (points)':>22} {'row fl.':>6} {'bias (log %)':>15}  verdict")
    for f in found:
        why = f" ({f['thin_why']})" if f["verdict"] == "thin" else ""
        print(f"{f['regime']} at {f['gpus']} GPU{'s' * (f['gpus'] > 1)}: {f['rows']} rows from {f['sets']} sets, "
              f"{f['mean_abs_pct']:.1f}% mean |error|: {f['verdict'].upper()}{why}")
        print(line("the table rows' own processes", f["own"]))
        if f["study"] is not None:
            print(line(f["study"]["name"], f["study"]))
    print("\nsensitivity (the rule was set with these regimes' numbers in view): the verdict at 2.5 se; with session 43's "
          "lease premise (lease_sd >= process_sd / 2, else undecided); with an unknown lease term (across-set dof 0) taken "
          "as zero (the rule before mendC47); met only with a margin (mean |error| + 1 se <= 8%); the mean |error| with each "
          "distinct shape weighted once (printed, judging nothing)")
    for f in found:
        print(f"  {f['regime']} at {f['gpus']}: {f['verdict']}; at 2.5 se {f['at_2_5_se']}; with the premise {f['with_premise']}; "
              f"lease unknown as zero {f['lease_zero']}; with a margin ({f['mean_abs_pct']:.2f} + {f['mean_se_pct']:.2f}%) "
              f"{f['with_margin']}; each of its {f['shapes']} shapes once {f['shape_weighted_pct']:.2f}%")
    print("\nthe sets whose processes repeat a shape; table rows whose processes could not be told apart (left out)")
    for f in found:
        print(f"  {f['regime']} at {f['gpus']}: own {', '.join(f['own']['sets_with_repeats']) or 'none'}"
              + (f"; unresolved: {'; '.join(f['unresolved'])}" if f["unresolved"] else ""))
        for p in (f["own"], f["study"]):
            if p is not None and "floor_pct" in p:
                print(f"    {p.get('name', 'own')}: process dof {p['process_dof']}, across-set dof {p['across_dof']}, "
                      f"{p['clusters']} shapes in the test")
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    sys.exit(main())
