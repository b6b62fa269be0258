"""Issue 44, session 46: torch.compile with every block checkpointed, on one GPU and under FSDP2. A registered 2 x H200
set (calibration/h200x2-compilefsdp-2026-11-30): two shapes new to calibration, each run as
  single  llm-step --compile --ac-mode full (1 GPU): torch.utils.checkpoint around each compiled block, its
          recomputation the compiled forward graph again (llm/compiled.py, "Checkpointed")
  fsdp    torchrun 2 ranks, --mode fsdp --compile --compile-scope model --ac-mode full: each block in checkpoint_wrapper,
          FSDP2 per block, the whole model compiled (KempnerForge's order); the checkpoint in each block's graph,
          FSDP2's hooks eager between the graphs (torch-compile+fsdp2, llm/eager_compiled.compiled_framework)
two processes each (3 warm-up steps, the first holding the compilation, then 5 timed; --profile 0).

    python validation/compilefsdp.py --register calibration/h200x2-compilefsdp-2026-11-30/registered.yaml   # before
    python validation/compilefsdp.py [calibration/h200x2-compilefsdp-2026-11-30]                            # after

Registered: today's model's step, host share and rank-0 memory of each (shape, variant) (heldout/eager_compilefsdp
.predict: heldout/eager_regimes.regime_predict with `compiled` and the set's host fits), and the rules below. The
process-noise, error, bias and memory rules are validation/nosync.py's (imported); nothing fitted on the runs after.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "validation"))

import nosync  # noqa: E402

from simcluster.heldout.eager_compilefsdp import VARIANTS, predict, process_step  # noqa: E402
from simcluster.heldout.registration import set_main  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x2-compilefsdp-2026-11-30"
PROCESSES = 2
# (preset, seq, micro_batch, why): seqs from this set's own list, tokens new to calibration (tests/conftest.py)
SHAPES = (("1.1b", 3392, 2, "GPU-bound in both (predicted host share 0.16 single, 0.24 fsdp)"),
          ("0.5b", 3648, 2, "GPU-bound on one GPU (0.24), host-bound under FSDP2 (0.89): FSDP2's eager hooks per block"))
JUDGE = {"target_pct": 8.0, "mem_pct": 10.0, "bias_band": 0.05}
RULES = {
    "measured": "rank 0's median step of each process (3 warm-up steps, the first holding the compilation, 5 timed); a "
                "process the budget guard skipped, that failed, or whose document is not the registered configuration "
                "(mode, ranks, preset, --compile-scope, --ac-mode full, the shape ok) is left out and said",
    "N": nosync.RULES["N"],
    "M": "mean |error| (predicted / measured - 1) over each variant's processes (single, fsdp) <= target_pct -> that "
         "variant 'within'; M within when every variant with data is",
    "B": nosync.RULES["B"],
    "P": nosync.RULES["P"],
    "G": "reported, not judged: each process's dynamo unique_graphs and graph_breaks and its compile seconds (the first "
         "warm-up step less the median timed step), which say which compile ran",
    "D": "NOISE if N is ABOVE the target; else MET if M is within for both variants and P met; 'MODEL (compile + "
         "checkpoint)' if the single variant is not within; 'MODEL (compile under FSDP2)' if only the fsdp variant is not "
         "within; 'MEMORY' if only P fails",
}


def rows() -> list[dict]:
    """Each (shape, variant) as registered: name (the process stem without -rK), variant, processes, layout, the
    runner's flags and the prediction."""
    return [row(preset, seq, mb, variant, PROCESSES, predicted=predict(preset, seq, mb, variant))
            for preset, seq, mb, _ in SHAPES for variant in VARIANTS]


def row(preset: str, seq: int, mb: int, variant: str, processes: int, **predictions) -> dict:
    """One registered (shape, variant) row: its name (the process stem without -rK), the runner's flags (VARIANTS) and
    `predictions` (key -> a heldout/eager_compilefsdp.predict dict; `predicted` the one rules N, B and P read); the
    compileac, repeats47 and compck sets' rows too."""
    layout, mode, ranks, scope = VARIANTS[variant]
    return {"name": f"{preset}-{seq}x{mb}-{variant}", "variant": variant, "processes": processes, "preset": preset,
            "seq": seq, "micro_batch": mb, "mode": layout, "runner_mode": mode, "ranks": ranks, "compile_scope": scope,
            "ac_mode": "full", **predictions}


CALIBRATION = nosync.CALIBRATION | {"host": {"h200": "calibration/h200x2-llm-host-2026-11-23",
                                             "compile": "calibration/h200x1-llm-compile-2026-11-29/host (scaled: "
                                                        "heldout/eager_compilefsdp.fits)"}}


def register(path: Path) -> None:
    nosync.register(path, "validation/compilefsdp.py --register", SHAPES, judge=JUDGE, rules=RULES, session=46,
                    calibration=CALIBRATION, regs=rows())


def mean_abs_error(procs: list[dict], key: str = "predicted", keep=None) -> float | None:
    """Mean |error| (predicted / measured - 1) of the registered column `key` over the processes `keep(p)` passes (all
    by default); None where none does. The shipped column's per-process error is the one nosync.step_verdicts set
    (p["error"]); another column's (compileac's predicted_fixed, compck's predicted_candidate) the same arithmetic on
    its step. The compileac, repeats47 and compck read-outs' one helper."""
    errs = [abs(p["error"] if key == "predicted" else float(p["row"][key]["step_ms"]) / 1e3 / p["step_s"] - 1)
            for p in procs if keep is None or keep(p)]
    return statistics.mean(errs) if errs else None


def graphs_line(procs: list[dict]) -> str:
    """Rule G's line (reported, not judged): each process's dynamo unique_graphs and graph_breaks and its compile
    seconds (compileac.py's and repeats47.py's too)."""
    compiled = [(p["process"], p["shape"].get("compile") or {}) for p in procs]
    return "; ".join(f"{name} graphs {c.get('dynamo', {}).get('unique_graphs')} breaks "
                     f"{c.get('dynamo', {}).get('graph_breaks')} compile {c.get('compile_s', float('nan')):.1f} s"
                     for name, c in compiled) or "NO DATA"


def rule_d(above: bool, complete: bool, miss: str, mem_met: bool) -> str:
    """Rule D's ladder (compileac.py's and repeats47.py's too): NOISE where process noise alone exceeds the target, NO DATA where a
    registered row has no process, MODEL + `miss` (the read-out's words for what is not within; empty: none), MEMORY
    where the steps are met and memory is not, else MET."""
    return ("NOISE: process noise alone exceeds the target" if above else "NO DATA" if not complete else
            f"MODEL{miss}" if miss else "MEMORY: steps met, memory not" if not mem_met else "MET")


def read_out(bundle: Path) -> dict:
    judge, regs = nosync.read_registration(bundle, JUDGE)
    procs, left = nosync.read_processes(bundle, regs, step_of=process_step)
    verdicts, _, above, _, mem_met = nosync.step_verdicts(procs, regs, judge, VARIANTS)
    per = {v: m for v in VARIANTS if (m := mean_abs_error(procs, keep=lambda p, v=v: p["row"]["variant"] == v)) is not None}
    ok = {v: m <= judge["target_pct"] / 100 for v, m in per.items()}
    verdicts["M"] = (("within" if all(ok.values()) else "not within") + ": " + "; ".join(
        f"{v} {m:.1%} ({'within' if ok[v] else 'not within'})" for v, m in per.items())
        + f" (target {judge['target_pct']:.0f}% per variant)") if per else "NO DATA: no process ran"
    verdicts["G"] = graphs_line(procs)
    complete = len(per) == len(VARIANTS)
    miss = ("" if not complete else " (compile + checkpoint): the single variant not within" if not ok["single"] else
            " (compile under FSDP2): the fsdp variant not within" if not ok["fsdp"] else "")
    verdicts["D"] = rule_d(above, complete, miss, mem_met)
    return {"procs": procs, "left": left, "verdicts": verdicts}


def main(argv: list[str]) -> int:
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, nosync.show)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
