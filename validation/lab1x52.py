"""Issue 44, session 52 (helper lab1x52): new held-out rows for the two host-bound one-GPU eager regimes, registered
before the runs. `python studies/eager_lab_modes.py --live` reads single+sac-op+host-bound **thin** (8 rows, 5 sets:
each set once 9.8%) and single+host-bound **NOT met** (13 rows, 8 sets, 9.0%: model-limited, hb49's process sd ~0.086
gives ~6.9% by itself). One registered 1 x H200 set (calibration/h200x1-lab1x52-2026-12-01, llm-step --mode single on
GPU 0, hb49's arguments): five shapes new to calibration/ (seqs 352 / 608 / 672 / 1056 / 1120, presets 0.3b to 3.1b),
two op host-bound and three single host-bound, three processes each (the process noise is the question).

    python validation/lab1x52.py --register calibration/BUNDLE/registered.yaml   # before the device call
    python validation/lab1x52.py [calibration/BUNDLE]                            # after: read-out and verdicts

The rows have heldout/eager_hostsingle's form (regime, ac_mode, processes, predicted.product): the read-out reads them
through that reader (what the lead's wiring gives) and prints each regime's verdict with validation/lab1x51.py's
figures (trust/thin.lab_figures, studies/eager_lab_modes.py's rule) over the rows of the sets the regime held at
registration plus these. Beside each regime's error it prints the noise floor these runs give (rule F). No model change.
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
from simcluster.heldout.registration import (  # noqa: E402
    mem_error,
    memory_verdict,
    noise_verdict,
    pooled_log_sd,
    read_run_set,
    registering_commit,
    set_main,
    write_registration,
)
from validation.lab1x51 import existing_residuals, show  # noqa: E402
from validation.lab_verdicts import move_lines, other_line  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x1-lab1x52-2026-12-01"
# (name, preset, seq, micro-batch, llm-step --ac-mode): op host-bound, then single (no checkpointing) host-bound
SHAPES = (("ophb-1b", "1b", 1056, 2, "op"), ("ophb-2b", "2b", 672, 2, "op"),
          ("hb-0.3b", "0.3b", 1120, 2, "none"), ("hb-1.1b", "1.1b", 608, 4, "none"), ("hb-3.1b", "3.1b", 352, 2, "none"))
PROCESSES = 3
REGIMES = ("single+sac-op+host-bound", "single+host-bound")
# the sets whose rows each regime held at registration (`python studies/eager_lab_modes.py --live` at 48976f09: 8 rows /
# 5 sets, 13 rows / 8 sets): rule V's 'today'; a set listed after this registration is counted apart, one line
TODAY_SETS = {"single+sac-op+host-bound": ["h200x1-hb49-2026-12-01", "h200x1-llm-lease3-2026-11-29",
                                           "h200x2-hostsingle-2026-11-30", "h200x2-opcheck-2026-11-30",
                                           "h200x2-opsplit-2026-11-30"],
              "single+host-bound": ["h200x1-hb49-2026-12-01", "h200x1-llm-compile-2026-11-29", "h200x1-llm-eager5-2026-11-29",
                                    "h200x2-eager-pphost-2026-11-29", "h200x2-eager-today-2026-11-30",
                                    "h200x2-hostsingle-2026-11-30", "h200x2-opcheck-2026-11-30", "llm-eager-regimes-2026-11-28"]}
# hb49's read (calibration/h200x1-hb49-2026-12-01/readout.txt, lines N and L): its process sd over 5 shapes x 3
# processes, and the lease sd of its three re-run shapes
HB49 = {"process_sd": 0.086, "process_dof": 10, "lease_sd": 0.065}
JUDGE = {"target_pct": 8.0, "mem_pct": 10.0, "f_level": 0.95}
RULES = {
    "measured": "each process's median step (llm-step --mode single on GPU 0, 5 warm-up and 20 timed steps, --profile 0; "
                "--ac-mode op for the op rows, none for the others, as hb49); a row's measured step the mean of its "
                "processes' (heldout/eager_hostsingle.held_out_rows, the error bands' reader)",
    "N": "pooled sd of the log of each process's median step over the processes of one shape, its dof, and the mean "
         "|error| that process noise alone gives a model exactly on each shape's mean, sqrt(2/pi) sd: ABOVE the target "
         "(target_pct) or below it",
    "S": "per shape, per regime and over all shapes: the sd of the log of the processes' median steps (pooled within "
         "shapes) against hb49's process sd (hb49.process_sd, hb49.process_dof dof): REPEATS if the variance ratio "
         "sd^2 / hb49.process_sd^2 lies inside the central f_level interval of F(dof, hb49.process_dof), else DIFFERS "
         "(SMALLER or LARGER); a shape with one process: NO DATA",
    "F": "per regime, the noise floor beside its error: a row (a shape's processes' mean, n processes) gives "
         "sqrt(2/pi) sqrt(sd^2 / n + hb49.lease_sd^2) mean |error| with a model exactly on the mean over leases, sd "
         "this regime's pooled process sd (S) -- printed with the process floor sqrt(2/pi) sd; reported, not judged",
    "P": "every process's peak memory (max_memory_allocated_bytes) within mem_pct of the registered range "
         "[steady_mem_GiB, peak_mem_GiB] (0 inside it) -> 'memory met', else 'memory not met'",
    "M": "per regime (trust/build.eager_residuals of the reader's rows: the registered flag), the mean |error| over "
         "this set's rows (error = today's prediction / measured - 1, today's = the registered: no model change), "
         "with F's floors beside it",
    "V": "per regime, studies/eager_lab_modes.py's verdict at 1 GPU (trust/thin.lab_figures, target_pct) over today's "
         "held-out rows of the regime's today_sets (trust/build.eager_held_out_rows at today's model; rows of other sets, "
         "listed after this registration, counted apart in one line) and with this set's rows added (one source): "
         "'NOT met' if the mean |error| exceeds the target, else 'thin' where lab_figures gives a why, else 'met'; the "
         "word after 'with these rows' is what the study prints once the lead lists the bundle "
         "(heldout/step_sets.REGISTERED_STEP_SETS); LIFTED (-> met), STAYS, SINKS (-> NOT met)",
}


def registration_rows() -> list[dict]:
    from simcluster.heldout.eager import MODE_HOST
    from simcluster.llm.host_bound import is_host_bound
    from validation.hostsingle import predict
    from validation.opcheck import trust_regime

    rows = []
    for name, preset, seq, mb, ac in SHAPES:
        p = predict(preset, seq, mb, ac, MODE_HOST, memory=True)
        flag = is_host_bound(p["host_share"])
        rows.append({"name": name, "regime": trust_regime(ac, flag), "mode": "single", "preset": preset, "seq": seq,
                     "micro_batch": mb, "compile": False, "ac_mode": ac, "microbatches": 1, "processes": PROCESSES,
                     "predicted": {"product": p | {"host_bound": flag}}})
    return rows


def register(path: Path) -> None:
    from simcluster.heldout.eager import MODE_HOST
    from validation.opcheck import host_terms

    commit = registering_commit(ROOT)
    doc = {"registered_at_commit": commit, "script": "validation/lab1x52.py --register",
           "calibration": {"gpu_card": "models/gpu/h200-sxm-interleaved.yaml", "host": str(MODE_HOST.relative_to(ROOT))},
           "product_host": host_terms(MODE_HOST), "judge": JUDGE, "hb49": HB49, "today_sets": TODAY_SETS, "rules": RULES,
           "rows": registration_rows()}
    write_registration(path, "# Predictions registered before the runs (issue 44, session 52); never edited after them.\n"
                       + yaml.safe_dump(doc, sort_keys=False, width=120))
    for r in doc["rows"]:
        p = r["predicted"]["product"]
        print(f"{r['name']:9} {r['preset']:4} {r['seq']}:{r['micro_batch']:<2} ac {r['ac_mode']:4} {p['step_ms']:8.2f} ms  "
              f"host share {p['host_share']:.3f}  memory {p['steady_mem_GiB']:.2f}..{p['peak_mem_GiB']:.2f} GiB  "
              f"{r['regime'].split(' | ')[2]}")
    print(f"registered {len(doc['rows'])} shapes x {PROCESSES} processes in {path} (model at {commit[:10]})")


def sd_line(groups: list[list[float]], hb49: dict, level: float) -> tuple[float | None, str]:
    """Rule S over groups of log steps: (the pooled sd or None, its line)."""
    from scipy.stats import f

    sd, dof = pooled_log_sd(groups)
    if sd is None:
        return None, "NO DATA: no shape ran in two processes"
    ratio, ref = (sd / hb49["process_sd"]) ** 2, hb49["process_dof"]
    lo, hi = f.ppf((1 - level) / 2, dof, ref), f.ppf((1 + level) / 2, dof, ref)
    word = "REPEATS" if lo <= ratio <= hi else "DIFFERS (SMALLER)" if ratio < lo else "DIFFERS (LARGER)"
    return sd, (f"{word}: process sd {sd:.3f} ({dof} dof) against hb49's {hb49['process_sd']:.3f} ({ref} dof): "
                f"sd within {hb49['process_sd'] * math.sqrt(lo):.3f}..{hb49['process_sd'] * math.sqrt(hi):.3f} repeats")


def floor_text(sd: float | None, n: int, lease_sd: float) -> str:
    """Rule F: the row floor (n processes a row, hb49's lease sd) and the process floor of process sd `sd`."""
    if sd is None:
        return "noise floor: NO DATA"
    k = math.sqrt(2 / math.pi)
    return (f"noise floor: a row of {n} processes {k * math.sqrt(sd ** 2 / n + lease_sd ** 2):.1%} "
            f"(process sd {sd:.3f}, lease sd {lease_sd:.3f}), a process {k * sd:.1%}")


def read_out(bundle: Path) -> dict:
    from simcluster.heldout.eager_hostsingle import held_out_rows
    from simcluster.trust.build import eager_residuals
    from validation.hostsingle import read_processes

    reg = read_run_set(bundle, {"script": "validation/lab1x52.py --register"})
    try:
        judge = {k: float(reg["judge"][k]) for k in JUDGE}
        hb49 = {k: float(reg["hb49"][k]) for k in HB49}
        hb49["process_dof"] = int(hb49["process_dof"])
        today_sets = {regime: set(map(str, reg["today_sets"][regime])) for regime in REGIMES}
    except (KeyError, TypeError, ValueError) as exc:
        raise SimclusterError(f"{bundle / 'registered.yaml'}: missing or bad key ({type(exc).__name__}: {exc})") from None
    procs, left = read_processes(bundle, reg, ("product",))
    verdicts: dict[str, str] = {}
    for p in procs:
        pred = p["pred"] = p["predicted"]["product"]   # lab1x51's show prints p["pred"]
        p["error"] = float(pred["step_ms"]) / 1e3 / p["measured_s"] - 1
        p["mem_err"] = (None if p["peak_GiB"] is None else
                        mem_error(float(pred["steady_mem_GiB"]), float(pred["peak_mem_GiB"]), p["peak_GiB"]))
    verdicts["N"] = noise_verdict(procs, judge["target_pct"] / 100)[1]
    logs = {}
    for p in procs:
        logs.setdefault(p["name"], []).append(math.log(p["measured_s"]))
    for name, steps in logs.items():
        verdicts[f"S {name}"] = sd_line([steps], hb49, judge["f_level"])[1]
    verdicts["S all"] = sd_line(list(logs.values()), hb49, judge["f_level"])[1]
    verdicts["P"] = memory_verdict([p["mem_err"] for p in procs if p["mem_err"] is not None], judge["mem_pct"])
    mine = eager_residuals(held_out_rows(bundle))
    live = existing_residuals(bundle.name)
    for regime in REGIMES:
        key = f"llm | PyTorch eager | {regime} | bf16"
        names = {p["name"] for p in procs if p["regime"] == key}
        sd, verdicts[f"S {regime}"] = sd_line([logs[n] for n in sorted(names)], hb49, judge["f_level"])
        rows = [r for r in mine if r.regime == key]
        errs = [r.today_error for r in rows]
        n = round(statistics.mean(len(logs[n]) for n in names)) if names else 0
        verdicts[f"M {regime}"] = ("NO DATA: no row ran" if not rows else
                                   f"{statistics.mean(map(abs, errs)):.1%} mean |error| over {len(rows)} new rows "
                                   f"(errors {', '.join(f'{e:+.1%}' for e in errs)}); {floor_text(sd, n, hb49['lease_sd'])}")
        verdicts |= move_lines(regime, mine, live, today_sets[regime], judge["target_pct"])
    return {"rows": procs, "left": left, "verdicts": verdicts | other_line(mine, REGIMES)}


def main(argv: list[str]) -> int:
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
