"""The step's own SM clock: the GPU's duty cycle over one iteration and the power-limited clock it implies
(hardware/gpu_clock.py), for a GPU card with a `clock:` block.

Per GPU and step, from the ops (L/pp layers, embedding and head / pp, x micro-batches) and a first DES run at the
card's reference clock:
    C = GEMM + attention time;  M = memory-bound time (the other ops, autocast weight casts, the optimizer's traffic)
    T = the step time of the critical stage (host gaps, bubbles and exposed communication are the idle rest)
The model takes the step's average power as what the controller holds (gpu_clock.py). Moving the clock to f scales
C by s(f) = time_scale(f) (the card's reference clock: s = 1) and the bubble with it:
    T(f) = T + (s(f) - 1) C (1 + bubble / compute part),   d_c = s(f) C / T(f),   d_m = M / T(f)
and the step's clock is a root of g(f) = f - clock(d_c(f), d_m(f)) on [floor, f_max] (`settle`); the step is then
simulated again on the card moved to it (`at_clock`). Memory-bound time does not scale.

A root exists: clock() lies in [floor, f_max], so g(floor) <= 0 <= g(f_max), and g is continuous (T, d_c, d_m are
continuous in f > 0, and clock() is continuous in the duties because idle + memory < cap). A root between the floor
and f_max is exactly a clock where the step's average power equals the cap. g need not be monotone (a memory-heavy step's clock
can rise as f falls: a lower f lengthens T and lowers the memory duty), so plain iteration of f -> clock(d(f)) can
alternate between two values; `settle` takes the HIGHEST root, the one a controller lowering the clock from f_max
while the power is over the cap stops at: it scans down from f_max in GRID steps to the first f with g(f) <= 0, then
bisects that bracket. Two roots closer together than one grid step ((f_max - floor) / GRID, 29 MHz at 1980 MHz)
can be stepped over, and a lower root is then taken.
"""

from __future__ import annotations

from simcluster.errors import ModelCardError
from simcluster.hardware.gpu_clock import at_clock
from simcluster.llm import compiled, ops, vocab_ops
from simcluster.llm.framework import FrameworkSpec
from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec

COMPUTE_KINDS = ("gemm", "attention")
GRID = 64            # downward scan steps from max_clock to the floor (settle)
BISECT_HZ = 1e-3     # bisection stops when the bracket is this narrow
CONVERGED_HZ = 1e3   # |f - clock(duty(f))| allowed at the returned clock


def class_times_s(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, gpu, fw: FrameworkSpec,
                  micro_batches: int) -> tuple[float, float]:
    """(GEMM + attention, memory-bound) time per GPU and step: L / pp layers, embedding and head shared over the
    stages; memory-bound adds the weight casts under autocast and the optimizer's traffic."""
    def per_class(op_list):
        c = sum(ops.op_time_s(gpu, o, batch.precision) for o in op_list if o.kind in COMPUTE_KINDS)
        return c, sum(ops.op_time_s(gpu, o, batch.precision) for o in op_list) - c
    parts = [per_class(o) for o in compiled.layer_ops(model, par, batch, fw)]
    ends = [per_class(f(model, par, batch, fw)) for f in (vocab_ops.embedding_forward, vocab_ops.embedding_backward, vocab_ops.head_forward,
                                                          vocab_ops.head_backward)]
    params = model.parameter_count() / par.tp / par.pp
    compute = micro_batches * (sum(c for c, _ in parts) * model.layers / par.pp + sum(c for c, _ in ends) / par.pp)
    memory = micro_batches * (sum(m for _, m in parts) * model.layers / par.pp + sum(m for _, m in ends) / par.pp
                              + fw.cast_bytes * params / gpu.hbm_bandwidth_Bps)
    return compute, memory + gpu.memory_time_s(fw.adam_bytes * params / (par.dp * par.cp if par.zero >= 1 else 1))


def settle(clock, c: float, m: float, step_s: float, compute_part_s: float, bubble_s: float) -> float:
    """The highest root of g(f) = f - demanded_Hz(f) on [floor, max_clock] (module docstring), in Hz."""
    grow = 1.0 + bubble_s / compute_part_s if compute_part_s > 0 else 1.0

    def g(f: float) -> float:
        return f - demanded_Hz(clock, f, c, m, step_s, grow)
    hi = clock.max_clock_Hz
    if g(hi) <= 0:
        return hi                       # the step's power at f_max is within the cap
    lo, step = hi, (hi - clock.floor_Hz) / GRID
    for i in range(1, GRID + 1):        # g(hi) > 0: scan down to the first f with g(f) <= 0 (g(floor) <= 0 always)
        lo = clock.floor_Hz if i == GRID else clock.max_clock_Hz - i * step
        if g(lo) <= 0:
            break
        hi = lo
    while hi - lo > BISECT_HZ:          # g(lo) <= 0 < g(hi)
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if g(mid) <= 0 else (lo, mid)
    f = 0.5 * (lo + hi)
    if abs(g(f)) > CONVERGED_HZ:
        raise ModelCardError(f"the step's clock did not converge: |f - clock(duty(f))| = {abs(g(f)) / 1e6:.3g} MHz at "
                             f"{f / 1e6:.1f} MHz", where="params.clock", hint=clock.source or None)
    return f


def demanded_Hz(clock, f: float, c: float, m: float, step_s: float, grow: float) -> float:
    """The clock the step's duty cycle calls for when it runs at f (Hz): clock(d_c(f), d_m(f)) of the module docstring."""
    s = clock.time_scale(f)
    t = max(step_s + (s - 1.0) * c * grow, c * s + m, 1e-12)
    return clock.clock_Hz(min(1.0, c * s / t), min(1.0, m / t))


def clocked(model, par, batch, gpu, fw, run) -> tuple[object, dict]:
    """(the card moved to the step's clock, what decided it); `run(card)` -> (micro-batches, IterationResult)."""
    micro, it = run(gpu)
    c, m = class_times_s(model, par, batch, gpu, fw, micro)
    f = settle(gpu.clock, c, m, it.step_time_s, it.breakdown["compute"], it.breakdown["pipeline_bubble"])
    return at_clock(gpu, f), {"sm_clock_MHz": f / 1e6, "reference_clock_MHz": gpu.clock.reference_clock_Hz / 1e6,
                              "compute_time_scale": gpu.clock.time_scale(f), "reference_run_events": it.events}


def report(info: dict, model, par, batch, gpu, fw, micro: int, it) -> dict:
    """The clock block of an LlmResult: the clock and the final step's duty cycle and average power."""
    c, m = class_times_s(model, par, batch, gpu, fw, micro)
    d_c, d_m = min(1.0, c / it.step_time_s), min(1.0, m / it.step_time_s)
    return {**info, "compute_duty": d_c, "memory_duty": d_m, "idle_duty": max(0.0, 1.0 - d_c - d_m),
            "power_W": gpu.clock.power_W(d_c, d_m, gpu.clock.reference_clock_Hz)}
