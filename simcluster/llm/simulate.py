"""One training iteration of one pipeline as a discrete-event simulation (SimPy, simcluster.engine).

All data-parallel replicas and tensor-parallel ranks do the same work at the same time, so one pipeline of
pp stages stands for the whole machine; the collective times it is given already include the contention
between all concurrent groups (llm/comm.py). Each stage is a process that runs its compute tasks in
Megatron's 1F1B order (interleaved when it holds v > 1 model chunks): warm-up forwards, then one forward
and one backward in turn, then the cool-down backwards (torch.distributed.pipelining's Schedule1F1B runs the same
order: pp - r forwards, then backward and forward in turn); or, with `gpipe` (torch's ScheduleGPipe), every
micro-batch's forward, then every backward in micro-batch order. A forward of virtual stage k waits for the
activation of virtual stage k - 1, a backward for the gradient of k + 1; each boundary tensor is sent on
the sender's send stream (one per direction) and arrives p2p_s later; with `torch_p2p` (torch's lowered interleaved
schedule) each rank's sends and receives run instead on one NCCL stream in torch's placement, a pair ending together
(llm/torch_p2p.py). So the pipeline bubble and any exposed pipeline communication emerge from the waits; no bubble
formula is used.

A wait is attributed to the bubble while the producer is still computing and to pipeline communication
after it finished (the tensor is on the wire). The data-parallel stream of a stage reduces gradient buckets
as the last backward of each chunk produces them (bucket i of n is ready after (i + 1) / n of that
backward; under ZeRO-2, whose gradient buffer is sharded, after every micro-batch's
backward), and, with ZeRO-1/2, first gathers each chunk's parameters (prefetched from the step's start:
a chunk's first forward waits for its gather; with the gather overlapped bucket by bucket, only for its first
bucket, and the forward's last part waits for the last bucket). A runtime without that overlap (dp_after_backward,
Megatron-LM before 2023's --overlap-grad-reduce) reduces every bucket after the stage's last backward and gathers the
parameters after the optimizer step, all exposed; with blocking sends (blocking_p2p) the sender's compute stream waits
for each boundary tensor to arrive (exposed pipeline communication). The step of a stage ends when its last bucket is reduced
and its optimizer step ran; the iteration ends with the slowest stage.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import simpy

from simcluster.engine import Simulation, expect_events
from simcluster.errors import SimclusterError
from simcluster.llm import torch_p2p
from simcluster.llm.launch_backlog import free_host

PARTS = ("compute", "tp", "cp", "ep", "dp", "host")
PACE_PARTS = ("compute", "tp", "cp", "ep", "host")    # a stage's per-micro-batch work: what sets the pipeline's pace


@dataclass(frozen=True)
class Task:
    duration_s: float
    parts: dict          # PARTS -> seconds; they sum to duration_s
    issue_s: float = 0.0   # an eager host's seconds issuing the task's kernels (n c; llm/work._host_bound); 0: none priced
    bound_s: float = 0.0   # the end of its last kernel after the host starts issuing, the GPU free (llm/host.issue_bound_s)
    kernels: int = 0       # the kernels the host issues for it (with issue_s: its host seconds per kernel)


@dataclass(frozen=True)
class StageWork:
    forward: tuple[Task, ...]             # per chunk: one micro-batch's forward
    backward: tuple[Task, ...]            # per chunk
    grad_buckets_s: tuple[tuple[float, ...], ...] = ()   # per chunk: each bucket's reduction time, backward order
    param_gather_s: tuple[float, ...] = ()                # per chunk: ZeRO-1/2 parameter all_gather (0 = none)
    optimizer_s: float = 0.0
    param_gather_buckets: tuple[int, ...] = ()            # per chunk: n > 0 = the gather is overlapped bucket by bucket with
                                                          # the chunk's first forward (llm/overlap.py); 0 = waited for in full
    bucket_slowdown_s: tuple[float, ...] = ()             # per chunk: compute time its last backward loses to the bucket
                                                          # reductions running beside it (llm/work.py, overlap.beside); logged as dp
    backward_synced: tuple[Task, ...] = ()                # per chunk: its last backward where it differs from the others (FSDP
                                                          # no-sync: only the last reduce-scatters, llm/grad_sync.py); () = the same


@dataclass(frozen=True)
class PipelineWork:
    stages: tuple[StageWork, ...]
    micro_batches: int
    p2p_s: float = 0.0
    dp_after_backward: bool = False     # buckets reduced after the stage's last backward, parameters gathered after its optimizer
    blocking_p2p: bool = False          # a boundary send holds the sender until it is on the other side
    grads_every_micro_batch: bool = False   # ZeRO-2: gradients reduce-scattered after every micro-batch's backward into
                                            # the sharded buffer (DeepSpeed ZeRO-2, FSDP SHARD_GRAD_OP), not once per step
    grads_wait_each_backward: bool = False  # with grads_every_micro_batch, torch DDP: every backward is finalized as the last
                                            # one is (its buckets one by one, and the compute stream waits for their
                                            # all_reduces before the next forward: reducer.cpp's finalize_backward; grad_sync.py)
    gpipe: bool = False                 # GPipe order (all forwards, then all backwards) instead of 1F1B
    torch_p2p: bool = False             # torch's lowered schedule (ScheduleInterleaved1F1B): each rank's sends and receives
                                        # in torch's placement on one FIFO NCCL stream, each pair ending together (llm/torch_p2p.py)
    free_hosts: bool = False            # each stage's eager host issues its tasks back to back without waiting for their
                                        # inputs (torch.distributed.pipelining over NCCL: free_host); False: a task's host
                                        # starts with its GPU work, after its input arrived (the hosts in series)
    launch_queue: int = 0               # free_hosts: kernels a stream's launch queue holds before the host blocks (0: unbounded)
    launch_backlog: bool = False        # free_hosts: the queue holds the stage's earlier tasks not yet started too, and the
                                        # steps run without a barrier (llm/launch_backlog.py; ppfree)
    host_offsets: tuple = ()            # per stage: its step's start relative to stage 0's (launch_backlog.steady); () all 0
    action_host_s: float = 0.0          # free_hosts: host seconds the schedule spends before each task (host.PIPELINE_ACTION_HOST_S)

    @property
    def pp(self) -> int:
        return len(self.stages)

    @property
    def chunks(self) -> int:
        return len(self.stages[0].forward)


EVENTS_PER_PASS = 4   # events one forward or backward pass of a stage costs the kernel (measured: 2,066 for 512 passes)


def schedule(pp: int, chunks: int, micro_batches: int, rank: int, gpipe: bool = False) -> list[tuple[str, int, int]]:
    """Megatron's (interleaved) 1F1B order of one stage: (F|B, chunk, micro-batch); GPipe's (one chunk): every forward,
    then every backward."""
    if gpipe:
        return [("F", 0, i) for i in range(micro_batches)] + [("B", 0, i) for i in range(micro_batches)]
    total = micro_batches * chunks
    if chunks == 1:
        warm = min(pp - rank - 1, total)
    else:
        warm = min((pp - rank - 1) * 2 + (chunks - 1) * pp, total)

    def fwd(k):
        return "F", (k % (pp * chunks)) // pp, (k // (pp * chunks)) * pp + k % pp

    def bwd(k):
        return "B", chunks - 1 - (k % (pp * chunks)) // pp, (k // (pp * chunks)) * pp + k % pp

    if chunks == 1:
        fwd = lambda k: ("F", 0, k)  # noqa: E731
        bwd = lambda k: ("B", 0, k)  # noqa: E731
    order = [fwd(k) for k in range(warm)]
    for k in range(total - warm):
        order += [fwd(warm + k), bwd(k)]
    order += [bwd(k) for k in range(total - warm, total)]
    return order


@dataclass
class StageLog:
    busy: dict = field(default_factory=lambda: dict.fromkeys(PARTS, 0.0))
    bubble_s: float = 0.0
    pp_wait_s: float = 0.0
    dp_wait_s: float = 0.0
    optimizer_s: float = 0.0
    end_s: float = 0.0


@dataclass(frozen=True)
class IterationResult:
    step_time_s: float
    critical_stage: int
    breakdown: dict
    stage_ends_s: tuple[float, ...]
    events: int
    timeline: tuple             # engine.Interval per compute / send / dp span, when traced


class _Pipeline:
    def __init__(self, work: PipelineWork, sim: Simulation, trace: bool):
        self.work, self.sim, self.env, self.trace = work, sim, sim.env, trace
        self.pp, self.v, self.m = work.pp, work.chunks, work.micro_batches
        self.last_vstage = self.pp * self.v - 1
        self.arrived: dict = {}      # (F|B, vstage, mb) -> Event, triggered when the tensor has arrived
        self.produced: dict = {}     # same key -> time the producer finished computing it
        self.logs = [StageLog() for _ in range(self.pp)]
        self.send = [(simpy.Resource(self.env, 1), simpy.Resource(self.env, 1)) for _ in range(self.pp)]
        self.computed = [0] * self.pp   # torch_p2p: compute actions each stage has finished
        self.dp_stream = [simpy.Resource(self.env, 1) for _ in range(self.pp)]
        self.host_at = list(work.host_offsets) or [0.0] * self.pp   # free_hosts: when each host is free to issue next
        self.pending: list = [[] for _ in range(self.pp)]   # launch_backlog: each stage's issued tasks' (GPU start, kernels)

    def event(self, key):
        if key not in self.arrived:
            self.arrived[key] = self.env.event()
        return self.arrived[key]

    def span(self, stage: int, lane: str, name: str, start: float, end: float):
        self.sim.recorder.interval(lane, name, start, end, f"stage {stage}")

    def transfer(self, stage: int, direction: int, key, name: str):
        with self.send[stage][direction].request() as req:
            yield req
            start = self.env.now
            if self.work.p2p_s > 0:
                yield self.env.timeout(self.work.p2p_s)
            self.span(stage, "send-fwd" if direction == 0 else "send-bwd", name, start, self.env.now)
        self.event(key).succeed()

    def nccl(self, s: int, ops: tuple):
        """torch_p2p: the stage's NCCL stream, its sends and receives in torch's order (llm/torch_p2p.py): each starts when
        the stream is free and the compute posted before it is done; a pair ends p2p_s after the later of its starts."""
        for side, tensor, posted in ops:
            if posted:
                yield self.event(("computed", s, posted))
            start = self.env.now
            self.event((side, tensor)).succeed()
            yield self.event(("R" if side == "S" else "S", tensor))
            if self.work.p2p_s > 0:
                yield self.env.timeout(self.work.p2p_s)
            self.span(s, "nccl", f"{'send' if side == 'S' else 'recv'} {tensor[0]}{tensor[2]} to vs {tensor[1]}", start, self.env.now)
            if side == "R":
                self.event(tensor).succeed()

    def reduce(self, stage: int, seconds: float, name: str, gather=None):
        with self.dp_stream[stage].request() as req:
            yield req
            start = self.env.now
            if gather is not None:
                self.event(("gather", gather)).succeed(start)
            yield self.env.timeout(seconds)
            self.span(stage, "dp", name, start, self.env.now)

    def gathered(self, s: int, c: int, task: Task, gather):
        """The chunk's first forward after its ZeRO-1/2 parameter all_gather: waited for in full, or (n buckets,
        overlapped) from its first bucket on, the forward's last 1/n after the last bucket arrives:
        end = max(now + F, gather end + F / n). The wait and the extension are exposed DP time."""
        env, log, work = self.env, self.logs[s], self.work.stages[s]
        n = work.param_gather_buckets[c] if work.param_gather_buckets else 0
        t0 = env.now
        if n == 0:
            if not gather.triggered:
                yield gather
            log.dp_wait_s += env.now - t0
            return task
        start = yield self.event(("gather", (s, c)))
        total = work.param_gather_s[c]
        if env.now < start + total / n:
            yield env.timeout(start + total / n - env.now)
        log.dp_wait_s += env.now - t0
        extra = max(0.0, start + total + task.duration_s / n - env.now - task.duration_s)
        return Task(task.duration_s + extra, dict(task.parts, dp=task.parts["dp"] + extra))

    def wait_for(self, stage: int, key):
        log, start = self.logs[stage], self.env.now
        yield self.event(key)
        done = self.produced[key]
        log.bubble_s += max(0.0, min(done, self.env.now) - start)
        log.pp_wait_s += self.env.now - max(done, start)

    def stage(self, s: int, nccl=None):
        work, log, env = self.work.stages[s], self.logs[s], self.env
        if self.work.host_offsets and self.work.host_offsets[s] > 0:   # its previous step still running
            yield env.timeout(self.work.host_offsets[s])
        gathers = [env.process(self.reduce(s, t, f"param all_gather c{c}", (s, c))) if t > 0 and not self.work.dp_after_backward
                   else None for c, t in enumerate(work.param_gather_s)]
        reductions, started, serial = [], set(), ()
        last_backward = {c: max(i for kind, cc, i in schedule(self.pp, self.v, self.m, s, self.work.gpipe) if kind == "B" and cc == c)
                         for c in range(self.v)}
        for kind, c, i in schedule(self.pp, self.v, self.m, s, self.work.gpipe):
            vs = c * self.pp + s
            if kind == "F":
                if vs > 0:
                    yield from self.wait_for(s, ("F", vs, i))
                task = work.forward[c]
                if gathers and gathers[c] is not None and c not in started:
                    task = yield from self.gathered(s, c, task, gathers[c])
                started.add(c)
            else:
                if vs < self.last_vstage:
                    yield from self.wait_for(s, ("B", vs, i))
                task = work.backward_synced[c] if work.backward_synced and i == last_backward[c] else work.backward[c]
            if self.work.free_hosts:
                task, self.host_at[s] = free_host(task, env.now, self.host_at[s], self.work.launch_queue,
                                                  self.pending[s] if self.work.launch_backlog else None, self.work.action_host_s)
            start = env.now
            reduce_now = i == last_backward[c] or self.work.grads_every_micro_batch
            buckets = work.grad_buckets_s[c] if kind == "B" and work.grad_buckets_s and reduce_now else ()
            if self.work.dp_after_backward:
                serial += buckets
                buckets = ()
            if buckets:
                extra = work.bucket_slowdown_s[c] if work.bucket_slowdown_s else 0.0
                log.busy["dp"] += extra
                piece = (task.duration_s + extra) / len(buckets)
                if i != last_backward[c] and not self.work.grads_wait_each_backward:
                    # ZeRO-2, a micro-batch before the chunk's last: its buckets as one reduction from the first bucket's
                    # readiness, as long as they take back to back or until the last one after the backward, whichever
                    # is later (the stream's finish; 2 events, not 2 per bucket: long accumulations stay fast)
                    yield env.timeout(piece)
                    span = max(sum(buckets), (len(buckets) - 1) * piece + buckets[-1])
                    reductions.append(env.process(self.reduce(s, span, f"grad buckets c{c} mb{i}")))
                    yield env.timeout(task.duration_s + extra - piece)
                else:
                    for j, t in enumerate(buckets):
                        yield env.timeout(piece)
                        reductions.append(env.process(self.reduce(s, t, f"grad bucket c{c}.{j}")))
            else:
                yield env.timeout(task.duration_s)
            for part, sec in task.parts.items():
                log.busy[part] += sec
            self.span(s, "compute", f"{kind}{i} c{c}", start, env.now)
            if buckets and i != last_backward[c] and self.work.grads_wait_each_backward:   # DDP: finalize_backward
                t0 = env.now
                yield env.all_of(reductions)
                log.dp_wait_s += env.now - t0
            send = None
            if kind == "F" and vs < self.last_vstage:
                self.produced[("F", vs + 1, i)] = env.now
                send = self.transfer(s, 0, ("F", vs + 1, i), f"act mb{i}")
            elif kind == "B" and vs > 0:
                self.produced[("B", vs - 1, i)] = env.now
                send = self.transfer(s, 1, ("B", vs - 1, i), f"grad mb{i}")
            if nccl is not None:   # torch_p2p: the stage's NCCL stream sends it (self.nccl)
                send = None
                self.computed[s] += 1
                self.event(("computed", s, self.computed[s])).succeed()
            if send is not None and self.work.blocking_p2p:
                t0 = env.now
                yield from send
                log.pp_wait_s += env.now - t0
            elif send is not None:
                env.process(send)
        t0 = env.now
        if nccl is not None and nccl.is_alive:   # the step waits for the stage's last sends (torch: _wait_batch_p2p)
            yield nccl
        log.pp_wait_s += env.now - t0
        t0 = env.now
        if reductions:
            yield env.all_of(reductions)
        for j, t in enumerate(serial):
            yield from self.reduce(s, t, f"grad bucket {j} (after the backward)")
        log.dp_wait_s += env.now - t0
        if work.optimizer_s > 0:
            start = env.now
            yield env.timeout(work.optimizer_s)
            log.optimizer_s = work.optimizer_s
            self.span(s, "compute", "optimizer", start, env.now)
        if self.work.dp_after_backward and work.param_gather_s:
            t0 = env.now
            for c, t in enumerate(work.param_gather_s):
                if t > 0:
                    yield from self.reduce(s, t, f"param all_gather c{c} (after the optimizer)")
            log.dp_wait_s += env.now - t0
        log.end_s = env.now


def torch_streams(work: PipelineWork) -> tuple[tuple[tuple, ...], ...]:
    """torch_p2p: each stage's sends and receives in its NCCL stream's order (llm/torch_p2p.py), from the stages'
    compute orders (schedule); the DES (nccl) and the max-plus form (maxplus.py) both run these."""
    orders = tuple(tuple(schedule(work.pp, work.chunks, work.micro_batches, s, work.gpipe)) for s in range(work.pp))
    return torch_p2p.comm_ops(work.pp, work.chunks, orders)


def simulate_iteration(work: PipelineWork, seed: int = 0, trace: bool = True) -> IterationResult:
    """Run one iteration; the step ends when the last stage does; the breakdown is the busiest stage's time, part by part
    (its idle time until the step's end is pipeline bubble)."""
    expect_events(EVENTS_PER_PASS * 2 * work.pp * work.chunks * work.micro_batches,
                  f"one iteration of {work.micro_batches:,} micro-batches on {work.pp} pipeline stages")
    sim = Simulation(seed, record=trace)
    pipe = _Pipeline(work, sim, trace)
    streams = [None] * work.pp
    if work.torch_p2p:
        streams = [sim.process(pipe.nccl(s, ops)) for s, ops in enumerate(torch_streams(work))]
    procs = [sim.process(pipe.stage(s, streams[s])) for s in range(work.pp)]
    sim.run()
    stuck = [s for s, p in enumerate(procs) if p.is_alive or (streams[s] is not None and streams[s].is_alive)]
    if stuck:
        raise SimclusterError(f"the pipeline schedule deadlocked: stage(s) {stuck} never finished",
                              hint=f"pp {work.pp}, {work.chunks} chunks, {work.micro_batches} micro-batches")
    return iteration_result(work, pipe.logs, sim.events_processed, tuple(sim.recorder.intervals))


def iteration_result(work: PipelineWork, logs: list[StageLog], events: int, timeline: tuple) -> IterationResult:
    """The step and its breakdown from the stages' logs (the DES's, or llm/maxplus.py's)."""
    ends = tuple(log.end_s for log in logs)
    step = max(ends)
    # the stage that sets the pipeline's pace: the largest per-micro-batch work (compute and in-layer communication; the
    # step-level DP sync is not pace). With uneven stages (a layout, dense first layers, the LM head) the others wait on
    # it, and their waiting is pipeline bubble in its view; ties go to the last stage to finish (1F1B: stage 0)
    pace = [sum(log.busy[k] for k in PACE_PARTS) for log in logs]
    crit = max(range(work.pp), key=lambda s: (round(pace[s], 12), ends[s], -s))
    log = logs[crit]
    breakdown = {"compute": log.busy["compute"], "exposed_tp_comm": log.busy["tp"], "exposed_cp_comm": log.busy["cp"],
                 "exposed_pp_comm": log.pp_wait_s, "exposed_dp_comm": log.dp_wait_s + log.busy["dp"],
                 "exposed_ep_comm": log.busy["ep"], "pipeline_bubble": log.bubble_s + step - ends[crit],
                 "other": log.optimizer_s + log.busy["host"]}
    return IterationResult(step, crit, breakdown, ends, events, timeline)
