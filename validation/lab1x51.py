"""Issue 44, session 51 (helper lab1x51): lift or sink the thin one-GPU eager regimes with new rows, registered before
the runs. `python studies/eager_lab_modes.py --live` reads single+compile+ckpt (5 rows, 2 sets), single+sac-op (14 rows,
8 sets) and single+sac-op+host-bound (8 rows, 5 sets) **thin** (trust/thin: met pooled only). One registered 1 x H200 set
(calibration/h200x1-lab1x51-2026-12-01, llm-step --mode single on GPU 0): five shapes new to calibration/ (seqs 736 /
864 / 928, presets 0.8b to 3b), two processes each, the runner's existing modes and the earlier sets' arguments.

    python validation/lab1x51.py --register calibration/BUNDLE/registered.yaml   # before the device call
    python validation/lab1x51.py [calibration/BUNDLE]                            # after: read-out and verdicts

Part C (compiled, every block checkpointed: --compile --compile-scope layer --ac-mode full, as compilefsdp / compileac's
single variant) is registered in heldout/eager_compilefsdp's form (variant, flat `predicted`: its reader); part E (op
selective checkpointing, --ac-mode op, as hostsingle / opcheck / opsplit / hb49) in heldout/eager_hostsingle's form
(regime, ac_mode, predicted.product: its reader, parts=("E",)). The read-out reads the new rows through those very
readers and trust/build.eager_residuals, adds them to the held-out rows the table takes today (eager_held_out_rows, this
bundle's own rows left out should the lead have listed it) and prints each regime's verdict with trust/thin.lab_figures,
studies/eager_lab_modes.py's rule: what that study prints once the lead lists the bundle. No model change.
"""

from __future__ import annotations

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
    print_verdicts,
    read_run_set,
    registering_commit,
    set_main,
    write_registration,
)

BUNDLE = ROOT / "calibration" / "h200x1-lab1x51-2026-12-01"
# (name, part, preset, seq, micro-batch): part C compiled + every block checkpointed, part E --ac-mode op
SHAPES = (("c-3b", "C", "3b", 864, 4), ("c-0.8b", "C", "0.8b", 928, 16),
          ("op-1b", "E", "1b", 864, 8), ("op-2b", "E", "2b", 736, 8), ("op-0.8b", "E", "0.8b", 864, 16))
PROCESSES = 2
EAGER = "llm | PyTorch eager | {} | bf16"
# the thin regimes this set's rows enter (single+sac-op+host-bound gets none: README "Why these shapes")
REGIMES = ("single+compile+ckpt", "single+sac-op")
# the sets whose rows each regime held at registration (`python studies/eager_lab_modes.py --live` at 97a9edf7: 5 rows /
# 2 sets, 14 rows / 8 sets): rule V's 'today', so that a set listed after this one does not move this read-out (its rows
# are counted apart, one line)
TODAY_SETS = {"single+compile+ckpt": ["h200x2-compileac-2026-11-30", "h200x2-compilefsdp-2026-11-30"],
              "single+sac-op": ["h200x1-llm-compile2-2026-11-29", "h200x1-llm-lease3-2026-11-29",
                                "h200x1-llm-ophost2-2026-11-29", "h200x1-llm-sac-2026-11-29", "h200x2-eager-today-2026-11-30",
                                "h200x2-hostsingle-2026-11-30", "h200x2-opcheck-2026-11-30", "h200x2-opsplit-2026-11-30"]}
JUDGE = {"target_pct": 8.0, "mem_pct": 10.0}
RULES = {
    "measured": "each process's median step (llm-step --mode single on GPU 0; part C: --compile --compile-scope layer "
                "--ac-mode full, 3 warm-up and 5 timed steps, as compileac; part E: --ac-mode op, 5 warm-up and 20 timed "
                "steps, as hb49; --profile 0); a row's measured step the mean of its processes' (the error bands' readers: "
                "heldout/eager_compilefsdp for part C, heldout/eager_hostsingle parts=('E',) for part E)",
    "N": "pooled sd of the log of each process's median step over the processes of one shape, its dof, and the mean "
         "|error| that process noise alone gives a model exactly on each shape's mean, sqrt(2/pi) sd: ABOVE the target "
         "(target_pct) or below it; printed per part too",
    "P": "every process's peak memory (max_memory_allocated_bytes) within mem_pct of the registered range "
         "[steady_mem_GiB, peak_mem_GiB] (0 inside it) -> 'memory met', else 'memory not met'",
    "M": "per regime (trust/build.eager_residuals of the readers' rows: the registered flag and mode), the mean |error| "
         "over this set's rows (error = today's prediction / measured - 1, today's = the registered: no model change)",
    "V": "per regime, studies/eager_lab_modes.py's verdict at 1 GPU (trust/thin.lab_figures, target_pct) over today's "
         "held-out rows of the regime's today_sets (trust/build.eager_held_out_rows at today's model; rows of other sets, "
         "listed after this registration, counted apart in one line) and with this set's rows added "
         "(one source): 'NOT met' if the mean |error| exceeds the target, else 'thin' where lab_figures gives a why "
         "(fewer than 3 rows outside the largest set, each set once over the target, mean + 1 se over the target), else "
         "'met'; the word after 'with these rows' is what the study prints once the lead lists the bundle "
         "(heldout/step_sets.REGISTERED_STEP_SETS); LIFTED (thin -> met), STAYS, SINKS (thin -> NOT met)",
}


def regime_key(mode: str) -> str:
    return EAGER.format(mode)


def registration_rows() -> list[dict]:
    from simcluster.heldout import eager_compilefsdp as compilefsdp
    from simcluster.heldout.eager import MODE_HOST
    from simcluster.llm.host_bound import is_host_bound
    from validation.hostsingle import predict

    rows = []
    for name, part, preset, seq, mb in SHAPES:
        if part == "C":
            p = compilefsdp.predict(preset, seq, mb, "single")
            mode = "single+compile+ckpt" + ("+host-bound" if p["host_bound"] else "")
            rows.append({"name": name, "part": part, "regime": regime_key(mode), "variant": "single",
                         "processes": PROCESSES, "preset": preset, "seq": seq, "micro_batch": mb, "mode": "single+ckpt",
                         "runner_mode": "single", "ranks": 1, "compile_scope": "layer", "ac_mode": "full", "predicted": p})
        else:
            p = predict(preset, seq, mb, "op", MODE_HOST, memory=True)
            flag = is_host_bound(p["host_share"])
            rows.append({"name": name, "part": part, "regime": regime_key("single+sac-op" + "+host-bound" * flag),
                         "mode": "single", "preset": preset, "seq": seq, "micro_batch": mb, "compile": False,
                         "ac_mode": "op", "microbatches": 1, "processes": PROCESSES,
                         "predicted": {"product": p | {"host_bound": flag}}})
    return rows


def register(path: Path) -> None:
    from simcluster.heldout.eager import MODE_HOST
    from validation.opcheck import host_terms

    commit = registering_commit(ROOT)
    doc = {"registered_at_commit": commit, "script": "validation/lab1x51.py --register",
           "calibration": {"gpu_card": "models/gpu/h200-sxm-interleaved.yaml", "host": str(MODE_HOST.relative_to(ROOT)),
                           "compile_host": "heldout/eager_compilefsdp.fits (FLAG_HOSTS' compile fit at MODE_HOST's speed)"},
           "product_host": host_terms(MODE_HOST), "judge": JUDGE, "today_sets": TODAY_SETS, "rules": RULES,
           "rows": registration_rows()}
    write_registration(path, "# Predictions registered before the runs (issue 44, session 51); never edited after them.\n"
                       + yaml.safe_dump(doc, sort_keys=False, width=120))
    for r in doc["rows"]:
        p = r["predicted"] if r["part"] == "C" else r["predicted"]["product"]
        print(f"{r['name']:8} {r['part']} {r['preset']:4} {r['seq']}:{r['micro_batch']:<3} {p['step_ms']:8.2f} ms  host share "
              f"{p['host_share']:.3f}  memory {p['steady_mem_GiB']:.2f}..{p['peak_mem_GiB']:.2f} GiB  {r['regime'].split(' | ')[2]}")
    print(f"registered {len(doc['rows'])} shapes x {PROCESSES} processes in {path} (model at {commit[:10]})")


def read_processes(bundle: Path, reg: dict) -> tuple[list[dict], list[str]]:
    """Every process that ran its registered row: {name, part, regime, key, measured_s, peak_GiB, pred: the registered
    prediction (step_ms, steady / peak memory)}, and a line per process left out (the readers' own checks)."""
    from simcluster.heldout import eager_compilefsdp as compilefsdp
    from validation import hostsingle, nosync

    try:
        c_regs = [r for r in reg["rows"] if r["part"] == "C"]
        e_regs = [r for r in reg["rows"] if r["part"] == "E"]
        for r in c_regs:
            float(r["predicted"]["step_ms"]), float(r["predicted"]["peak_mem_GiB"]), int(r["processes"])
    except (KeyError, TypeError, ValueError) as exc:
        raise SimclusterError(f"{bundle / 'registered.yaml'}: rows: missing or bad key ({type(exc).__name__}: {exc})") from None
    c_procs, left = nosync.read_processes(bundle, c_regs, step_of=compilefsdp.process_step)
    e_procs, e_left = hostsingle.read_processes(bundle, {"rows": e_regs}, ("product",))
    out = [{"name": p["row"]["name"], "part": "C", "regime": p["row"]["regime"], "key": p["row"]["name"],
            "measured_s": p["step_s"], "peak_GiB": p["peak_GiB"], "pred": p["row"]["predicted"]} for p in c_procs]
    out += [{"name": p["name"], "part": "E", "regime": p["regime"], "key": p["name"], "measured_s": p["measured_s"],
             "peak_GiB": p["peak_GiB"], "pred": p["predicted"]["product"]} for p in e_procs]
    return out, left + e_left


def new_rows(bundle: Path) -> list[dict]:
    """This set's held-out rows as the lead's wiring would give them (the two readers, module docstring)."""
    from simcluster.heldout import eager_compilefsdp, eager_hostsingle

    return eager_compilefsdp.held_out_rows(bundle, parts=("C",)) + eager_hostsingle.held_out_rows(bundle, parts=("E",))


def existing_residuals(name: str) -> list:
    """Today's held-out eager residuals (trust/build, as studies/eager_lab_modes.py --live reads them), bundle `name`'s left out."""
    from simcluster.trust.build import eager_held_out_rows, eager_residuals

    return [r for r in eager_residuals(eager_held_out_rows()) if r.source != name]


def verdict(residuals: list, regime: str, target_pct: float) -> dict | None:
    """studies/eager_lab_modes.py's figures of `regime` at 1 GPU over `residuals` (None: no row)."""
    from simcluster.trust.thin import lab_figures

    per_set: dict[str, list[float]] = {}
    for r in residuals:
        if r.regime == regime and r.family == "llm eager" and r.scale == 1:
            per_set.setdefault(r.source, []).append(100 * abs(r.today_error))
    if not per_set:
        return None
    lab = lab_figures(per_set, target_pct)
    word = "NOT met" if lab["mean"] > target_pct else "thin" if lab["why"] else "met"
    return lab | {"word": word, "rows": sum(map(len, per_set.values())), "sets": len(per_set)}


def figures_text(v: dict) -> str:
    return (f"{v['word']} ({v['rows']} rows, {v['sets']} sets, mean |error| {v['mean']:.1f}%, + 1 se {v['mean'] + v['se']:.1f}%, "
            f"each set once {v['each_source_once_mean']:.1f}%, {v['rows_outside_largest']} rows outside the largest set"
            + (f"; {v['why']}" if v["why"] else "") + ")")


def read_out(bundle: Path) -> dict:
    from simcluster.trust.build import eager_residuals

    reg = read_run_set(bundle, {"script": "validation/lab1x51.py --register"})
    try:
        judge = {k: float(reg["judge"][k]) for k in JUDGE}
        today_sets = {regime: set(map(str, reg["today_sets"][regime])) for regime in REGIMES}
    except (KeyError, TypeError, ValueError) as exc:
        raise SimclusterError(f"{bundle / 'registered.yaml'}: missing or bad key ({type(exc).__name__}: {exc})") from None
    procs, left = read_processes(bundle, reg)
    target, verdicts = judge["target_pct"] / 100, {}
    for p in procs:
        p["error"] = float(p["pred"]["step_ms"]) / 1e3 / p["measured_s"] - 1
        p["mem_err"] = (None if p["peak_GiB"] is None else
                        mem_error(float(p["pred"]["steady_mem_GiB"]), float(p["pred"]["peak_mem_GiB"]), p["peak_GiB"]))
    _, verdicts["N"] = noise_verdict(procs, target)
    for part in ("C", "E"):
        verdicts[f"N {part}"] = noise_verdict([p for p in procs if p["part"] == part], target)[1]
    verdicts["P"] = memory_verdict([p["mem_err"] for p in procs if p["mem_err"] is not None], judge["mem_pct"])
    mine = eager_residuals(new_rows(bundle))
    live = existing_residuals(bundle.name)
    for regime in REGIMES:
        key, rows = regime_key(regime), [r for r in mine if r.regime == regime_key(regime)]
        before = [r for r in live if r.regime == key and r.source in today_sets[regime]]
        later = sorted({r.source for r in live if r.regime == key and r.scale == 1 and r.source not in today_sets[regime]})
        errs = [r.today_error for r in rows]
        verdicts[f"M {regime}"] = ("NO DATA: no row ran" if not rows else
                                   f"{statistics.mean(map(abs, errs)):.1%} mean |error| over {len(rows)} new rows "
                                   f"(errors {', '.join(f'{e:+.1%}' for e in errs)})")
        was, now = verdict(before, key, judge["target_pct"]), verdict(before + mine, key, judge["target_pct"])
        move = ("NO DATA" if was is None or now is None else
                "LIFTED" if was["word"] != "met" and now["word"] == "met" else
                "SINKS" if was["word"] != "NOT met" and now["word"] == "NOT met" else
                "STAYS" if was["word"] == now["word"] else f"{was['word']} -> {now['word']}")
        verdicts[f"V {regime}"] = (f"{move}: with these rows {figures_text(now) if now else 'no row'}; today "
                                   f"{figures_text(was) if was else 'no row'}")
        if later:
            verdicts[f"V {regime} later"] = f"not counted (listed after this registration): {', '.join(later)}"
    others = sorted({r.regime.split(' | ')[2] for r in mine} - set(REGIMES))
    if others:
        verdicts["V other"] = f"rows in regimes this set did not aim at (registered flags): {', '.join(others)}"
    return {"rows": procs, "left": left, "verdicts": verdicts}


def show(result: dict) -> None:
    for p in result["rows"]:
        mem = "" if p["mem_err"] is None else f" ({p['mem_err']:+.1%})"
        print(f"{p['name']:8} {p['regime'].split(' | ')[2]:26} measured {p['measured_s'] * 1e3:8.1f} ms  predicted "
              f"{float(p['pred']['step_ms']):8.1f} ms ({p['error']:+.1%})  peak "
              + ("-" if p["peak_GiB"] is None else f"{p['peak_GiB']:.2f} GiB{mem}"))
    print_verdicts(result["verdicts"], result["left"])


def main(argv: list[str]) -> int:
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
