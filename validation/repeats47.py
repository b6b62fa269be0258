"""Issue 44, session 47 (helper repeats47): FSDP2 + whole-model torch.compile + full activation checkpointing on 2 ranks,
held out, with repeats. A registered 2 x H200 set (calibration/h200x2-repeats47-2026-11-30): the shipped model (unchanged)
on two shapes new to calibration, each run as the compilefsdp / compileac sets' fsdp variant (validation/compilefsdp.py,
imported: the runner flags, the process reading, rules N, B, P, G):
  torchrun 2 ranks, --mode fsdp --compile --compile-scope model --ac-mode full: each block in checkpoint_wrapper, FSDP2
  per block and at the root, the whole model compiled (KempnerForge's order)
three processes each, the shapes alternated A B | B A | A B (3 warm-up steps, the first holding the compilation, then
5 timed; --profile 0). Why: the error-band regime 'FSDP+compile+ckpt' at 2 GPUs held 2 rows from 2 sets (8.6%, NOT
met) and no noise floor (trust/noise.py: "no floor: too few repeats"); three processes a shape give its process noise.

    python validation/repeats47.py --register calibration/h200x2-repeats47-2026-11-30/registered.yaml   # before
    python validation/repeats47.py [calibration/h200x2-repeats47-2026-11-30]                            # after

Registered per row: the shipped model's step, host share and rank-0 memory range (heldout/eager_compilefsdp.predict,
the product's own framework: loss_in_graph on, casts_in_block off). Nothing is fitted on the runs and no model switch
depends on them: the rules judge the shipped model only.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "validation"))

import compilefsdp  # noqa: E402
import nosync  # noqa: E402

from simcluster.heldout.eager_compilefsdp import VARIANTS, predict, process_step  # noqa: E402
from simcluster.heldout.registration import pooled_log_sd, set_main  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x2-repeats47-2026-11-30"
PROCESSES = 3
VARIANT = "fsdp"   # heldout/eager_compilefsdp.VARIANTS: FSDP2 on 2 ranks, --compile-scope model, --ac-mode full
# (preset, seq, micro_batch, why): seqs from this helper's own list (1568, 1600, 1632, 3712, 3744, 3776), tokens new
SHAPES = (("1b", 3744, 2, "GPU-bound (predicted host share 0.09): a preset no compiled FSDP2 set has run"),
          ("0.5b", 1600, 6, "nearer host-bound (0.46, just under the 0.5 line: GPU and host about equal), the preset "
                            "whose host-bound compiled FSDP2 processes were 43% apart in compilefsdp"))
JUDGE = {"target_pct": 8.0, "mem_pct": 10.0, "bias_band": 0.05}
RULES = {k: compilefsdp.RULES[k] for k in ("measured", "N", "B", "P", "G")} | {
    "M": "mean |error| (predicted / measured - 1) over each shape's processes <= target_pct -> that shape 'within'; "
         "over every process likewise; M within when every shape with data and the whole set are",
    "F": "reported, not judged: each shape's own process sd (the log of the measured step over its processes) and the "
         "mean |error| it alone gives, sqrt(2/pi) sd: the regime's noise floor at that shape",
    "D": "NOISE if N is ABOVE the target; else MET if M is within and P met; 'MODEL' naming the shapes (or 'overall') "
         "not within; 'MEMORY' if only P fails",
}


def rows() -> list[dict]:
    """Each shape as registered: compilefsdp's row keys, the shipped model's prediction."""
    return [compilefsdp.row(preset, seq, mb, VARIANT, PROCESSES, predicted=predict(preset, seq, mb, VARIANT))
            for preset, seq, mb, _ in SHAPES]


def register(path: Path) -> None:
    notes = {"model": "the shipped one (heldout/eager_compilefsdp.predict, the product's framework); nothing fitted on "
                      "the runs, no model switch depends on them",
             "shapes": {f"{p}-{s}x{mb}-{VARIANT}": why for p, s, mb, why in SHAPES}}
    nosync.register(path, "validation/repeats47.py --register", judge=JUDGE, rules=RULES, session=47,
                    calibration=compilefsdp.CALIBRATION, regs=rows(), notes=notes)


def per_shape(procs: list[dict], regs: list[dict], judge: dict, within: bool | None) -> tuple[list[str], str]:
    """Rule M over the processes (their errors set by nosync.step_verdicts; `within` its whole-set answer): (the shapes,
    or 'overall', not within; M's line). validation/tp4.py's M too."""
    target = judge["target_pct"] / 100
    per = {r["name"]: m for r in regs
           if (m := compilefsdp.mean_abs_error(procs, keep=lambda p, n=r["name"]: p["row"]["name"] == n)) is not None}
    bad = [name for name, m in per.items() if m > target] + ([] if within in (None, True) else ["overall"])
    line = (("not within" if bad else "within") + ": " + "; ".join(
        f"{name} {m:.1%} ({'within' if m <= target else 'not within'})" for name, m in per.items())
        + f"; overall {compilefsdp.mean_abs_error(procs):.1%} over {len(procs)} processes (target "
        f"{judge['target_pct']:.0f}% per shape and over all)") if procs else "NO DATA: no process ran"
    return bad, line


def floors(procs: list[dict], regs: list[dict]) -> str:
    """Rule F's line: each shape's own process sd and the mean |error| it alone gives (validation/tp4.py's F too)."""
    out = []
    for r in regs:
        sd, dof = pooled_log_sd([[math.log(p["step_s"]) for p in procs if p["row"]["name"] == r["name"]]])
        out.append(f"{r['name']} " + ("NO DATA (under 2 processes)" if sd is None else
                                      f"sd {sd:.3f} ({dof} dof): noise alone {sd * math.sqrt(2 / math.pi):.1%}"))
    return "; ".join(out)


def read_out(bundle: Path) -> dict:
    judge, regs = nosync.read_registration(bundle, JUDGE)
    procs, left = nosync.read_processes(bundle, regs, step_of=process_step)
    verdicts, _, above, within, mem_met = nosync.step_verdicts(procs, regs, judge, VARIANTS)
    bad, verdicts["M"] = per_shape(procs, regs, judge, within)
    verdicts["F"] = floors(procs, regs)
    verdicts["G"] = compilefsdp.graphs_line(procs)
    verdicts["D"] = compilefsdp.rule_d(above, len({p["row"]["name"] for p in procs}) == len(regs), f": {', '.join(bad)} not within" if bad else "", mem_met)
    return {"procs": procs, "left": left, "verdicts": verdicts}


def main(argv: list[str]) -> int:
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, nosync.show)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
