"""Goodput of a training job that is interrupted, checkpoints and restarts: days to train (docs/models/goodput.md).

Interruptions are a Poisson process in wall time at rate lambda = G r (G GPUs, r per GPU-second); M = 1 / lambda.
A checkpoint of B bytes (every parameter's bf16 weight + fp32 master, m and v: the framework's param_bytes +
state_bytes, 14 per parameter for Megatron; sharded over every rank as Megatron's distributed checkpoint writes it)
is durable once on a shared file system: written there directly (B / its rate), or to local NVMe (B / nodes /
(drives x a drive's write rate)) and then copied on (B / the replica's rate). What blocks training, delta_b: the
copy to host memory when asynchronous (B / G / copy rate), else the local write, else the file-system write; the
checkpoint is durable delta_d after the block ends (0 only for a synchronous write straight to the file system).
Interval tau: given (rounded to whole steps; refused below one step or below delta_d), or Young's optimum
sqrt(2 delta_b M) (Young 1974) rounded to whole steps and raised to one step and to delta_d where shorter (said).

First order (Young 1974; Daly 2006): a period is tau of work + delta_b; a failure costs R + on average P / 2 +
delta_d (the checkpoint taken last is durable delta_d after its block):
    goodput_1 = tau / (tau + delta_b) x (1 - (R + (tau + delta_b) / 2 + delta_d) / M)
Exponential form (delta_d = 0; failures strike anywhere, restarts included; the renewal argument of Daly 2006):
one segment of L work takes
    E[T(L)] = e^(lambda R) (e^(lambda (L + delta)) - 1) / lambda,
the job sum_i E[T(L_i)] over its segments (the last one shorter), goodput = work / that, and the expected number of
interruptions lambda x E[T] (Wald). llm/goodput_des.py runs the same job as a DES on the simulation kernel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from simcluster.engine import EventLimitError
from simcluster.errors import ScenarioError
from simcluster.llm.framework import MEGATRON, FrameworkSpec
from simcluster.llm.goodput_des import expect_job_events, simulate_job
from simcluster.llm.reliability import Reliability
from simcluster.llm.spec import TransformerSpec

DAY = 86400.0
MAX_LOSS = 5.0   # lambda x (period + restart): beyond it a segment needs e^5 = 148 tries on average (refused)


def checkpoint_bytes(model: TransformerSpec, fw: FrameworkSpec = MEGATRON) -> float:
    """Weights as trained + the optimizer state (fp32 master, m, v): what a restart needs."""
    return model.parameter_count() * (fw.param_bytes + fw.state_bytes)


def young_daly_s(delta_s: float, mtbf_s: float) -> float:
    """Young's optimum checkpoint interval sqrt(2 delta M) (first order, delta << M)."""
    return math.sqrt(2.0 * delta_s * mtbf_s)


def first_order_goodput(tau_s: float, blocking_s: float, restart_s: float, mtbf_s: float, not_durable_s: float = 0.0) -> float:
    period = tau_s + blocking_s
    return max(0.0, tau_s / period * (1.0 - (restart_s + period / 2.0 + not_durable_s) / mtbf_s))


def expected_segment_s(work_s: float, delta_s: float, restart_s: float, rate_per_s: float) -> float:
    """E[wall time] to finish `work_s` + a checkpoint of `delta_s` from a durable point, failures restarting it."""
    return math.exp(rate_per_s * restart_s) * math.expm1(rate_per_s * (work_s + delta_s)) / rate_per_s


def expected_job_s(work_s: float, tau_s: float, delta_s: float, restart_s: float, rate_per_s: float) -> float:
    """E[wall time] of the whole job (synchronous checkpoints every tau, one after the last piece of work)."""
    full = math.floor(work_s / tau_s + 1e-9)
    rest = work_s - full * tau_s
    total = full * expected_segment_s(tau_s, delta_s, restart_s, rate_per_s)
    return total + (expected_segment_s(rest, delta_s, restart_s, rate_per_s) if rest > 1e-9 * tau_s else 0.0)


@dataclass(frozen=True)
class CheckpointPlan:
    """A job's checkpoints on its storage: what blocks, when it is durable, how often (llm/goodput.py's docstring)."""

    rate_per_s: float          # lambda = G r
    bytes: float
    blocking_s: float          # delta_b
    write_s: float             # the write until durable (local drives + the copy on, or the file system)
    not_durable_s: float       # delta_d: from the block's end until durable
    interval_s: float          # tau (whole steps once the step time is known)
    note: str                  # how an auto interval was raised ('' when not)


def _refuse(rel: Reliability, key: str, message: str, hint: str | None = None):
    variant = f" (variant {rel.variant})" if rel.variant and not rel.key.startswith("variants.") else ""
    raise ScenarioError(f"{rel.key}{key}: {message}{variant}", where=rel.where, hint=hint)


def checkpoint_plan(model: TransformerSpec, rel: Reliability, gpus: int, gpus_per_node: int,
                    step_time_s: float | None = None) -> CheckpointPlan:
    """The checkpoint plan, or the refusal at the reliability block's key and line; without `step_time_s` (at read
    time) the interval is not yet rounded to whole steps."""
    rate = gpus * rel.failure_rate_per_gpu_s
    size, nodes = checkpoint_bytes(model), max(1, gpus // gpus_per_node)
    write = rel.storage.durable_s(size, nodes)
    if rel.async_copy_Bps:
        blocking = size / gpus / rel.async_copy_Bps
    else:
        blocking = rel.storage.local_write_s(size, nodes) or write
    after = write if rel.async_copy_Bps else write - blocking
    step, note = step_time_s, ""
    if rel.interval_s is not None:
        tau = rel.interval_s
        if step is not None:
            if tau < step:
                _refuse(rel, ".checkpoint.interval", f"{tau:.4g} s is shorter than one step ({step:.4g} s): a checkpoint is "
                        "taken between steps", hint="auto, or an interval of at least one step")
            tau = round(tau / step) * step
        if tau < after:
            _refuse(rel, ".checkpoint.interval", f"{tau:.4g} s is shorter than a checkpoint takes to become durable after its "
                    f"block ({after:.4g} s): the next one would wait for it", hint="auto, or a longer interval")
    else:
        young = young_daly_s(blocking, 1.0 / rate)
        tau = max(young, after)
        if step is not None:
            nearest = max(1, round(young / step))
            steps = max(nearest, math.ceil(after / step - 1e-9))
            tau = steps * step
            if steps > nearest:
                note = f"interval raised from Young/Daly's {young:.4g} s to {tau:.4g} s: a checkpoint is durable {after:.4g} s after its block"
            elif young < step / 2:
                note = f"interval raised from Young/Daly's {young:.4g} s to one step ({step:.4g} s)"
    loss = rate * (tau + blocking + rel.restart_s + after)
    g1 = first_order_goodput(tau, blocking, rel.restart_s, 1.0 / rate, after)
    if loss > MAX_LOSS or (after > 0 and g1 <= 0):
        durable = f" plus the time until durable ({after:.4g} s)" if after else ""
        _refuse(rel, "", f"a checkpoint period ({tau + blocking:.4g} s) plus a restart ({rel.restart_s:.4g} s){durable} is "
                f"{loss:.3g} MTBFs ({1.0 / rate:.4g} s): the job would almost never reach its next checkpoint",
                hint="a shorter checkpoint interval or restart, faster storage, or a lower failure rate")
    return CheckpointPlan(rate, size, blocking, write, after, tau, note)


@dataclass(frozen=True)
class GoodputResult:
    goodput: float                    # expected productive / wall time (exponential form when exact, else first order)
    goodput_first_order: float
    goodput_steady: float             # the same for an endless job (closed form, no train_tokens): what plan divides by
    goodput_simulated: float | None   # the DES of the whole job (train_tokens given)
    goodput_simulated_se: float | None
    checkpoint_bytes: float
    checkpoint_s: float               # what blocks training per checkpoint
    checkpoint_write_s: float         # the write until durable (local drives + the copy on, or the file system)
    checkpoint_not_durable_s: float   # from the block's end until durable (0: durable when the block ends)
    checkpoint_interval_s: float
    interval_note: str
    mtbf_s: float
    restart_s: float
    failure_rate_per_gpu_hour: float
    rate_source: str
    storage: str
    asynchronous: bool
    train_tokens: float | None
    productive_s: float | None
    expected_interruptions: float | None
    days_to_train: float | None
    simulated: dict

    def to_json(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def predict_goodput(model: TransformerSpec, rel: Reliability, gpus: int, gpus_per_node: int, step_time_s: float,
                    tokens_per_step: int, train_tokens: float | None, seed: int = 0) -> GoodputResult:
    """The job's goodput on `gpus` GPUs at `step_time_s` per step; with `train_tokens`, its days to train (expected
    and one seeded DES run of the whole job)."""
    plan = checkpoint_plan(model, rel, gpus, gpus_per_node, step_time_s)
    rate, tau, blocking, after = plan.rate_per_s, plan.interval_s, plan.blocking_s, plan.not_durable_s
    mtbf = 1.0 / rate
    g1 = first_order_goodput(tau, blocking, rel.restart_s, mtbf, after)
    exact = after == 0.0
    steady = tau / expected_segment_s(tau, blocking, rel.restart_s, rate) if exact else g1
    goodput, work, days, interruptions, g_sim, g_se, sim = steady, None, None, None, None, None, {}
    if train_tokens is not None:
        work = math.ceil(train_tokens / tokens_per_step) * step_time_s
        wall = expected_job_s(work, tau, blocking, rel.restart_s, rate) if exact else work / g1
        goodput, days, interruptions = work / wall, wall / DAY, rate * wall
        try:
            expect_job_events(work / tau, interruptions, after > 0)
        except EventLimitError as exc:
            _refuse(rel, "", exc.message, hint=exc.hint)
        run = simulate_job(work, tau, blocking, after, rel.restart_s, rate, seed)
        g_sim, g_se = work / run.wall_s, work * run.wall_se_s / run.wall_s ** 2
        sim = {**run.to_json(), "days_to_train": run.wall_s / DAY, "days_to_train_se": run.wall_se_s / DAY, "seed": seed}
    return GoodputResult(goodput, g1, steady, g_sim, g_se, plan.bytes, blocking, plan.write_s, after, tau, plan.note, mtbf,
                         rel.restart_s, rel.failure_rate_per_gpu_s * 3600.0, rel.rate_source, rel.storage.describe,
                         rel.async_copy_Bps is not None, train_tokens, work, interruptions, days, sim)
