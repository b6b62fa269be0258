"""Issue 44, session 48 (helper compck): FSDP2 + whole-model torch.compile + full activation checkpointing on 2 ranks,
the shipped model and compck's candidate (framework.whole_model_graph) registered side by side. A registered 2 x H200
set (calibration/h200x2-compck-2026-11-30), run as the repeats47 / compilefsdp sets' fsdp variant (validation/
repeats47.py's reading and rules N, M, B, P, F, G, D imported, on the shipped column):
  torchrun 2 ranks, --mode fsdp --compile --compile-scope model --ac-mode full: each block in checkpoint_wrapper, FSDP2
  per block and at the root, the whole model compiled (KempnerForge's order)
on two shapes new to calibration, three processes each, alternated A B | B A | A B (3 warm-up steps, the first holding
the compilation, then 5 timed; --profile 0).

The candidate (llm/compiled.py not_recomputed and fused_loss, off by default): under the checkpoint traced into the
graph, the partitioner's backward re-runs only what the gradients read (down_proj's GEMM, read by the block's output
alone, is not recomputed), and the loss, traced into the last graph, is Inductor's fused cross-entropy over the bf16
logits (COMPILED_LOSS_BYTES) rather than eager's up-cast + log_softmax. Development: repeats47, compileac's and
compilefsdp's fsdp rows (docs/models/llm-findings.md, session 48 compck); these shapes are held out.

    python validation/compck.py --register calibration/h200x2-compck-2026-11-30/registered.yaml   # before
    python validation/compck.py [calibration/h200x2-compck-2026-11-30]                            # after
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "validation"))

import compilefsdp  # noqa: E402
import nosync  # noqa: E402
import repeats47  # noqa: E402

from simcluster.heldout.eager_compilefsdp import predict  # noqa: E402
from simcluster.heldout.registration import set_main  # noqa: E402
from simcluster.llm import eager  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x2-compck-2026-11-30"
PROCESSES = 3
VARIANT = repeats47.VARIANT
# (preset, seq, micro_batch, why): seqs from this helper's own list (480, 736, 1248, 1696, 2336, 3232, 3872), tokens new
SHAPES = (("1b", 3872, 2, "GPU-bound (predicted host share 0.09 shipped): the candidate's largest move (-8.0%)"),
          ("0.5b", 3232, 3, "nearer host-bound (0.36): the candidate moves it -3.9%"))
JUDGE = repeats47.JUDGE
RULES = repeats47.RULES | {
    "MC": "M for the candidate's column (`predicted_candidate`): mean |error| per shape and over every process <= "
          "target_pct -> 'within'",
    "R": "UNDECIDED if N is ABOVE the target; else ADOPT if the candidate is within (MC: every shape and overall) and the "
         "shipped model is not (M); REJECT if the shipped model is within and the candidate is not; else UNDECIDED. "
         "Consequence, fixed before the run: ADOPT -> framework.whole_model_graph turned on for the runner's FSDP2 "
         "whole-model compile (these rows then development for the shipped model); REJECT -> the candidate stays off and "
         "the mechanism is written up as ruled out; UNDECIDED -> it stays off, said with both columns",
}


def candidate(preset: str, seq: int, mb: int) -> dict:
    """The candidate's prediction: heldout/eager_compilefsdp.predict with framework.whole_model_graph on, alone
    (fsdp_free_phases off, as registered: the product has had both on for torch-compile+fsdp2 since session 48 adopt48)."""
    with eager.torch_framework_as(lambda fw: replace(fw, whole_model_graph=True, fsdp_free_phases=False)):
        return predict(preset, seq, mb, VARIANT)


def rows() -> list[dict]:
    return [compilefsdp.row(preset, seq, mb, VARIANT, PROCESSES, predicted=predict(preset, seq, mb, VARIANT),
                            predicted_candidate=candidate(preset, seq, mb)) for preset, seq, mb, _ in SHAPES]


def register(path: Path) -> None:
    notes = {"model": "`predicted` the shipped one (heldout/eager_compilefsdp.predict, the product's framework), "
                      "`predicted_candidate` with framework.whole_model_graph on; nothing fitted on the runs",
             "development_for_the_candidate": "calibration/h200x2-repeats47-2026-11-30, h200x2-compileac-2026-11-30 and "
                                              "h200x2-compilefsdp-2026-11-30 (their fsdp rows), KempnerForge's compiled rows",
             "shapes": {f"{p}-{s}x{mb}-{VARIANT}": why for p, s, mb, why in SHAPES}}
    nosync.register(path, "validation/compck.py --register", judge=JUDGE, rules=RULES, session=48,
                    calibration=compilefsdp.CALIBRATION, regs=rows(), notes=notes, line=_line)


def _line(r: dict) -> str:
    p, q = r["predicted"], r["predicted_candidate"]
    return (f"{r['name']:22} shipped {p['step_ms']:8.2f} ms  candidate {q['step_ms']:8.2f} ms  host share "
            f"{p['host_share']} / {q['host_share']}  memory {p['steady_mem_GiB']:.2f}..{p['peak_mem_GiB']:.2f} GiB")


def _within(procs: list[dict], key: str, target: float) -> tuple[bool, str]:
    """(every shape and the whole set within `target`, the line) for the column `key` (compilefsdp.mean_abs_error)."""
    names = list(dict.fromkeys(p["row"]["name"] for p in procs))
    per = {n: compilefsdp.mean_abs_error(procs, key, lambda p, n=n: p["row"]["name"] == n) for n in names}
    overall = compilefsdp.mean_abs_error(procs, key)
    ok = all(m <= target for m in per.values()) and overall <= target
    return ok, (("within" if ok else "not within") + ": " + "; ".join(f"{n} {m:.1%}" for n, m in per.items())
                + f"; overall {overall:.1%} over {len(procs)} processes")


def read_out(bundle: Path) -> dict:
    result = repeats47.read_out(bundle)
    procs, verdicts = result["procs"], result["verdicts"]
    judge, _ = nosync.read_registration(bundle, JUDGE)
    target = judge["target_pct"] / 100
    if not procs:
        verdicts["MC"] = verdicts["R"] = "NO DATA: no process ran"
        return result
    cand_ok, verdicts["MC"] = _within(procs, "predicted_candidate", target)
    ship_ok, _ = _within(procs, "predicted", target)
    above = "ABOVE" in verdicts["N"]   # rule N's line (nosync.step_verdicts): ABOVE or below the target
    verdicts["R"] = ("UNDECIDED: process noise above the target" if above else
                     "ADOPT: the candidate within, the shipped model not" if cand_ok and not ship_ok else
                     "REJECT: the shipped model within, the candidate not" if ship_ok and not cand_ok else
                     f"UNDECIDED: candidate {'within' if cand_ok else 'not within'}, shipped "
                     f"{'within' if ship_ok else 'not within'}")
    return result


def show(result: dict) -> None:
    for p in result["procs"]:   # the candidate's column, then repeats47's lines (the shipped model) and the verdicts
        q = float(p["row"]["predicted_candidate"]["step_ms"])
        print(f"{p['process']:26} candidate {q:8.1f} ms  error {q / 1e3 / p['step_s'] - 1:+.1%}")
    nosync.show(result)


def main(argv: list[str]) -> int:
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
