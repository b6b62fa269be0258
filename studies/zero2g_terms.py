"""The FSDP2 ZeRO-2 step term by term against the measured runs (issue 44, session 48 zero2g): why the gathered variant
(--reshard-after-backward false) runs 5.6-8.0% faster than every model column. For each regather / gathered / zero-3
control row of the zero2d, zero2e and zero2f sets (the mean of its processes' rank-0 medians, as the read-outs read them)
the candidate's step (FrameworkSpec.zero2_fsdp2 on, zero2_regather as the row ran, zero2_exposed off: the gathered
variant's column) is split into: the micro-batches' compute (m x (forward + backward) without data-parallel terms), the
optimizer step, the once-a-step gather, and what the reduce-scatters add (the compute lost beside them plus their tail);
`base` is compute + optimizer + gather, and `left` what the measured step leaves for the reduce-scatters once `base`
is taken as priced. Then every zero-2 and zero-3 control row of sessions 46-48's zero2* sets against the product, zero2f's
candidate (zero2_fsdp2, zero2_regather, zero2_exposed) and zero2g's (those and zero2_bf16_weights: FSDP2's bf16
parameters, no forward weight cast; llm/fsdp2_zero2.py). ALL rows are DEVELOPMENT (every one was read while the sets
were built, and zero2_bf16_weights was found reading this table's terms); nothing is fitted (llm-findings.md 'session
48 zero2g'); the held-out test is the registered zero2g set (calibration/h200x2-zero2g-2026-11-30).
    python studies/zero2g_terms.py > studies/zero2g_terms-session48.txt
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

from simcluster.heldout.eager_regimes import regime_predict  # noqa: E402
from simcluster.llm import eager  # noqa: E402

SETS = ("h200x2-zero2d-2026-11-30", "h200x2-zero2e-2026-11-30", "h200x2-zero2f-2026-11-30")
ALL_SETS = ("h200x2-zero2-2026-11-30", "h200x2-zero2b-2026-11-30", "h200x2-zero2c-2026-11-30") + SETS


def split(preset: str, seq: int, mb: int, mode: str, regather: bool) -> tuple[float, dict]:
    """(step ms, terms ms) of the candidate's step, stage 0's first chunk read through predict.build_work."""
    import simcluster.llm.predict as predict
    from simcluster.llm import work

    seen, real = {}, work.build_work

    def spy(*a, **k):
        seen["w"] = real(*a, **k)
        return seen["w"]

    fsdp2 = mode == "fsdp-zero2"
    predict.build_work = spy
    try:
        with eager.torch_framework_as(lambda fw: replace(fw, zero2_fsdp2=fsdp2, zero2_regather=fsdp2 and regather)):
            step = regime_predict(preset, mb, mode, "h200", microbatches=nosync.MICROBATCHES, seq=seq)["step_ms"]
    finally:
        predict.build_work = real
    st, m = seen["w"].stages[0], seen["w"].micro_batches
    f, b = st.forward[0], st.backward[0]
    compute = m * (f.parts["compute"] + b.parts["compute"]) * 1e3
    t = {"compute": compute, "optimizer": st.optimizer_s * 1e3, "gather": st.param_gather_s[0] * 1e3,
         "rs_alone": m * sum(st.grad_buckets_s[0]) * 1e3, "calls": len(st.grad_buckets_s[0])}
    t["rest"] = step - t["compute"] - t["optimizer"] - t["gather"]
    return step, t


def measured(name: str) -> list[tuple[dict, float]]:
    """(registered row, measured ms: the mean of its processes' rank-0 medians) of each row of the set that ran."""
    bundle = ROOT / "calibration" / name
    _, regs = nosync.read_registration(bundle, zero2.JUDGE)
    procs, _ = nosync.read_processes(bundle, regs, peak_key=zero2.PEAK_KEY)
    out = []
    for r in regs:
        steps = [p["step_s"] * 1e3 for p in procs if p["row"] is r]
        if steps:
            out.append((r, statistics.mean(steps)))
    return out


def columns() -> None:
    """Every row against the product, zero2f's candidate and zero2g's, and each zero's mean |error|."""
    import zero2e

    print(f"\n{'set':6} {'row':24} {'measured':>9} {'product':>8} {'err':>6} {'zero2f':>8} {'err':>6} {'zero2g':>8} {'err':>6}  zero")
    errs = {2: ([], [], []), 3: ([], [], [])}
    for name in ALL_SETS:
        for r, meas in measured(name):
            shape, z = (r["preset"], r["seq"], r["micro_batch"], r["mode"]), 2 if r["mode"] == "fsdp-zero2" else 3
            regather = r.get("reshard_after_backward", True)
            prod = regime_predict(shape[0], shape[2], shape[3], "h200", microbatches=nosync.MICROBATCHES, seq=shape[1])["step_ms"]
            f = zero2e.step_candidate(*shape, regather=regather, exposed=regather)
            g = zero2e.step_candidate(*shape, regather=regather, exposed=regather, bf16_weights=True)
            for k, x in enumerate((prod, f, g)):
                errs[z][k].append(abs(x / meas - 1))
            print(f"{name.split('-')[1]:6} {r['name']:24} {meas:9.1f} {prod:8.1f} {prod / meas - 1:+6.1%} {f:8.1f} "
                  f"{f / meas - 1:+6.1%} {g:8.1f} {g / meas - 1:+6.1%}  {z}")
    for z, (p, f, g) in errs.items():
        print(f"zero {z}: {len(p)} rows, mean |error| product {statistics.mean(p):.1%}, zero2f candidate {statistics.mean(f):.1%}, "
              f"zero2g candidate {statistics.mean(g):.1%}")


def main() -> int:
    print(f"{'set':6} {'row':24} {'measured':>9} {'model':>8} {'err':>6} {'compute':>8} {'optim':>6} {'gather':>6} "
          f"{'base':>7} {'base err':>8} {'rest':>6} {'left':>6}")
    for name in SETS:
        for r, meas in measured(name):
            step, t = split(r["preset"], r["seq"], r["micro_batch"], r["mode"], r.get("reshard_after_backward", True))
            base = t["compute"] + t["optimizer"] + t["gather"]
            print(f"{name.split('-')[1]:6} {r['name']:24} {meas:9.1f} {step:8.1f} {step / meas - 1:+6.1%} "
                  f"{t['compute']:8.1f} {t['optimizer']:6.1f} {t['gather']:6.1f} {base:7.1f} {base / meas - 1:+8.1%} "
                  f"{t['rest']:6.1f} {meas - base:6.1f}")
    print("base = compute + optimizer + the once-a-step gather (the regather rows' forward gathers are in 'rest'); "
          "rest = the model's step less base (reduce-scatter beside the backward: compute lost + tail, and re-gathers); "
          "left = measured less base")
    columns()
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    sys.exit(main())
