"""Goodput of a training job that is interrupted, checkpoints and restarts: days to train (docs/models/goodput.md).

Interruptions are a Poisson process in wall time at rate lambda = G r (G GPUs, r per GPU-second); M = 1 / lambda.
A checkpoint of B bytes (every parameter's bf16 weight + fp32 master, m and v: the framework's param_bytes +
state_bytes, 14 per parameter for Megatron; sharded over every rank as Megatron's distributed checkpoint writes it)
takes delta_w = B / nodes / (drives x a drive's write rate) on local NVMe, or B / the file system's rate; it blocks
delta_b = delta_w when synchronous, delta_b = B / G / copy rate when asynchronous (only the copy to host memory).
Interval tau: given, or Young's optimum sqrt(2 delta_b M) (Young 1974), rounded to whole steps.

First order (Young 1974; Daly 2006): a period is tau of work + delta_b; a failure costs R + what was not yet durable,
on average P / 2 + delta_w (asynchronous: the checkpoint written last is durable delta_w after its copy; 0 when
synchronous, where delta_w = delta_b is inside P):
    goodput_1 = tau / (tau + delta_b) x (1 - (R + (tau + delta_b) / 2 + delta_async) / M)
Exponential form (synchronous; failures strike anywhere, restarts included; the renewal argument of Daly 2006):
one segment of L work takes
    E[T(L)] = e^(lambda R) (e^(lambda (L + delta)) - 1) / lambda,
the job sum_i E[T(L_i)] over its segments (the last one shorter), goodput = work / that, and the expected number of
interruptions lambda x E[T] (Wald). llm/goodput_des.py runs the same job as a DES on the simulation kernel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from simcluster.errors import ScenarioError
from simcluster.llm.goodput_des import MAX_EVENTS, simulate_job
from simcluster.llm.reliability import Reliability
from simcluster.llm.spec import MEGATRON, FrameworkSpec, TransformerSpec

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
class GoodputResult:
    goodput: float                    # expected productive / wall time (exponential form; first order when async)
    goodput_first_order: float
    goodput_simulated: float | None   # the DES of the whole job (train_tokens given)
    checkpoint_bytes: float
    checkpoint_s: float               # what blocks training per checkpoint
    checkpoint_write_s: float         # the write to storage (= checkpoint_s when synchronous)
    checkpoint_interval_s: float
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
    rate = gpus * rel.failure_rate_per_gpu_s
    mtbf = 1.0 / rate
    size = checkpoint_bytes(model)
    write = rel.storage.write_s(size, max(1, gpus // gpus_per_node))
    blocking = size / gpus / rel.async_copy_Bps if rel.async_copy_Bps else write
    tau = rel.interval_s if rel.interval_s is not None else young_daly_s(blocking, mtbf)
    if rel.async_copy_Bps:   # the next copy waits for the last write: no interval shorter than a write
        tau = max(tau, write - blocking)
    tau = max(1, round(tau / step_time_s)) * step_time_s
    not_durable = write if rel.async_copy_Bps else 0.0
    g1 = first_order_goodput(tau, blocking, rel.restart_s, mtbf, not_durable)
    if rate * (tau + blocking + rel.restart_s + not_durable) > MAX_LOSS or (rel.async_copy_Bps and g1 <= 0):
        raise ScenarioError(f"reliability: a checkpoint period ({tau + blocking:.4g} s) plus a restart ({rel.restart_s:.4g} s) is "
                            f"{rate * (tau + blocking + rel.restart_s):.3g} MTBFs ({mtbf:.4g} s): the job would almost never "
                            "reach its next checkpoint", hint="a shorter checkpoint interval or restart, or a lower failure rate")
    work = days = interruptions = g_sim = None
    sim = {}
    if train_tokens is not None:
        work = math.ceil(train_tokens / tokens_per_step) * step_time_s
        wall = work / g1 if rel.async_copy_Bps else expected_job_s(work, tau, blocking, rel.restart_s, rate)
        goodput, days, interruptions = work / wall, wall / DAY, rate * wall
        if 6 * (work / tau + interruptions) > MAX_EVENTS:
            raise ScenarioError(f"reliability: {work / tau:,.0f} checkpoints and {interruptions:,.0f} interruptions are more than the "
                                f"job DES simulates ({MAX_EVENTS:,} events)", hint="a longer checkpoint interval, or fewer train_tokens")
        run = simulate_job(work, tau, blocking, write if rel.async_copy_Bps else 0.0, rel.restart_s, rate, seed)
        g_sim = work / run.wall_s
        sim = {**run.to_json(), "days_to_train": run.wall_s / DAY, "seed": seed}
    else:
        goodput = g1 if rel.async_copy_Bps else tau / expected_segment_s(tau, blocking, rel.restart_s, rate)
    return GoodputResult(goodput, g1, g_sim, size, blocking, write, tau, mtbf, rel.restart_s,
                         rel.failure_rate_per_gpu_s * 3600.0, rel.rate_source, rel.storage.describe,
                         rel.async_copy_Bps is not None, train_tokens, work, interruptions, days, sim)
