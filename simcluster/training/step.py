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
The host: with a HostSetup, the node's cores are a processor-sharing resource on the same kernel (SharedCores),
used by the input pipeline (training/pipeline.py: batches read from the node's drives and prepared on its
cores) and, with an onloaded (TCP) transport, by the all-reduce of each bucket while it is on the wire (its
full-rate cores; fewer granted cores stretch it). Each step first waits for its batch. With a pipeline the
run is several steps (from a cold start with storage, else warm): it ends once a step (not the cold one)
starts and ends with the pipeline full (every later step repeats it: that step is the answer), once the last
three steps each waited for their batch and their periods agree to 1e-9 (a steady pipeline-bound state: their
mean), or after MAX_STEPS: then the mean of the steps from the first (after the first one) that waited for its
batch, else of all but the first.
Outputs: the step time, its breakdown and the timeline (for the Perfetto trace).
See docs/models/training.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from simcluster.engine import Interval, Simulation, expect_events
from simcluster.hardware.cpu import SharedCores
from simcluster.training.pipeline import HostSetup, InputPipeline
from simcluster.training.workload import Workload

EVENTS_PER_BUCKET = 6   # kernel events one gradient bucket costs a step (measured: 598,481 for 99,745 buckets)
EVENTS_PER_STEP = 17    # and the step around them (17 for a step of one bucket); a pipelined run repeats steps
MAX_STEPS = 24      # steps simulated at most with an input pipeline (the old storage loop's 24)


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
                  storage_stall_s: float = 0.0, rank_workloads: Sequence[Workload] = (),
                  host: HostSetup | None = None) -> StepResult:
    """One data-parallel step on `ranks` GPUs. `comm_time(bytes)` is one bucket's all_reduce time at the
    transport's full rate; `storage_stall_s` a fixed wait per step; `host` the node's cores, transport demand and
    input pipeline (None: batches always ready, nothing shares the host). `rank_workloads`: each rank's own 1-GPU
    workload, when measured (a paired trace); the step is then the slowest rank's (module docstring), else every
    rank runs `w`."""
    simulated = rank_workloads or (w,)
    repeats = MAX_STEPS if host is not None and host.pipeline else 1   # an input pipeline runs up to MAX_STEPS steps
    expect_events(repeats * sum(EVENTS_PER_STEP + EVENTS_PER_BUCKET * len(r.buckets()) for r in simulated),
                  f"a data-parallel step of {len(w.buckets()):,} gradient buckets on {len(simulated):,} simulated rank(s)",
                  "fewer gradient tensors or a larger bucket_cap in the training-step card")
    if not rank_workloads:
        return _rank_step(w, ranks, comm_time, params, storage_stall_s, host, sync_wait_s(w.step_samples_s, ranks))
    if len(rank_workloads) != ranks:
        raise ValueError(f"{len(rank_workloads)} rank workloads for {ranks} ranks")
    steps = [_rank_step(r, ranks, comm_time, params, storage_stall_s, host, 0.0) for r in rank_workloads]
    step = max(steps, key=lambda s: s.step_s)
    jitter = [s.step_s + np.asarray(r.step_samples_s) - np.mean(r.step_samples_s)
              for s, r in zip(steps, rank_workloads, strict=True)]
    wait = max(0.0, expected_max_of(jitter) - step.step_s)
    if wait > 0:
        step.timeline.append(Interval("gpu", "wait for slowest rank", step.step_s, step.step_s + wait))
    step.step_s += wait
    step.sync_wait_s = wait
    return step


@dataclass(frozen=True)
class _Plan:
    """What one rank does in every step: the host's and the GPU's pieces, the buckets."""

    w: Workload
    params: DdpParams
    ddp: bool
    host_backward_s: float
    gpu_backward_s: float
    buckets: tuple[int, ...]
    shares: tuple[float, ...]

    @classmethod
    def of(cls, w: Workload, ranks: int, params: DdpParams) -> _Plan:
        ddp = ranks > 1
        buckets = tuple(w.buckets()) if ddp else (sum(w.grad_bytes),)
        total = float(sum(buckets)) or 1.0
        return cls(w, params, ddp, w.host_s * w.backward + (params.c_tensor_s * w.tensors if ddp else 0.0),
                   w.gpu_s * w.backward + (params.g_tensor_s * w.tensors if ddp else 0.0),
                   buckets, tuple(size / total for size in buckets))


@dataclass(frozen=True)
class _Record:
    """One simulated step: when it asked for its batch, got it, started computing, ended, ended its sync wait."""

    asked: float
    got: float
    storage_wait: float
    computing: float
    end: float
    done: float
    exposed: float
    comm_busy: float


def _rank_step(w: Workload, ranks: int, comm_time: Callable[[int], float], params: DdpParams,
               stall_s: float, host: HostSetup | None, wait_s: float) -> StepResult:
    """One rank's steps on the simulation kernel: a driver taking batches and waiting on the ranks, the host issuing
    work, the GPU's compute stream, its communication stream and, with a HostSetup, the node's cores and pipeline."""
    sim = Simulation()
    plan = _Plan.of(w, ranks, params)
    tcp = host.tcp_cores if host is not None else 0.0
    cores = SharedCores(sim, host.cores) if host is not None and (tcp > 0 or host.pipeline is not None) else None
    pipeline = InputPipeline(sim, host.pipeline, cores, MAX_STEPS) if host is not None and host.pipeline else None
    stream = _CommStream(sim, comm_time, cores, tcp)
    records: list[_Record] = []
    steady = [0]

    def driver():
        for k in range(MAX_STEPS if pipeline else 1):
            asked, full = sim.now, pipeline is not None and pipeline.full(k)
            storage_wait = 0.0
            if pipeline is not None:
                if not pipeline.ready(k).triggered:
                    yield pipeline.ready(k)
                    if pipeline.reader is not None:
                        storage_wait = max(0.0, min(pipeline.reads_end_s[k], sim.now) - asked)
                    sim.interval("host", f"wait for batch {k}", asked)
                pipeline.take(k)
            got = sim.now
            if stall_s > 0:
                yield sim.timeout(stall_s)
                sim.interval("host", "storage stall", got)
            computing, busy = sim.now, stream.busy_s
            out = {}
            yield from _one_step(sim, plan, stream, out)
            end = sim.now
            if wait_s > 0:
                yield sim.timeout(wait_s)
                sim.interval("gpu", "wait for slowest rank", end)
            records.append(_Record(asked, got, storage_wait, computing, end, sim.now, out["exposed"], stream.busy_s - busy))
            if pipeline is not None:
                steady[0] = _steady(records, full and (k >= 1 or pipeline.warm) and pipeline.full(k + 1))
                if steady[0]:
                    break

    sim.run(until=sim.process(driver()))
    return _result(w, ranks, stall_s, wait_s, records, steady[0], list(sim.recorder.intervals))


def _steady(records: list[_Record], repeats: bool) -> int:
    """How many of the last steps stand for every later one: 1 when the last started and ended with the pipeline
    full (every later step repeats it), 3 when the last three waited for their batches and their periods agree to
    1e-9 (a steady state paced by the pipeline), 0 when not steady yet."""
    if repeats:
        return 1
    last = records[-3:]
    if len(records) < 4 or any(r.got == r.asked for r in last):   # a step that did not wait: still draining
        return 0
    periods = [r.done - r.asked for r in last]
    return 3 if max(periods) - min(periods) <= 1e-9 * max(periods) else 0


def _result(w: Workload, ranks: int, stall_s: float, wait_s: float, records: list[_Record], steady: int,
            intervals: list[Interval]) -> StepResult:
    """The mean of the steady steps, else of the steps from the first after the cold one that waited for its batch
    (the pipeline-bound regime), else of all after the cold one (the first when it is alone);
    the timeline of the last step, from the moment it asked for its batch."""
    waited = [k for k, r in enumerate(records) if k > 0 and r.got > r.asked]
    kept = records[-steady:] if steady else records[waited[0] if waited else 1:] or records
    mean = lambda f: sum(f(r) for r in kept) / len(kept)  # noqa: E731
    batch_wait = mean(lambda r: r.got - r.asked)
    storage = mean(lambda r: r.storage_wait)
    exposed = mean(lambda r: r.exposed)
    overhead = mean(lambda r: max(0.0, r.end - r.computing - w.gpu_s - r.exposed))
    last = records[-1]
    timeline = intervals if len(records) == 1 else \
        [Interval(i.lane, i.name, max(i.start_s, last.asked) - last.asked, min(i.end_s, last.done) - last.asked, i.process)
         for i in intervals if i.end_s > last.asked and i.start_s < last.done]
    return StepResult(ranks, mean(lambda r: r.done - r.asked), w.gpu_s, exposed, overhead, wait_s,
                      mean(lambda r: r.comm_busy), stall_s + storage, batch_wait - storage, timeline)


def _one_step(sim: Simulation, plan: _Plan, stream: _CommStream, out: dict):
    """The host issuing and the GPU running one step from now; `out["exposed"]`: communication the GPU waited for."""
    issued = [sim.env.event() for _ in range(len(plan.buckets) + 2)]   # forward, each bucket's backward, optimizer
    sim.process(_host(sim, plan, issued))
    yield from _gpu(sim, plan, stream, issued, out)


def _host(sim: Simulation, plan: _Plan, issued: list):
    w, ddp = plan.w, plan.ddp
    pieces = [("issue forward", w.host_s * w.forward)] + [("", plan.host_backward_s * share) for share in plan.shares] + \
             [("issue optimizer", w.host_s * w.optimizer)]
    env = sim.env
    start = env.now
    for k, (name, duration) in enumerate(pieces):
        yield env.timeout(duration)
        issued[k].succeed()
        if name:
            sim.interval("host", name, start)
            start = env.now
        elif k == len(plan.buckets):
            sim.interval("host", "issue backward (+ DDP hooks)" if ddp else "issue backward", start)
            start = env.now


def _gpu(sim: Simulation, plan: _Plan, stream: _CommStream, issued: list, out: dict):
    env, w, params = sim.env, plan.w, plan.params
    t0 = env.now
    yield from _run(env, w.gpu_s * w.forward, issued[0])
    sim.interval("gpu", "forward", t0)
    for k, (size, share) in enumerate(zip(plan.buckets, plan.shares, strict=True)):
        start = env.now
        overlap = max(0.0, min(plan.gpu_backward_s * share, stream.free_at - start)) if plan.ddp else 0.0
        yield from _run(env, plan.gpu_backward_s * share + params.slowdown * overlap, issued[k + 1])
        sim.interval("gpu", f"backward bucket {k}", start)
        if plan.ddp:
            stream.submit(k, size)
    backward_end = env.now
    yield stream.idle()
    optimizer_start = env.now
    out["exposed"] = optimizer_start - backward_end
    yield from _run(env, w.gpu_s * w.optimizer, issued[-1])
    sim.interval("gpu", "optimizer", optimizer_start)
    yield env.timeout(w.drain_s)


def _run(env, duration_s: float, issued):
    """A GPU piece: its own work, and it cannot end before the host has issued all of it."""
    yield env.timeout(duration_s)
    if not issued.triggered:
        yield issued


class _CommStream:
    """The communication stream: all-reduces buckets one at a time, in the order they are submitted. `free_at` is
    when the last submitted bucket ends at the transport's full rate (the compute stream reads it to know how long
    its next piece overlaps communication). With an onloaded transport (`tcp_cores` > 0) a bucket on the wire is a
    job on the host's SharedCores: granted fewer cores than it needs, it takes longer than `comm_time` says."""

    def __init__(self, sim: Simulation, comm_time: Callable[[int], float], cores: SharedCores | None = None,
                 tcp_cores: float = 0.0):
        self.sim, self.comm_time, self.cores, self.tcp_cores = sim, comm_time, cores, tcp_cores
        self.free_at, self.busy_s = 0.0, 0.0
        self._last = None

    def submit(self, k: int, size: int) -> None:
        env = self.sim.env
        duration = self.comm_time(size)
        self.free_at = max(env.now, self.free_at) + duration
        self._last = env.process(self._transfer(self._last, duration, f"all_reduce bucket {k} ({size / 2**20:.1f} MiB)"))

    def _transfer(self, previous, duration_s: float, name: str):
        sim = self.sim
        if previous is not None and not previous.triggered:
            yield previous
        start = sim.now
        if self.cores is not None and self.tcp_cores > 0:
            yield self.cores.run("tcp-cpu", name, duration_s, self.tcp_cores)
        else:
            yield sim.timeout(duration_s)
        self.busy_s += sim.now - start
        sim.interval("comm", name, start)

    def idle(self):
        """An event that fires when every submitted bucket is reduced."""
        return self._last if self._last is not None else self.sim.env.timeout(0)
