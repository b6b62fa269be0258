"""The data-parallel step model: host, GPU compute and communication as three pipelined resources.

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

from simcluster.engine import Interval
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
    """One rank's step up to the end of its optimizer and drain, before waiting for the others."""
    timeline: list[Interval] = []
    ddp = ranks > 1
    t0 = storage_stall_s + cpu_bound_s
    if storage_stall_s > 0:
        timeline.append(Interval("host", "storage stall", 0.0, storage_stall_s))
    if cpu_bound_s > 0:
        timeline.append(Interval("host", "loader CPU-bound", storage_stall_s, t0))
    host_b = w.host_s * w.backward + (params.c_tensor_s * w.tensors if ddp else 0.0)
    host_f, host_o = w.host_s * w.forward, w.host_s * w.optimizer
    g_f, g_o = w.gpu_s * w.forward, w.gpu_s * w.optimizer
    g_b = w.gpu_s * w.backward + (params.g_tensor_s * w.tensors if ddp else 0.0)

    issued_f = t0 + host_f
    timeline.append(Interval("host", "issue forward", t0, issued_f))
    gpu = max(t0 + g_f, issued_f)
    timeline.append(Interval("gpu", "forward", t0, gpu))

    buckets = w.buckets() if ddp else [sum(w.grad_bytes)]
    total = float(sum(buckets)) or 1.0
    comm_free, comm_total, host_t = gpu, 0.0, issued_f
    for k, size in enumerate(buckets):
        share = size / total
        host_t += host_b * share
        overlap = max(0.0, min(g_b * share, comm_free - gpu)) if ddp else 0.0
        start = gpu
        gpu = max(gpu + g_b * share + params.slowdown * overlap, host_t)
        timeline.append(Interval("gpu", f"backward bucket {k}", start, gpu))
        if ddp:
            c_start = max(gpu, comm_free)
            c = comm_time(size)
            comm_free, comm_total = c_start + c, comm_total + c
            timeline.append(Interval("comm", f"all_reduce bucket {k} ({size / 2**20:.1f} MiB)", c_start, comm_free))
    timeline.append(Interval("host", "issue backward (+ DDP hooks)" if ddp else "issue backward", issued_f, host_t))
    backward_end = gpu
    opt_start = max(gpu, comm_free)
    exposed = opt_start - backward_end
    host_end = host_t + host_o
    end = max(opt_start + g_o, host_end)
    timeline.append(Interval("host", "issue optimizer", host_t, host_end))
    timeline.append(Interval("gpu", "optimizer", opt_start, end))
    end += w.drain_s
    compute = w.gpu_s
    overhead = max(0.0, end - t0 - compute - exposed)  # GPU waiting on the host, DDP's GPU work, slowdown, drain
    return StepResult(ranks, end, compute, exposed, overhead, 0.0, comm_total, storage_stall_s, cpu_bound_s, timeline)
