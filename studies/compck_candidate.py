"""Session 48 compck (issue 44): what the candidate framework.whole_model_graph (llm/compiled.py: not_recomputed,
fused_loss; off) moves, with it off (shipped) and on:
  1. the compiled + checkpointed 2-GPU lab rows it was built against (repeats47, compileac's and compilefsdp's rows):
     DEVELOPMENT for the candidate (their errors were looked at while choosing it);
  2. every held-out eager llm-step row the error-band table takes (trust/build.eager_held_out_rows) that moves, and how
     many compiled rows without checkpointing there are and how far the largest of them moves (by construction: 0);
  3. KempnerForge's published compiled rows (calibration/published/llm-kempnerforge-*.yaml, `validate --published llm`)
     with the flag on in every framework of FRAMEWORKS: seen before (development), not held out.

    PYTHONPATH=. python studies/compck_candidate.py > studies/compck_candidate-session48.txt
"""

from __future__ import annotations

import contextlib
import io
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SOURCES = ("calibration/published/llm-kempnerforge-h200-fsdp2.yaml",
           "calibration/published/llm-kempnerforge-h200-config-validation.yaml")


def _off(fw):
    """The model of session 48's start (adopt48 later switched whole_model_graph and fsdp_free_phases on)."""
    from simcluster.heldout.eager_compilefsdp import before_adopt48

    return before_adopt48(fw)


def _on(fw):
    return replace(_off(fw), whole_model_graph=True)


def lab_rows() -> tuple[list[dict], list[dict]]:
    """trust/build.eager_held_out_rows with the flag off and on (eager.torch_framework_as)."""
    from simcluster.llm import eager
    from simcluster.trust.build import eager_held_out_rows

    with eager.torch_framework_as(_off):
        off = eager_held_out_rows()
    with eager.torch_framework_as(_on):
        on = eager_held_out_rows()
    return off, on


def plain_compiled() -> list[str]:
    """Compiled steps with no checkpointing, one GPU and FSDP2 on two, flag off and on: the candidate acts only under
    recompute full (not_recomputed: ckpt_in_graph's recompute; fused_loss: compiled.loss_in_last_graph)."""
    from simcluster.heldout.eager_compilefsdp import fits
    from simcluster.heldout.eager_regimes import regime_predict
    from simcluster.llm import eager

    out = []
    for preset, seq, mb in (("0.5b", 2048, 4), ("1b", 2048, 2), ("1.1b", 3072, 2)):
        for mode in ("single", "fsdp"):
            with eager.torch_framework_as(_off):
                off = regime_predict(preset, mb, mode, "h200", seq=seq, fits=fits(), compiled=True)["step_ms"]
            with eager.torch_framework_as(_on):
                on = regime_predict(preset, mb, mode, "h200", seq=seq, fits=fits(), compiled=True)["step_ms"]
            out.append(f"    {preset} {seq}:{mb} {mode:6} {off:8.2f} / {on:8.2f}  moved {on / off - 1:+.2%}")
    return out


def validate() -> list[str]:
    from simcluster.cli import main

    lines = []
    for source in SOURCES:
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            main(["validate", "--published", "llm", str(ROOT / source)])
        lines += [line for line in out.getvalue().splitlines() if "tokens/s" in line]
    return lines


def main() -> int:
    from simcluster.llm import framework

    off, on = lab_rows()
    assert [r["label"] for r in off] == [r["label"] for r in on]
    dev = [(a, b) for a, b in zip(off, on, strict=True) if "compile+ckpt" in a["label"]]
    print("# 1. compiled + checkpointed lab rows (DEVELOPMENT for the candidate): measured, shipped, candidate (ms)")
    errs = {"single": ([], []), "fsdp": ([], [])}
    for a, b in dev:
        m, s, c = a["measured_s"] * 1e3, a["today_s"] * 1e3, b["today_s"] * 1e3
        kind = "fsdp" if " fsdp " in a["label"] else "single"
        errs[kind][0].append(abs(s / m - 1))
        errs[kind][1].append(abs(c / m - 1))
        print(f"{a['bundle'].split('/')[-1]:30} {a['label']:42} {m:7.1f}  shipped {s:7.1f} ({s / m - 1:+6.1%})  "
              f"candidate {c:7.1f} ({c / m - 1:+6.1%})")
    for kind, (s, c) in errs.items():
        if s:
            print(f"  {kind}: {len(s)} rows, mean |error| shipped {sum(s) / len(s):.1%}, candidate {sum(c) / len(c):.1%}")
    def today(r: dict) -> float:   # the sets' readers without a `today_s` give today's model as predicted_s
        return r.get("today_s", r["predicted_s"])

    moved = [(a, b) for a, b in zip(off, on, strict=True) if today(a) != today(b)]
    print(f"# 2. of {len(off)} held-out eager rows, {len(moved)} move, every one a compile+ckpt FSDP2 row: "
          f"{all(' fsdp ' in a['label'] and 'compile+ckpt' in a['label'] for a, _ in moved)}")
    print("#    compiled without checkpointing (heldout/eager_regimes.regime_predict, compiled, recompute none), step ms "
          "shipped / candidate:")
    for line in plain_compiled():
        print(line)
    kept = dict(framework.FRAMEWORKS)
    before = validate()
    framework.FRAMEWORKS.update({k: _on(f) for k, f in kept.items()})
    try:
        after = validate()
    finally:
        framework.FRAMEWORKS.clear()
        framework.FRAMEWORKS.update(kept)
    print("# 3. KempnerForge's compiled rows (seen before: development), + = predicted faster; shipped, then candidate")
    for a, b in zip(before, after, strict=True):
        print(a)
        print(b if a != b else "    (unchanged)")
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    sys.exit(main())
