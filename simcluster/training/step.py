"""The data-parallel step model: host, GPU compute and communication as three processes on the simulation kernel.

For one step of one rank (all ranks run the same step; see `sync_wait_s` for their spread):
  host      issues forward, backward and optimizer work: host_s split by phase shares, plus the
            DDP reducer's cost per gradient tensor (autograd hooks, bucket copies, launches):
            H = host_s + c_tensor * tensors                                        (c_tensor: fitted)
  GPU       runs each piece once it is issued and the previous piece is done; backward runs bucket
            by bucket in reverse layer order (bucket k's share of backward = its share of bytes),
            plus DDP's per-tensor GPU work (gradient copies into and out of the flat buckets):
            G = gpu_s + g_tensor * tensors                                         (g_tensor: fitted)
            While the communication stream is busy, compute runs slower by a factor (1 + slowdown)
            on the overlapped part (NCCL kernels take SMs and memory bandwidth). slowdown is
            measured from the profiles: extra compute busy time / compute-comm overlap.
  drain     what the 1-GPU step measures beyond max(host, GPU): the final synchronisation.
  comm      all-reduces bucket k once its gradients exist and the stream is free; its time comes
            from the collective card (NVLink or NCCL socket) or the fabric model across nodes.
  optimizer starts when the last bucket is reduced.
The step ends with the optimizer; ranks then wait for the slowest one. With N ranks whose step
times vary as the 1-GPU samples do, the expected wait is E[max of N samples] - mean, computed
exactly from the empirical distribution:  E[max_N] = sum_i x_(i) * ((i/n)^N - ((i-1)/n)^N).
When every rank's own 1-GPU steps were measured (a paired trace: the plain steps of each process of the
job), each rank runs the model on its own workload and the step is E[max_r (end_r + j_r)], j_r = rank r's
1-GPU samples about their mean, ranks independent: P(max <= x) = prod_r F_r(x). Processes of one job on
these hosts differ by up to 20% in host speed, so a host-bound step is paced by its slowest rank.
Outputs: the step time, its breakdown and the timeline (for the Perfetto trace).
See docs/models/training.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from simcluster.engine import Interval, Simulation
from simcluster.training.workload import Workload


@dataclass(frozen=True)
class DdpParams:
    c_tensor_s: float = 0.0     # host seconds per gradient tensor per step under DDP
    g_tensor_s: float = 0.0     # GPU seconds per gradient tensor per step under DDP
    slowdown: float = 0.0       # compute slowdown while communication overlaps it


@dataclass
class StepResult:
    ranks: int
    step_s: float
    compute_s: float
    exposed_comm_s: float
    overhead_s: float
    sync_wait_s: float
    comm_total_s: float
    storage_stall_s: float = 0.0
    cpu_bound_s: float = 0.0
    timeline: list[Interval] = field(default_factory=list)

    @property
    def breakdown(self) -> dict[str, float]:
        return {"compute_s": self.compute_s, "exposed_communication_s": self.exposed_comm_s,
                "overhead_s": self.overhead_s, "sync_wait_s": self.sync_wait_s,
                "communication_total_s": self.comm_total_s, "storage_stall_s": self.storage_stall_s,
                "cpu_bound_s": self.cpu_bound_s}


def expected_max(samples, n: int) -> float:
    """E[max of n independent draws] from the empirical distribution of `samples` (closed form: O(samples)
    at any n, so tens of thousands of ranks cost nothing)."""
    x = np.sort(np.asarray(samples, dtype=float))
    m = len(x)
    i = np.arange(1, m + 1)
    return float(np.sum(x * ((i / m) ** n - ((i - 1) / m) ** n)))


def expected_max_of(rows) -> float:
    """E[max of one independent draw from each row's empirical distribution]: P(max <= x) = prod F_row(x)."""
    rows = [np.sort(np.asarray(r, dtype=float)) for r in rows]
    values = np.unique(np.concatenate(rows))
    cdf = np.prod([np.searchsorted(r, values, side="right") / len(r) for r in rows], axis=0)
    return float(np.sum(values * np.diff(cdf, prepend=0.0)))


def sync_wait_s(samples, ranks: int) -> float:
    if ranks <= 1 or len(samples) < 2:
        return 0.0
    return expected_max(samples, ranks) - float(np.mean(samples))


def simulate_step(w: Workload, ranks: int, comm_time: Callable[[int], float], params: DdpParams,
                  storage_stall_s: float = 0.0, cpu_bound_s: float = 0.0,
                  rank_workloads: Sequence[Workload] = ()) -> StepResult:
    """One data-parallel step on `ranks` GPUs. `comm_time(bytes)` is one bucket's all_reduce time;
    the step waits for its batch first: `storage_stall_s` (the drives) then `cpu_bound_s` (a loader
    short of host cores). `rank_workloads`: each rank's own 1-GPU workload, when measured (a paired
    trace); the step is then the slowest rank's (module docstring), else every rank runs `w`."""
    if not rank_workloads:
        step = _rank_step(w, ranks, comm_time, params, storage_stall_s, cpu_bound_s)
        return _with_wait(step, sync_wait_s(w.step_samples_s, ranks))
    if len(rank_workloads) != ranks:
        raise ValueError(f"{len(rank_workloads)} rank workloads for {ranks} ranks")
    steps = [_rank_step(r, ranks, comm_time, params, storage_stall_s, cpu_bound_s) for r in rank_workloads]
    step = max(steps, key=lambda s: s.step_s)
    jitter = [s.step_s + np.asarray(r.step_samples_s) - np.mean(r.step_samples_s)
              for s, r in zip(steps, rank_workloads, strict=True)]
    return _with_wait(step, max(0.0, expected_max_of(jitter) - step.step_s))


def _with_wait(step: StepResult, wait: float) -> StepResult:
    if wait > 0:
        step.timeline.append(Interval("gpu", "wait for slowest rank", step.step_s, step.step_s + wait))
    step.step_s += wait
    step.sync_wait_s = wait
    return step


def _rank_step(w: Workload, ranks: int, comm_time: Callable[[int], float], params: DdpParams,
               storage_stall_s: float, cpu_bound_s: float) -> StepResult:
    """One rank's step up to the end of its optimizer and drain, before waiting for the others: three processes on
    the simulation kernel, the host issuing work, the GPU's compute stream and its communication stream."""
    sim = Simulation()
    env, ddp = sim.env, ranks > 1
    t0 = storage_stall_s + cpu_bound_s
    host_b = w.host_s * w.backward + (params.c_tensor_s * w.tensors if ddp else 0.0)
    g_b = w.gpu_s * w.backward + (params.g_tensor_s * w.tensors if ddp else 0.0)
    buckets = w.buckets() if ddp else [sum(w.grad_bytes)]
    total = float(sum(buckets)) or 1.0
    shares = [size / total for size in buckets]
    issued = [env.event() for _ in range(len(buckets) + 2)]   # forward, each bucket's backward, optimizer
    stream = _CommStream(sim, comm_time)
    out = {}

    def host():
        if storage_stall_s > 0:
            yield env.timeout(storage_stall_s)
            sim.interval("host", "storage stall", 0.0)
        if cpu_bound_s > 0:
            yield env.timeout(cpu_bound_s)
            sim.interval("host", "loader CPU-bound", storage_stall_s)
        pieces = [("issue forward", w.host_s * w.forward)] + [("", host_b * share) for share in shares] + \
                 [("issue optimizer", w.host_s * w.optimizer)]
        start = env.now
        for k, (name, duration) in enumerate(pieces):
            yield env.timeout(duration)
            issued[k].succeed()
            if name:
                sim.interval("host", name, start)
                start = env.now
            elif k == len(buckets):
                sim.interval("host", "issue backward (+ DDP hooks)" if ddp else "issue backward", start)
                start = env.now

    def gpu():
        yield env.timeout(t0)
        yield from _run(env, w.gpu_s * w.forward, issued[0])
        sim.interval("gpu", "forward", t0)
        for k, (size, share) in enumerate(zip(buckets, shares, strict=True)):
            start = env.now
            overlap = max(0.0, min(g_b * share, stream.free_at - start)) if ddp else 0.0
            yield from _run(env, g_b * share + params.slowdown * overlap, issued[k + 1])
            sim.interval("gpu", f"backward bucket {k}", start)
            if ddp:
                stream.submit(k, size)
        out["backward_end"] = env.now
        yield stream.idle()
        out["optimizer_start"] = env.now
        yield from _run(env, w.gpu_s * w.optimizer, issued[-1])
        sim.interval("gpu", "optimizer", out["optimizer_start"])
        yield env.timeout(w.drain_s)

    sim.process(host())
    sim.process(gpu())
    sim.run()
    end, exposed = env.now, out["optimizer_start"] - out["backward_end"]
    overhead = max(0.0, end - t0 - w.gpu_s - exposed)  # GPU waiting on the host, DDP's GPU work, slowdown, drain
    return StepResult(ranks, end, w.gpu_s, exposed, overhead, 0.0, stream.busy_s, storage_stall_s, cpu_bound_s,
                      list(sim.recorder.intervals))


def _run(env, duration_s: float, issued):
    """A GPU piece: its own work, and it cannot end before the host has issued all of it."""
    yield env.timeout(duration_s)
    if not issued.triggered:
        yield issued


class _CommStream:
    """The communication stream: all-reduces buckets one at a time, in the order they are submitted. When a bucket
    is submitted its end time is known (the stream is FIFO and each all-reduce's time is the collective model's),
    which the compute stream reads to know how long its next piece overlaps communication."""

    def __init__(self, sim: Simulation, comm_time: Callable[[int], float]):
        self.sim, self.comm_time = sim, comm_time
        self.free_at, self.busy_s = 0.0, 0.0
        self._last = None

    def submit(self, k: int, size: int) -> None:
        env = self.sim.env
        start = max(env.now, self.free_at)
        duration = self.comm_time(size)
        self.free_at, self.busy_s = start + duration, self.busy_s + duration
        self._last = env.process(self._transfer(start - env.now, duration, f"all_reduce bucket {k} ({size / 2**20:.1f} MiB)"))

    def _transfer(self, wait_s: float, duration_s: float, name: str):
        yield self.sim.env.timeout(wait_s)
        start = self.sim.env.now
        yield self.sim.env.timeout(duration_s)
        self.sim.interval("comm", name, start)

    def idle(self):
        """An event that fires when every submitted bucket is reduced."""
        return self._last if self._last is not None else self.sim.env.timeout(0)
