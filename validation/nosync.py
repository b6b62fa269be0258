"""Issue 44, session 45: FSDP2 gradient accumulation, reduced every micro-batch or once a step (no-sync). A registered
2 x H200 set (calibration/h200x2-nosync-2026-11-30): three shapes new to calibration, each run with 4 micro-batches per
step under FSDP2's default (sync: a reduce-scatter per layer per micro-batch) and under no-sync
(set_requires_gradient_sync(False) on all but the last micro-batch: llm/grad_sync.py), two processes each.

    python validation/nosync.py --register calibration/h200x2-nosync-2026-11-30/registered.yaml   # before the call
    python validation/nosync.py [calibration/h200x2-nosync-2026-11-30]                            # after: the read-out

PROCESSES: `simcluster.runner.llm_step --mode fsdp --grad-accum 4 [--no-sync]` (torchrun, 2 ranks, 3 warm-up and 6
timed steps, each step 4 micro-batches, --profile 0), one shape per process; the device script runs round 1 (each shape
sync then no-sync) then round 2. Registered: the product's step (as `simcluster run` answers it: framework torch with
the product's host fits, heldout/eager_regimes.registered_row), host share and stage-0 memory of each (shape, variant),
and the rules below; nothing fitted on the runs after.
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
from simcluster.heldout.eager_nosync import MICROBATCHES, process_step  # noqa: E402
from simcluster.heldout.registration import (  # noqa: E402
    bias_line,
    mem_error,
    memory_verdict,
    pooled_log_sd,
    print_verdicts,
    read_run_set,
    registering_commit,
    set_main,
    write_registration,
)

BUNDLE = ROOT / "calibration" / "h200x2-nosync-2026-11-30"
PROCESSES = 2
# (preset, seq, micro_batch, why): one GPU-bound, one host-bound, one host-bound of another width (seqs new to calibration)
SHAPES = (("1b", 2112, 4, "GPU-bound (predicted host share 0.05)"),
          ("1.1b", 1088, 1, "host-bound (predicted host share 0.91)"),
          ("0.5b", 2688, 1, "host-bound (predicted host share 0.94)"))
VARIANTS = {"sync": "fsdp", "nosync": "fsdp+nosync"}   # process stem suffix -> heldout/eager_regimes.layout_of mode
JUDGE = {"target_pct": 8.0, "mem_pct": 10.0, "bias_band": 0.05, "diff_pct": 3.0, "none_pct": 2.0}
RULES = {
    "measured": "rank 0's median step of each process (3 warm-up, 6 timed steps of 4 micro-batches); a process the budget "
                "guard skipped or that failed is left out and said",
    "N": "pooled sd of the log of the measured step over the processes of each (shape, variant) with >= 2, its dof, and "
         "the mean |error| process noise alone gives, sqrt(2/pi) sd: ABOVE the target (target_pct) or below",
    "M": "mean |error| (predicted / measured - 1) over every process <= target_pct -> 'within', else 'not within'; also "
         "reported per variant",
    "B": "lease bias over every process (heldout/registration.bias_line, band bias_band): FAST, SLOW, NONE or UNDECIDED",
    "P": "rank 0's peak (max_memory_allocated_bytes) of every process within mem_pct of the registered range "
         "[steady_mem_GiB, peak_mem_GiB] (0 inside) -> 'memory met', else 'not met'",
    "S": "per shape, the no-sync step over the sync one: measured r_m = exp(mean log step nosync - mean log step sync), "
         "registered r_p (the rows' predicted steps); MET if |log r_m - log r_p| <= diff_pct / 100 and the sign agrees "
         "(a predicted |r_p - 1| < none_pct / 100 is 'no difference', whose sign any r_m with |r_m - 1| <= diff_pct / 100 "
         "meets); else NOT MET (its sign and size said); NO DATA without a process of each variant",
    "D": "NOISE if N is ABOVE the target; else MET if M is within, P met and S MET on every shape with data; "
         "'MODEL (no-sync's terms)' if S is NOT MET on a shape (the reduce-scatter, accumulation or reduce-hook host terms "
         "of llm/grad_sync.py); 'MODEL (the step)' if S is MET on every shape but M is not within (the FSDP2 step itself, "
         "not no-sync); 'MEMORY' if only P fails",
}


def rows(shapes=SHAPES, variants=VARIANTS, extra=None) -> list[dict]:
    """Each (shape, variant) as registered: name (the process stem without -rK), processes, and the prediction;
    extra(row, variant), where given, adds to a row (validation/ddpaccum.py's step before its change)."""
    from simcluster.heldout.eager_regimes import registered_row

    out = []
    for preset, seq, mb, _ in shapes:
        for variant, mode in variants.items():
            row = registered_row(preset, seq, mb, mode, memory=True, microbatches=MICROBATCHES)
            if extra is not None:
                extra(row, variant)
            out.append({"name": f"{preset}-{seq}x{mb}-{variant}", "variant": variant, "processes": PROCESSES} | row)
    return out


CALIBRATION = {"gpu_card": "models/gpu/h200-sxm-interleaved.yaml", "collective_card": "models/collective/h200x2-primitives.yaml",
               "host": {"h200": "calibration/h200x2-llm-host-2026-11-23"}}


def register(path: Path, script: str = "validation/nosync.py --register", shapes=SHAPES, variants=VARIANTS,
             judge: dict = JUDGE, rules: dict = RULES, extra=None, session: int = 45, calibration: dict = CALIBRATION,
             regs: list[dict] | None = None, notes: dict | None = None, line=None) -> None:
    """The set's registered.yaml at `path` (rows(shapes, variants, extra), judge, rules); ddpaccum.py's, zero2.py's,
    zero2b.py's, compilefsdp.py's and compileac.py's with their own: `calibration` (the cards and host folders named),
    `regs` (rows built by the set itself), `notes` (keys after calibration; a `shapes` key there in place of the one built from
    `shapes`) and `line(row)` (the row's printed line)."""
    commit = registering_commit(ROOT)
    regs = rows(shapes, variants, extra) if regs is None else regs
    doc = {"registered_at_commit": commit, "script": script, "calibration": calibration, **(notes or {})}
    if "shapes" not in doc:
        doc["shapes"] = {f"{p}-{s}x{mb}": why for p, s, mb, why in shapes}
    doc |= {"judge": judge, "rules": rules, "rows": regs}
    write_registration(path, f"# Predictions registered before the runs (issue 44, session {session}); never edited after them.\n"
                       + yaml.safe_dump(doc, sort_keys=False, width=120))
    for r in regs:
        p = r["predicted"]
        print(line(r) if line else f"{r['name']:24} {p['step_ms']:8.2f} ms  host share {p['host_share']}  memory "
              f"{p['steady_mem_GiB']:.2f}..{p['peak_mem_GiB']:.2f} GiB")
    print(f"registered {len(regs)} rows in {path} (model at {commit[:10]})")


def read_processes(bundle: Path, regs: list[dict], mode: str = "fsdp", step_of=None,
                   peak_key: str = "max_memory_allocated_bytes") -> tuple[list[dict], list[str]]:
    """Every process of every registered row that ran it (the runner's --mode `mode`; heldout/eager_nosync.process_step,
    the error bands' reading too; a set's own step_of(bundle, reg, k) -> (shape, why) in its place: validation/
    compilefsdp.py): {row, process, step_s, peak_GiB (the shape's `peak_key`), shape}; a line per process left out."""
    got, left = [], []
    for reg in regs:
        for k in range(1, int(reg["processes"]) + 1):
            stem = f"{reg['name']}-r{k}"
            shape, why = process_step(bundle, reg, k, mode) if step_of is None else step_of(bundle, reg, k)
            if shape is None:
                left.append(f"{stem}: {why}")
                continue
            peak = shape.get(peak_key)
            got.append({"row": reg, "process": stem, "step_s": float(shape["median_step_s"]),
                        "peak_GiB": float(peak) / 2**30 if isinstance(peak, (int, float)) else None, "shape": shape})
    return got, left


def difference(procs: list[dict], regs: list[dict], judge: dict) -> tuple[bool | None, list[str]]:
    """Rule S per shape: (every shape with data MET, or None without any; a line per shape)."""
    lines, met = [], []
    for preset, seq, mb in sorted({(r["preset"], r["seq"], r["micro_batch"]) for r in regs}):
        by = {v: [math.log(p["step_s"]) for p in procs if p["row"]["variant"] == v and (p["row"]["preset"], p["row"]["seq"],
                                                                                         p["row"]["micro_batch"]) == (preset, seq, mb)]
              for v in VARIANTS}
        pred = {r["variant"]: float(r["predicted"]["step_ms"]) for r in regs if (r["preset"], r["seq"], r["micro_batch"]) == (preset, seq, mb)}
        label = f"{preset} {seq}:{mb}"
        if not by["sync"] or not by["nosync"]:
            lines.append(f"{label}: NO DATA (a variant did not run)")
            continue
        r_m, r_p = math.exp(statistics.mean(by["nosync"]) - statistics.mean(by["sync"])), pred["nosync"] / pred["sync"]
        none_pred = abs(r_p - 1) < judge["none_pct"] / 100
        sign_ok = abs(r_m - 1) <= judge["diff_pct"] / 100 if none_pred else (r_m > 1) == (r_p > 1)
        ok = sign_ok and abs(math.log(r_m / r_p)) <= judge["diff_pct"] / 100
        met.append(ok)
        lines.append(f"{label}: {'MET' if ok else 'NOT MET'}: no-sync / sync measured {r_m - 1:+.1%}, registered {r_p - 1:+.1%} "
                     f"({'no difference predicted' if none_pred else 'sign ' + ('agrees' if sign_ok else 'DISAGREES')}; "
                     f"limit {judge['diff_pct']:.0f} points)")
    return (all(met) if met else None), lines


def read_out(bundle: Path) -> dict:
    judge, regs = read_registration(bundle, JUDGE)
    procs, left = read_processes(bundle, regs)
    verdicts, sd, above, within, mem_met = step_verdicts(procs, regs, judge)
    s_met, lines = difference(procs, regs, judge)
    verdicts["S"] = " | ".join(lines)
    verdicts["D"] = ("NOISE: process noise alone exceeds the target" if above else
                     "MODEL (no-sync's terms): the no-sync difference missed on a shape" if s_met is False else
                     "NO DATA" if s_met is None or within is None else
                     "MODEL (the step): the no-sync difference met, the step itself not within" if not within else
                     "MEMORY: steps met, memory not" if not mem_met else "MET")
    return {"procs": procs, "left": left, "verdicts": verdicts}


def read_registration(bundle: Path, keys: dict, expect: dict | None = None) -> tuple[dict, list[dict]]:
    """registered.yaml's judge (the `keys`) and rows, checked: one SimclusterError line on a missing or bad key, or on
    another set's registration (`expect`: registration.read_run_set's)."""
    reg = read_run_set(bundle, expect)
    try:
        judge = {k: float(reg["judge"][k]) for k in keys}
        regs = list(reg["rows"])
        for r in regs:
            float(r["predicted"]["step_ms"]), float(r["predicted"]["steady_mem_GiB"]), float(r["predicted"]["peak_mem_GiB"])
            r["name"], r["variant"], int(r["processes"])
    except (KeyError, TypeError, ValueError) as exc:
        raise SimclusterError(f"{bundle / 'registered.yaml'}: missing or bad key ({type(exc).__name__}: {exc})") from None
    return judge, regs


def step_verdicts(procs: list[dict], regs: list[dict], judge: dict,
                  variants=VARIANTS) -> tuple[dict, float | None, bool | None, bool | None, bool]:
    """Rules N, M, B and P over the processes (their errors set here; M also per variant of `variants`: validation/
    zero2.py and compilefsdp.py pass their own): (verdicts, N's pooled sd, noise ABOVE the target, M within, P met)."""
    for p in procs:
        p["predicted_s"] = float(p["row"]["predicted"]["step_ms"]) / 1e3
        p["error"] = p["predicted_s"] / p["step_s"] - 1
        p["mem_err"] = None if p["peak_GiB"] is None else mem_error(float(p["row"]["predicted"]["steady_mem_GiB"]),
                                                                    float(p["row"]["predicted"]["peak_mem_GiB"]), p["peak_GiB"])
    target = judge["target_pct"] / 100
    verdicts, above = {}, None
    sd, dof = pooled_log_sd([[math.log(p["step_s"]) for p in procs if p["row"]["name"] == r["name"]] for r in regs])
    if sd is None:
        verdicts["N"] = "NO DATA: no (shape, variant) ran in two processes"
    else:
        above = sd * math.sqrt(2 / math.pi) > target
        verdicts["N"] = (f"process sd {sd:.3f} ({dof} dof): process noise alone gives {sd * math.sqrt(2 / math.pi):.1%} mean "
                         f"|error|, {'ABOVE' if above else 'below'} the {target:.0%} target")
    within = None
    if procs:
        mean = statistics.mean(abs(p["error"]) for p in procs)
        within = mean <= target
        per = "; ".join(f"{v} {statistics.mean(abs(p['error']) for p in procs if p['row']['variant'] == v):.1%}"
                        for v in variants if any(p["row"]["variant"] == v for p in procs))
        verdicts["M"] = (f"{'within' if within else 'not within'} the target: mean |error| {mean:.1%} over {len(procs)} "
                         f"processes ({per}; target {target:.0%}), errors {min(p['error'] for p in procs):+.1%}.."
                         f"{max(p['error'] for p in procs):+.1%}")
    else:
        verdicts["M"] = "NO DATA: no process ran"
    verdicts["B"] = bias_line([math.log1p(p["error"]) for p in procs], judge["bias_band"])[1]
    mems = [p["mem_err"] for p in procs if p["mem_err"] is not None]
    verdicts["P"] = memory_verdict(mems, judge["mem_pct"])
    mem_met = bool(mems) and max(map(abs, mems)) <= judge["mem_pct"] / 100
    return verdicts, sd, above, within, mem_met


def show(result: dict) -> None:
    for p in result["procs"]:
        mem = "" if p["peak_GiB"] is None else f"  peak {p['peak_GiB']:.2f} GiB (memory error {p['mem_err']:+.1%})"
        print(f"{p['process']:26} measured {p['step_s'] * 1e3:8.1f} ms  registered {p['predicted_s'] * 1e3:8.1f} ms  "
              f"error {p['error']:+.1%}{mem}")
    print_verdicts(result["verdicts"], result["left"])


def main(argv: list[str]) -> int:
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
