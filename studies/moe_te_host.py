"""Derive the Transformer Engine frameworks' host seconds per modelled call after each MoE dispatcher sync
(FrameworkSpec.moe_sync_kernel_s, llm/moe_sync.py) from one measured GPU-idle figure, no step time (issue 44, moepub),
and print how every H100 MoE row's predicted step moves with it (mendB, s35).

Source: Megatron-Bridge 067f987 skills/nemo-mbridge-perf-moe-comm-overlap/SKILL.md L60-87 (recorded in
calibration/published/llm-megatron-bridge-skills-qwen3-30b-h100-bf16.yaml, row 0: Qwen3 30B-A3B, 16 H100, BF16, EP 16
HybridEP, no EP overlap, CUDA graphs over router and preprocess): step 24.7138 s, rank 0's Nsight GPU-active interval
union 22.821 s, so 1.893 s of the step the GPU ran nothing (a lower bound: a profiled step is at least as long). c is
the value at which the model's MoE sync term adds that idle to the row's predicted step (bisection). The idle is the
step's whole GPU idle (optimizer, data, loss included), so c is an upper estimate for the MoE layers alone. The shipped
c is derived on the model before session 49's router term (heldout/registration.before_adopt49), where it was derived;
printed with the c that -25% / +25% of the idle would give there, then the c the same derivation gives under today's
model (a development figure: printed, not shipped), then per row (studies/moe_rows.py's rows, predicted as the
validation does, today's model) the term's size at the shipped c and d step / d c (finite difference over that c range):
the +- a prediction carries from c.
Valid range: H100 hosts, BF16, CUDA graphs over router and preprocess (the source's); other cards and fp8 use it
unmeasured. Not priced under moe_a2a_overlap (moe_sync.applies: the source's overlap row shows no GPU idle).
    python studies/moe_te_host.py
    python studies/moe_te_host.py --gpu-work   # row 0's modelled GPU work (c = 0) with the router term and before it
    python studies/moe_te_host.py --rederive   # c derived before adopt49 and under today's model (printed, not shipped)
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from moe_rows import MOE_ROWS, NEW_ROWS, predict_row  # noqa: E402

SOURCE = "llm-megatron-bridge-skills-qwen3-30b-h100-bf16"
STEP_S, GPU_ACTIVE_S = 24.7138, 22.821     # SKILL.md L70 (EP overlap off) and L85 (GPU-active interval union, overlap off)
IDLE_S = STEP_S - GPU_ACTIVE_S
DEVELOPMENT = "(development row: printed, not shipped)"


def row0_step(c: float) -> float:
    return row_result(0, c).step_time_s


def row_result(i: int, c: float):
    """The source's row i predicted with moe_sync_kernel_s = c (its framework otherwise): studies/moe_rows.predict_row."""
    return predict_row(SOURCE, i, kernel_s=c).result


def derive(idle_s: float = IDLE_S, hi: float = 200e-6) -> float:
    """c (seconds per modelled kernel) at which the term adds idle_s to row 0's predicted step, searched in [0, hi]
    (hi itself where even hi adds less: `reaches` tells)."""
    base, lo = row0_step(0.0), 0.0
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if row0_step(mid) - base < idle_s else (lo, mid)
    return (lo + hi) / 2


def reaches(c: float, idle_s: float = IDLE_S) -> bool:
    """Whether the sync term at c adds at least idle_s to row 0's predicted step."""
    return row0_step(c) - row0_step(0.0) >= idle_s


def derived(hi: float = 5e-3) -> str:
    """c derived under the model in force, searched to `hi`: 'c = X us', or that no c up to hi adds the idle."""
    d = derive(hi=hi)
    return f"c = {1e6 * d:.1f} us" if reaches(hi) else f"no c up to {1e6 * hi:.0f} us adds it"


def shipped_c() -> float:
    from simcluster.llm.framework import MOE_SYNC_KERNEL_S

    return MOE_SYNC_KERNEL_S


def rederive(hi: float = 5e-3) -> None:
    """c derived as main() derives it, before adopt49 (the shipped c's model), with session 49's router table (before
    adopt50) and under today's model (adopt50's table: the router at its GPU kernel time), searched to `hi`; printed,
    never shipped (the row is development data; session 50 moeker50, adopt50)."""
    from contextlib import nullcontext

    from simcluster.heldout.registration import before_adopt49, before_adopt50

    c = shipped_c()
    for label, ctx in (("before adopt49", before_adopt49), ("before adopt50 (session 49's router table)", before_adopt50),
                       ("adopted model (router term on)", nullcontext)):
        with ctx():
            step0 = row0_step(0.0)
            got = derived(hi) + ("" if label == "before adopt49" else f" {DEVELOPMENT}")
            print(f"{label}: GPU work (c = 0) {step0:.2f} s; the sync term at the shipped c {1e6 * c:.1f} us adds "
                  f"{row0_step(c) - step0:.2f} s of the {IDLE_S:.3f} s idle; {got}")


def sensitivity(c: float, lo: float, hi: float) -> None:
    """Per row: step at c, the term's size (step(c) - step(0)), d step / d c over [lo, hi], the step's +- over that range."""
    print(f"{'row':40s} {'step s':>8s} {'term s':>7s} {'d step/d c':>12s} {'+- over c range':>16s}")
    for stem, rows in MOE_ROWS + NEW_ROWS:
        for i in rows:
            at = predict_row(stem, i, c).result.step_time_s
            zero, a, b = (predict_row(stem, i, k).result.step_time_s for k in (0.0, lo, hi))
            slope = (b - a) / (1e6 * (hi - lo))
            print(f"{stem[4:36]:36s} {i:3d} {at:8.3f} {at - zero:7.3f} {1e3 * slope:8.2f} ms/us "
                  f"{100 * (b - a) / 2 / at:+8.2f}%")


def gpu_work() -> None:
    """Row 0's modelled GPU work (its step at c = 0: no host after the dispatcher sync) with the adopted router /
    permutation term (llm/moe_router_term, adopt50's table), with session 49's table (heldout/registration.before_adopt50)
    and without the term (before_adopt49), beside the profile's GPU-active time and c at today's framework (review A49,
    finding 1: c was derived before the term)."""
    from simcluster.heldout.registration import before_adopt49, before_adopt50
    from simcluster.llm.framework import MOE_SYNC_KERNEL_S

    with before_adopt49():
        before = row_result(0, 0.0).step_time_s
    with before_adopt50():
        s49 = row_result(0, 0.0).step_time_s
    now = row_result(0, 0.0).step_time_s
    print(f"row 0 profiled: GPU-active {GPU_ACTIVE_S} s of the {STEP_S} s step")
    print(f"row 0 modelled GPU work (c = 0): {now:.2f} s with the router term (adopt50), {s49:.2f} s with session 49's "
          f"table, {before:.2f} s before adopt49")
    print(f"row 0 step at c = {1e6 * MOE_SYNC_KERNEL_S:.1f} us: {row0_step(MOE_SYNC_KERNEL_S):.2f} s with the term "
          f"(the sync term adds {row0_step(MOE_SYNC_KERNEL_S) - now:.2f} s of the profile's {IDLE_S:.3f} s idle)")


def main() -> None:
    """The shipped c and its range, derived as they were: on the model before adopt49 (heldout/registration.
    before_adopt49, the router term off; tests/test_llm_moe_sync re-derives it there); then the c the same derivation
    gives under today's model, a development figure (printed, not shipped: review A50, finding 1); then per row, under
    today's model, how the step moves over the shipped c's range."""
    from simcluster.heldout.registration import before_adopt49

    with before_adopt49():
        c, lo, hi = derive(), derive(0.75 * IDLE_S), derive(1.25 * IDLE_S)
    shipped = "the shipped MOE_SYNC_KERNEL_S" if abs(c - shipped_c()) < 0.05e-6 else "NOT the shipped c"
    print(f"GPU idle {IDLE_S:.3f} s of the {STEP_S} s step -> c = {1e6 * c:.1f} us per modelled kernel, derived on "
          f"the model before adopt49 (router term off): {shipped} ({1e6 * shipped_c():.1f} us)")
    print(f"  idle x0.75: c = {1e6 * lo:.1f} us\n  idle x1.25: c = {1e6 * hi:.1f} us")
    print(f"under today's model (router term on): {derived()} {DEVELOPMENT}")
    print(f"per row under today's model at the shipped c {1e6 * shipped_c():.1f} us (the range: idle x0.75 .. x1.25):")
    sensitivity(shipped_c(), lo, hi)


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    if study_args.check(options=("--gpu-work", "--rederive")):
        rederive() if "--rederive" in sys.argv else gpu_work()
    else:
        main()
