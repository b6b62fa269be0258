"""The pipeline iteration of llm/simulate.py evaluated without an event queue: the same numbers, for many points.

Every stage runs a fixed order of forwards and backwards (simulate.schedule), and the only resources it shares are
its own FIFO streams: one send stream per direction and one data-parallel stream, each requested in the stage's
program order (the parameter gathers first, at t = 0). So every time in the iteration is a max-plus recurrence over
that order:
  start(op)   = max(end(previous op of the stage), arrival(its input tensor))
  send        = max(producer's end, the send stream free); arrival = send + p2p_s
  reduction   = max(ready, the DP stream free), the stream free again after it
and the stages are advanced in turn, each as far as the tensors that have arrived allow (a stage whose next input
has not arrived yet waits for the others; none able to move is the DES's deadlock). The bubble, pipeline-wait and DP
attribution is simulate.py's, step by step, so the IterationResult is the DES's: equal to rel 1e-9 on every shipped
LLM scenario and every point of the shipped plans (tests/test_llm_pinned.py, test_llm.py). What it does not give is
the timeline and the event count: predictions that want those (`simcluster run`, a trace) run the DES itself.
"""

from __future__ import annotations

import functools

from simcluster.errors import SimclusterError
from simcluster.llm.launch_backlog import free_host
from simcluster.llm.simulate import IterationResult, PipelineWork, StageLog, Task, iteration_result, schedule, torch_streams


@functools.lru_cache(maxsize=256)
def _order(pp: int, chunks: int, m: int, s: int, gpipe: bool) -> tuple:
    """Stage s's ops as simulate.schedule orders them, each (kind, chunk, micro-batch, the tensor it waits for, the one
    it sends: 2 (vstage m + mb), + 1 for a gradient; its slot: 2 chunk, + 1 backward; whether it is the chunk's first
    forward or last backward); the same for every point of this pipeline shape."""
    order = schedule(pp, chunks, m, s, gpipe)
    last_backward: dict = {}
    for kind, c, i in order:
        if kind == "B" and i > last_backward.get(c, -1):
            last_backward[c] = i
    last, first, ops = pp * chunks - 1, set(), []
    for kind, c, i in order:
        k = (c * pp + s) * m + i
        if kind == "F":
            ops.append((kind, c, i, 2 * k if k >= m else None, 2 * (k + m) if k < last * m else None, 2 * c, c not in first))
            first.add(c)
        else:
            ops.append((kind, c, i, 2 * k + 1 if k < last * m else None, 2 * (k - m) + 1 if k >= m else None, 2 * c + 1,
                        i == last_backward[c]))
    return tuple(ops)


class _Stage:
    def __init__(self, work: PipelineWork, s: int):
        self.s, self.w, self.log = s, work.stages[s], StageLog()
        self.ops = _order(work.pp, work.chunks, work.micro_batches, s, work.gpipe)
        w = self.w
        self.tasks = [t for c in range(work.chunks) for t in (w.forward[c], w.backward[c])]   # by slot
        gathering = set() if work.dp_after_backward else {c for c, t in enumerate(w.param_gather_s) if t > 0}
        # by slot, when the op takes the rare path: 0 never, 1 on the chunk's first forward (its gather) or last backward
        # (its buckets), 2 every backward (ZeRO-2's buckets after every micro-batch)
        self.rule = [r for c in range(work.chunks)
                     for r in (int(c in gathering),
                               (2 if work.grads_every_micro_batch else 1) if w.grad_buckets_s and w.grad_buckets_s[c] else 0)]
        self.counts = [0] * (2 * work.chunks)   # times each chunk's forward and backward ran on the plain path
        self.next = 0
        self.host_at = work.host_offsets[s] if work.host_offsets else 0.0   # free_hosts: when its host is free to issue next
        self.now = max(0.0, self.host_at)
        self.pending: list | None = [] if work.launch_backlog else None   # its issued tasks' (GPU start, kernels)
        self.send_free = [0.0, 0.0]
        self.dp_free = 0.0
        self.reductions_end: float | None = None
        self.serial: tuple = ()
        self.started: set = set()
        self.gather: dict = {}        # chunk -> (start, end) of its parameter all_gather on the DP stream
        self.ran: dict = {}           # id(task) -> (task, times run): its parts added to the log once, times the count
        self.comm: tuple = ()         # torch_p2p: the stage's sends and receives in stream order (llm/torch_p2p.py)
        self.comm_next = 0
        self.nccl_free = 0.0
        self.compute_ends: list = []  # torch_p2p: the end of each compute action, in order
        if not work.dp_after_backward:
            for c, t in enumerate(self.w.param_gather_s):
                if t > 0:
                    start = self.dp_free
                    self.dp_free = start + t
                    self.gather[c] = (start, self.dp_free)

    def reduce(self, ready: float, seconds: float) -> float:
        """One reduction on the DP stream, requested at `ready`: its end."""
        self.dp_free = max(ready, self.dp_free) + seconds
        return self.dp_free


class _Pipeline:
    def __init__(self, work: PipelineWork):
        self.work, self.pp, self.v = work, work.pp, work.chunks
        self.last_vstage = self.pp * self.v - 1
        self.arrived: dict = {}       # tensor (2 (vstage m + mb), + 1 for a gradient) -> its arrival time
        self.produced: dict = {}      # same key -> time its producer finished computing it
        self.stages = [_Stage(work, s) for s in range(self.pp)]
        self.starts: dict = {}        # torch_p2p: (side, tensor key) -> the start of that side's kernel
        if work.torch_p2p:
            m = work.micro_batches
            for st, ops in zip(self.stages, torch_streams(work), strict=True):
                st.comm = tuple((side, 2 * (vs * m + i) + (kind == "B"), posted) for side, (kind, vs, i), posted in ops)

    def gathered(self, st: _Stage, c: int, task: Task) -> Task:
        """simulate._Pipeline.gathered: the chunk's first forward after its parameter all_gather."""
        n = st.w.param_gather_buckets[c] if st.w.param_gather_buckets else 0
        start, end = st.gather[c]
        t0 = st.now
        if n == 0:
            st.now = max(st.now, end)
            st.log.dp_wait_s += st.now - t0
            return task
        st.now = max(st.now, start)
        total = st.w.param_gather_s[c]
        if st.now < start + total / n:
            st.now = start + total / n
        st.log.dp_wait_s += st.now - t0
        extra = max(0.0, start + total + task.duration_s / n - st.now - task.duration_s)
        return Task(task.duration_s + extra, dict(task.parts, dp=task.parts["dp"] + extra))

    def advance(self, st: _Stage) -> None:
        """Run the stage's forwards and backwards as far as the tensors that have arrived allow (simulate._Pipeline.stage's
        loop: wait for the input, compute, send), the waits' bubble and pipeline time added to its log."""
        arrived, produced, ops, n, tasks, rule = self.arrived, self.produced, st.ops, len(st.ops), st.tasks, st.rule
        p2p, blocking, send_free, counts = self.work.p2p_s, self.work.blocking_p2p, st.send_free, st.counts
        fifo, free, synced = self.work.torch_p2p, self.work.free_hosts, st.w.backward_synced
        nxt, now, bubble, pp_wait = st.next, st.now, 0.0, 0.0
        while nxt < n:
            kind, c, i, wait, out, slot, edge = ops[nxt]
            task, special = tasks[slot], rule[slot] == 2 or (edge and rule[slot] == 1)
            if edge and synced and slot % 2:   # FSDP no-sync: the chunk's last backward reduces (simulate.StageWork)
                task = synced[c]
            if wait is not None:
                arrival = arrived.get(wait)
                if arrival is None:
                    break
                start = now
                if arrival > now:
                    now = arrival
                done = produced[wait]
                idle = (done if done < now else now) - start
                if idle > 0.0:
                    bubble += idle
                pp_wait += now - (done if done > start else start)
            nxt += 1
            freed = free and task.issue_s > 0.0
            if freed:   # launch_backlog.free_host: this occurrence's own duration
                task, st.host_at = free_host(task, now, st.host_at, self.work.launch_queue, st.pending, self.work.action_host_s)
            if special:
                st.now = now
                self.special(st, kind, c, task, edge)
                now = st.now
            else:
                now += task.duration_s
                if freed:
                    self.ran(st, task)   # logged as run once: each occurrence's duration is its own
                else:
                    counts[slot] += 1
            if fifo:
                st.compute_ends.append(now)
                if out is not None:
                    produced[out] = now
            elif out is not None:
                produced[out] = now
                direction = 0 if kind == "F" else 1
                start = now if now > send_free[direction] else send_free[direction]
                arrival = start + p2p if p2p > 0 else start
                send_free[direction] = arrival
                arrived[out] = arrival
                if blocking:
                    pp_wait += arrival - now
                    now = arrival
        st.next, st.now = nxt, now
        st.log.bubble_s += bubble
        st.log.pp_wait_s += pp_wait

    def advance_comm(self, st: _Stage) -> None:
        """torch_p2p: the stage's NCCL stream as far as its peers allow (simulate._Pipeline.nccl): a kernel starts when the
        stream is free and the compute posted before it is done; a send and its receive end p2p_s after the later start."""
        starts, p2p = self.starts, self.work.p2p_s
        while st.comm_next < len(st.comm):
            side, tensor, posted = st.comm[st.comm_next]
            if posted > len(st.compute_ends):
                return
            if (side, tensor) not in starts:
                ready = st.compute_ends[posted - 1] if posted else 0.0
                starts[(side, tensor)] = ready if ready > st.nccl_free else st.nccl_free
            other = starts.get(("R" if side == "S" else "S", tensor))
            if other is None:
                return
            start = starts[(side, tensor)]
            st.nccl_free = (other if other > start else start) + p2p
            if side == "R":
                self.arrived[tensor] = st.nccl_free
            st.comm_next += 1

    def special(self, st: _Stage, kind: str, c: int, task: Task, last: bool) -> None:
        """A chunk's first forward after its parameter gather, or a backward that reduces gradient buckets (`last`: the
        chunk's last on the stage)."""
        work, w, log = self.work, st.w, st.log
        if kind == "F":
            task = self.gathered(st, c, task)
            st.now += task.duration_s
            self.ran(st, task)
            return
        buckets = w.grad_buckets_s[c]
        if work.dp_after_backward:
            st.serial += buckets
            st.now += task.duration_s
            self.ran(st, task)
            return
        extra = w.bucket_slowdown_s[c] if w.bucket_slowdown_s else 0.0
        log.busy["dp"] += extra
        piece = (task.duration_s + extra) / len(buckets)
        if not last and not work.grads_wait_each_backward:
            st.now += piece
            span = max(sum(buckets), (len(buckets) - 1) * piece + buckets[-1])
            self.reduced(st, st.reduce(st.now, span))
            st.now += task.duration_s + extra - piece
        else:
            now, free = st.now, st.dp_free      # st.reduce for each bucket, inline (a 405B chunk has thousands)
            for t in buckets:
                now += piece
                free = (now if now > free else free) + t
            st.now, st.dp_free = now, free
            self.reduced(st, free)               # the stream is FIFO: the last bucket ends last
            if not last and free > now:          # torch DDP: the next forward waits for this backward's all_reduces
                log.dp_wait_s += free - now
                st.now = free
        self.ran(st, task)

    @staticmethod
    def ran(st: _Stage, task: Task) -> None:
        seen = st.ran.get(id(task))
        st.ran[id(task)] = (task, 1 if seen is None else seen[1] + 1)

    @staticmethod
    def reduced(st: _Stage, end: float) -> None:
        st.reductions_end = end if st.reductions_end is None else max(st.reductions_end, end)

    def finish(self, st: _Stage) -> None:
        """After the stage's last backward: its buckets, the optimizer step, the gathers left for after it."""
        w, log = st.w, st.log
        if st.comm and st.nccl_free > st.now:   # the step waits for the stage's last sends (simulate: the nccl process)
            log.pp_wait_s += st.nccl_free - st.now
            st.now = st.nccl_free
        for slot, count in enumerate(st.counts):
            if count:
                for part, sec in (w.backward if slot % 2 else w.forward)[slot // 2].parts.items():
                    log.busy[part] += count * sec
        for task, count in st.ran.values():
            for part, sec in task.parts.items():
                log.busy[part] += count * sec
        t0 = st.now
        if st.reductions_end is not None:
            st.now = max(st.now, st.reductions_end)
        for t in st.serial:
            st.now = st.reduce(st.now, t)
        log.dp_wait_s += st.now - t0
        if w.optimizer_s > 0:
            st.now += w.optimizer_s
            log.optimizer_s = w.optimizer_s
        if self.work.dp_after_backward and w.param_gather_s:
            t0 = st.now
            for t in w.param_gather_s:
                if t > 0:
                    st.now = st.reduce(st.now, t)
            log.dp_wait_s += st.now - t0
        log.end_s = st.now


def evaluate_iteration(work: PipelineWork) -> IterationResult:
    """simulate.simulate_iteration's result (trace off) from the recurrence; `events` is 0: no event was simulated."""
    pipe = _Pipeline(work)
    todo = list(pipe.stages)
    while todo:
        moved = False
        for st in todo:
            before = st.next, st.comm_next
            pipe.advance(st)
            pipe.advance_comm(st)
            moved = moved or (st.next, st.comm_next) > before
            if st.next == len(st.ops) and st.comm_next == len(st.comm):
                pipe.finish(st)
        left = [st for st in todo if st.next < len(st.ops) or st.comm_next < len(st.comm)]
        if left and not moved:
            raise SimclusterError(f"the pipeline schedule deadlocked: stage(s) {[st.s for st in left]} never finished",
                                  hint=f"pp {work.pp}, {work.chunks} chunks, {work.micro_batches} micro-batches")
        todo = left
    return iteration_result(work, [st.log for st in pipe.stages], 0, ())
