"""Issue 44, session 42: eager DTensor TP at 2 GPUs, model error or lease noise? A registered 2 x H200 set
(calibration/h200x2-eager-tpnoise-2026-11-30): repeats inside one lease measured beside the model's error.

    python validation/eager_tpnoise.py --register calibration/BUNDLE/registered.yaml   # before the device call
    python validation/eager_tpnoise.py [calibration/BUNDLE]                            # after: read-out and verdicts

studies/tp_lease_noise.py (every 2-rank TP process under calibration/h200x2-*) puts the spread of one shape's process
medians within one lease at sd 0.080 of the log (12 dof) and a lease term beyond it at 0.106; one process mostly runs
its longer sequence slower (21 of 25 pairs, median +8.5%) where the model moves them +2.4%, but the longer shape ran
second in 23 of those 25. PROCESSES: `simcluster.runner.llm_step --mode tp` (torchrun, 2 ranks, 5 warm-up, 10 timed
steps) of the 2b preset with its sealed shapes 2048:2 and 4096:1 in one process, three processes in each order
(a: 2048:2 first, b: 4096:1 first), alternating; then 3b 4096:1 (the shape two sealed leases put 34% apart) while the
budget lasts. Registered: today's model's step and host share per shape (heldout/eager_regimes.regime_predict, the
product's host fits, calibration/h200x2-llm-host-2026-11-23) and the study's numbers the rules read.
RULES (fixed at registration, in registered.yaml): N, S and M below (read_out). No fitting after; the rows do not
enter the error bands (they repeat shapes the bands hold, six processes of one lease).
"""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.heldout.eager import _document  # noqa: E402
from simcluster.heldout.registration import pooled_log_sd, print_verdicts, read_run_set, registering_commit, set_main, write_registration  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x2-eager-tpnoise-2026-11-30"
SHAPES = (("2b", 2048, 2), ("2b", 4096, 1), ("3b", 4096, 1))
# the process stems of device_run.sh (NAME.json): order a runs 2048:2 then 4096:1, order b the reverse
PROCESSES = {"a-r1": ("2b", "a"), "b-r1": ("2b", "b"), "a-r2": ("2b", "a"), "b-r2": ("2b", "b"), "a-r3": ("2b", "a"),
             "b-r3": ("2b", "b"), "3b-r1": ("3b", ""), "3b-r2": ("3b", "")}
STUDY = {"process_sd": 0.080, "process_dof": 12, "lease_sd": 0.106, "floor_normal_pct": 10.6, "target_pct": 8.0,
         "seq_pairs_median_pct": 8.5}   # python studies/tp_lease_noise.py (studies/tp_lease_noise.txt) at registration
LEVEL = 0.90   # N: the chi-square interval of the study's sd at the set's dof
MIN_EFFECT = 0.03   # S: an effect smaller than 3% of the step is not called, whatever its standard error


def predicted() -> list[dict]:
    from simcluster.heldout.eager_regimes import registered_row

    return [registered_row(preset, seq, mb, "tp") for preset, seq, mb in SHAPES]


def register(path: Path) -> None:
    commit = registering_commit(ROOT)
    rows = predicted()
    doc = {"registered_at_commit": commit, "script": "validation/eager_tpnoise.py --register",
           "calibration": {"gpu_card": "models/gpu/h200-sxm-interleaved.yaml",
                           "collective_card": "models/collective/h200x2-primitives.yaml",
                           "host": {"h200": "calibration/h200x2-llm-host-2026-11-23"}},
           "study": STUDY,
           "rules": {
               "N": "pooled sd of the log of rank 0's median step over processes of one shape (shapes with >= 2) inside "
                    "the 90% chi-square interval of study.process_sd at its dof -> 'process noise as the study: HOLDS'; "
                    "below -> 'LOWER'; above -> 'HIGHER'",
               "S": "d = log(median 4096:1 / median 2048:2) per 2b process; s = (mean_a + mean_b) / 2 (the sequence), "
                    "o = (mean_a - mean_b) / 2 (the second shape of a process); se = sd_d * sqrt(1/n_a + 1/n_b) / 2 with "
                    "sd_d pooled within a and b; an effect is called when > max(2 se, 0.03), else 'not seen'",
               "M": "error = predicted / measured - 1 per process and shape; mean |error| <= study.target_pct -> "
                    "'TP 2 within the target on this lease', else 'not within'; reported beside it: the lease's mean "
                    "log error and the spread of the processes' errors",
               "measured": "rank 0's median step of each process (5 warm-up, 10 timed steps)"},
           "rows": rows}
    write_registration(path, "# Predictions registered before the runs (issue 44, session 42); never edited after them.\n"
                       + yaml.safe_dump(doc, sort_keys=False, width=120))
    for r in rows:
        print(f"{r['preset']} {r['seq']}:{r['micro_batch']}  {r['predicted']['step_ms']:8.2f} ms  host share "
              f"{r['predicted']['host_share']}")
    print(f"registered {len(rows)} shapes in {path} (model at {commit[:10]})")


def read_processes(bundle: Path) -> tuple[dict[str, dict], list[str]]:
    """{stem: {(seq, micro_batch): median step s, 'order': [(seq, mb), ...]}} of each process that ran its preset's
    registered shapes under tp on 2 ranks, and a line per stem left out."""
    got, left = {}, []
    for stem, (preset, _) in PROCESSES.items():
        path = bundle / "runs" / f"{stem}.json"
        if not path.is_file():
            left.append(f"{stem}: no runs/{stem}.json (not run: the budget guard, or it failed)")
            continue
        doc, why = _document(path.read_text(errors="replace"))
        if doc is None:
            left.append(f"{stem}: {why or 'no llm-step document (the run failed)'}")
            continue
        if doc.get("mode") != "tp" or doc.get("world_size") != 2 or (doc.get("model") or {}).get("preset") != preset:
            left.append(f"{stem}: not tp / 2 ranks / {preset} (mode {doc.get('mode')}, world {doc.get('world_size')})")
            continue
        try:   # a partial document (a shape without its seq / micro_batch): the process is left out, in one line
            order = [(int(s["seq"]), int(s["micro_batch"])) for s in doc.get("shapes", [])]
        except (KeyError, TypeError, ValueError) as exc:
            left.append(f"{stem}: a shape without a usable seq / micro_batch ({type(exc).__name__}: {exc}; partial document)")
            continue
        shapes = {}
        for s, key in zip(doc.get("shapes", []), order, strict=True):
            if s.get("status") == "ok" and isinstance(s.get("median_step_s"), (int, float)) and s["median_step_s"] > 0:
                shapes[key] = float(s["median_step_s"])
        if not shapes:
            left.append(f"{stem}: no timed shape")
            continue
        got[stem] = shapes | {"order": order}
    return got, left



def read_out(bundle: Path) -> dict:
    reg = read_run_set(bundle)
    try:
        study = reg["study"]
        pred = {(r["preset"], int(r["seq"]), int(r["micro_batch"])): float(r["predicted"]["step_ms"]) / 1e3 for r in reg["rows"]}
        sd0, target = float(study["process_sd"]), float(study["target_pct"]) / 100
    except (KeyError, TypeError, ValueError) as exc:
        raise SimclusterError(f"{bundle / 'registered.yaml'}: missing or bad key ({type(exc).__name__}: {exc})") from None
    procs, left = read_processes(bundle)
    rows = [{"process": stem, "preset": PROCESSES[stem][0], "seq": seq, "mb": mb, "measured_s": t,
             "predicted_s": pred[(PROCESSES[stem][0], seq, mb)]}
            for stem, shapes in procs.items() for (seq, mb), t in ((k, v) for k, v in shapes.items() if k != "order")
            if (PROCESSES[stem][0], seq, mb) in pred]
    verdicts = {}
    groups = [[math.log(r["measured_s"]) for r in rows if (r["preset"], r["seq"], r["mb"]) == key] for key in pred]
    sd, dof = pooled_log_sd(groups)
    if sd is None:
        verdicts["N"] = "NO DATA: no shape ran in two processes"
    else:
        from scipy.stats import chi2

        lo, hi = (sd0 * math.sqrt(chi2.ppf(q, dof) / dof) for q in ((1 - LEVEL) / 2, (1 + LEVEL) / 2))
        word = "HOLDS" if lo <= sd <= hi else "LOWER" if sd < lo else "HIGHER"
        verdicts["N"] = f"process noise as the study: {word} (sd {sd:.3f}, {dof} dof; interval {lo:.3f}..{hi:.3f} around {sd0:.3f})"
    d = {o: [math.log(s[(4096, 1)] / s[(2048, 2)]) for stem, s in procs.items()
             if PROCESSES[stem][1] == o and (4096, 1) in s and (2048, 2) in s] for o in ("a", "b")}
    if not (d["a"] and d["b"]) or len(d["a"]) + len(d["b"]) < 3:
        verdicts["S"] = f"NO DATA: {len(d['a'])} order-a and {len(d['b'])} order-b processes with both shapes"
    else:
        sd_d, _ = pooled_log_sd([d["a"], d["b"]])
        ma, mb_ = statistics.mean(d["a"]), statistics.mean(d["b"])
        s, o = (ma + mb_) / 2, (ma - mb_) / 2
        se = sd_d * math.sqrt(1 / len(d["a"]) + 1 / len(d["b"])) / 2
        call = max(2 * se, MIN_EFFECT)
        verdicts["S"] = (f"sequence (4096:1 over 2048:2) {s:+.3f}: {'SEEN' if abs(s) > call else 'not seen'}; second shape of "
                         f"a process {o:+.3f}: {'SEEN' if abs(o) > call else 'not seen'} (se {se:.3f}, called beyond {call:.3f};"
                         f" model {math.log(pred[('2b', 4096, 1)] / pred[('2b', 2048, 2)]):+.3f})")
    if rows:
        errs = [r["predicted_s"] / r["measured_s"] - 1 for r in rows]
        mean_abs = statistics.mean(abs(e) for e in errs)
        bias = statistics.mean(math.log(1 + e) for e in errs)
        verdicts["M"] = (f"TP 2 {'within' if mean_abs <= target else 'not within'} the target on this lease: mean |error| "
                         f"{mean_abs:.1%} over {len(rows)} (process, shape) rows, target {target:.0%}; lease bias "
                         f"{math.exp(bias) - 1:+.1%}, errors {min(errs):+.1%}..{max(errs):+.1%}")
    else:
        verdicts["M"] = "NO DATA: no process ran"
    return {"rows": rows, "left": left, "verdicts": verdicts}


def show(result: dict) -> None:
    for r in result["rows"]:
        print(f"{r['process']:6} {r['preset']} {r['seq']}:{r['mb']}  measured {r['measured_s'] * 1e3:8.1f} ms  registered "
              f"{r['predicted_s'] * 1e3:8.1f} ms  error {r['predicted_s'] / r['measured_s'] - 1:+.1%}")
    print_verdicts(result["verdicts"], result["left"])


def main(argv: list[str]) -> int:
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
