"""FSDP2 ZeRO-2's candidate (FrameworkSpec.zero2_fsdp2 with the regather: llm/fsdp2_zero2.py) on the runs it was chosen
with (issue 44, session 48 zero2e): session 46's zero2 and zero2b sets and session 47's zero2c and zero2d sets, each row's
measured step (the mean of its processes' rank-0 medians, read as the sets' read-outs read them) against today's
product and the candidate (the regather on where the row's process re-gathered: FSDP2's default reshard after backward;
off for zero2d's gathered rows; ZeRO-3 control rows priced by both alike), then the 8b 2912:1 zero-2 step term by term.
All of these rows are DEVELOPMENT for the candidate (their errors were read while it was built); none is held out.
    python studies/zero2e_development.py > studies/zero2e_development-session48.txt
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "validation"))

import nosync  # noqa: E402
import zero2  # noqa: E402
import zero2e  # noqa: E402

from simcluster.heldout.eager_regimes import regime_predict  # noqa: E402
from simcluster.llm import eager, work  # noqa: E402

SETS = ("h200x2-zero2-2026-11-30", "h200x2-zero2b-2026-11-30", "h200x2-zero2c-2026-11-30", "h200x2-zero2d-2026-11-30")


def product(preset: str, seq: int, mb: int, mode: str) -> float:
    return regime_predict(preset, mb, mode, "h200", microbatches=nosync.MICROBATCHES, seq=seq)["step_ms"]


def rows(sets: tuple = SETS, exposed: bool = False) -> list[tuple]:
    """(set, row name, measured ms, product ms, candidate ms, zero) per registered row of `sets` that ran (the candidate
    with FrameworkSpec.zero2_exposed as `exposed` where the row re-gathered: studies/zero2f_development.py's)."""
    out = []
    for name in sets:
        bundle = ROOT / "calibration" / name
        _, regs = nosync.read_registration(bundle, zero2.JUDGE)
        procs, _ = nosync.read_processes(bundle, regs, peak_key=zero2.PEAK_KEY)
        for r in regs:
            steps = [p["step_s"] * 1e3 for p in procs if p["row"] is r]
            if not steps:
                continue
            shape = (r["preset"], r["seq"], r["micro_batch"], r["mode"])
            regather = r.get("reshard_after_backward", True)
            out.append((name.split("-")[1], r["name"], statistics.mean(steps), product(*shape),
                        zero2e.step_candidate(*shape, regather=regather, exposed=exposed and regather),
                        2 if r["mode"] == "fsdp-zero2" else 3))
    return out


def terms(preset: str, seq: int, mb: int, **kw) -> str:
    """The zero-2 step's terms (ms) as llm/work.py builds them, stage 0's first chunk (read-only: build_work observed)."""
    seen = {}
    real = work.build_work

    def spy(*a, **k):
        seen["w"] = real(*a, **k)
        return seen["w"]

    import simcluster.llm.predict as predict
    predict.build_work = spy
    try:
        with eager.torch_framework_as(lambda fw: replace(fw, **kw)):
            step = product(preset, seq, mb, "fsdp-zero2")
    finally:
        predict.build_work = real
    st, m = seen["w"].stages[0], seen["w"].micro_batches
    f, b = st.forward[0], st.backward[0]
    return (f"step {step:7.1f} = {m} x (forward {f.duration_s * 1e3:5.1f} [dp {f.parts['dp'] * 1e3:4.1f}] + backward "
            f"{b.duration_s * 1e3:5.1f}) + gather {st.param_gather_s[0] * 1e3:4.1f} + optimizer {st.optimizer_s * 1e3:4.1f} + "
            f"reduce-scatter and the rest {step - m * (f.duration_s + b.duration_s) * 1e3 - (st.param_gather_s[0] + st.optimizer_s) * 1e3:5.1f} "
            f"({len(st.grad_buckets_s[0])} calls, {sum(st.grad_buckets_s[0]) * 1e3:5.1f} ms alone a backward; the "
            f"compute lost beside them {st.bucket_slowdown_s[0] * 1e3:4.1f} a backward)")


def main() -> int:
    print(f"{'set':6} {'row':26} {'measured':>9} {'product':>9} {'error':>7} {'candidate':>9} {'error':>7}  zero")
    errs = {2: ([], []), 3: ([], [])}
    for name, row, meas, prod, cand, z in rows():
        errs[z][0].append(abs(prod / meas - 1))
        errs[z][1].append(abs(cand / meas - 1))
        print(f"{name:6} {row:26} {meas:9.1f} {prod:9.1f} {prod / meas - 1:+7.1%} {cand:9.1f} {cand / meas - 1:+7.1%}  {z}")
    for z, (p, c) in errs.items():
        print(f"zero {z}: {len(p)} rows, mean |error| product {statistics.mean(p):.1%}, candidate {statistics.mean(c):.1%}")
    print("8b 2912:1 zero 2, the product:             " + terms("8b", 2912, 1))
    print("8b 2912:1 zero 2, the candidate (gathered): " + terms("8b", 2912, 1, zero2_fsdp2=True))
    print("8b 2912:1 zero 2, the candidate (regather): " + terms("8b", 2912, 1, zero2_fsdp2=True, zero2_regather=True))
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    sys.exit(main())
