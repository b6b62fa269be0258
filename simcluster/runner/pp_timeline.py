"""Each pipeline rank's host timeline within its steps (issue 44, session 45 ppblock): `llm_step --mode pp --timeline`.

Where does a host-bound pipeline's host wait? The step's host issue time (host_issue.py) is one number per step; this
records, on every rank, when each call of torch.distributed.pipelining's schedule starts and returns, with host
timestamps (time.perf_counter: CLOCK_MONOTONIC on Linux, one clock for both ranks' processes on one machine) and CUDA
events on the compute stream around each stage chunk, cheap enough to leave the host-bound step as it was (no profiler):

    fwd / bwd  PipelineStage.forward_one_chunk / backward_one_chunk of micro-batch k: the host inside the call (the
               chunk's kernels issued; a backward's call returns once autograd's device thread has issued it)
    post       the schedule's _batch_p2p (dist.batch_isend_irecv of one fused batch of sends and receives; its desc:
               fwd_recv, fwd_send, fwd_send_bwd_recv, bwd_send_fwd_recv, bwd_recv, bwd_send, ...)
    wait       Work.wait of that batch's works (ProcessGroupNCCL: the compute stream waits, the host returns unless a
               blocking wait is set); labelled with the post's desc
    schedule   the step's schedule.step call returned (the loss stacking, AdamW step and zero_grad follow: `end`)
    end        the step's last call returned (then llm_step synchronises the device: the sync wait is the step time less
               `end`, host_issue.py)
and on the GPU, per chunk, the time its first and last kernel's stream reached the CUDA events recorded before and after
the call, aligned on the host clock by an event recorded at the step's start (the device is idle then: llm_step
synchronises it after every step, so that event runs within microseconds of its record).

Only every other step is recorded (the calls 0, 2, 4, ... of the shape, warm-up included): the unrecorded ones pass
through the same wrappers without recording and are the overhead's baseline (`overhead`, below). Per step (rank's
document, shapes[i].ranks[r].timeline): {"call", "on", "t0" (host seconds, perf_counter, at the step's start), "events":
[[kind, label, start_s, end_s], ...] from t0, "gpu": [[kind, k, start_s, end_s], ...] from t0}. The parser below reads it
(no torch): `rank_features` (a rank's step: how much of its schedule window the host spent outside the chunk calls,
and in which calls), `leads` (per input-dependent chunk: its input's arrival, the producing chunk's GPU end on the other
rank, less the host's start of issuing the chunk: positive = the host issued it before its input was there, free; <= 0 =
it started after, series; a call longer than the shortest of its kind is taken to have waited before issuing:
issue_starts) and `overhead`.
"""

from __future__ import annotations

import statistics
import time

CHUNKS = ("fwd", "bwd")
INSIDE_SLACK = 0.2   # a chunk call up to 20% over the shortest of its kind in the step is its issue alone (a last backward's
                     # own extra work, Python jitter); beyond, the call is taken to have waited before issuing (issue_starts)


class Timeline:
    """One rank's recorder: `install(stage)` once the PipelineStage exists, `around(step)` wraps the step."""

    def __init__(self, torch):
        self.torch, self.steps, self.calls, self.cur, self.patched = torch, [], 0, None, []
        self.cuda = torch.cuda.is_available()

    def install(self, stage) -> None:
        from torch.distributed.pipelining import schedules

        self.steps, self.calls = [], 0
        for kind, name in (("fwd", "forward_one_chunk"), ("bwd", "backward_one_chunk")):
            setattr(stage, name, self._chunk(kind, getattr(stage, name)))
        if not getattr(schedules._batch_p2p, "_pp_timeline", False):
            schedules._batch_p2p = self._post(schedules._batch_p2p)
        self.patched = ["PipelineStage.forward_one_chunk", "PipelineStage.backward_one_chunk", "schedules._batch_p2p"]

    def _event(self):
        ev = self.torch.cuda.Event(enable_timing=True)
        ev.record()
        return ev

    def _chunk(self, kind: str, call):
        def wrapped(*args, **kwargs):
            cur = self.cur
            if cur is None:
                return call(*args, **kwargs)
            k = args[0] if args else next(iter(kwargs.values()), None)   # the micro-batch: the first argument
            e0 = self._event() if self.cuda else None
            t0 = time.perf_counter()
            out = call(*args, **kwargs)
            cur["events"].append([kind, k, t0 - cur["t0"], time.perf_counter() - cur["t0"]])
            if self.cuda:
                cur["_gpu"].append((kind, k, e0, self._event()))
            return out
        return wrapped

    def _post(self, call):
        def wrapped(ops, *args, **kwargs):
            cur = self.cur
            if cur is None:
                return call(ops, *args, **kwargs)
            desc = args[0] if args else kwargs.get("desc")
            t0 = time.perf_counter()
            works = call(ops, *args, **kwargs)
            cur["events"].append(["post", desc, t0 - cur["t0"], time.perf_counter() - cur["t0"]])
            if isinstance(works, list | tuple):
                return [_TimedWork(w, self, desc) for w in works]
            return works if works is None else _TimedWork(works, self, desc)
        wrapped._pp_timeline = True
        return wrapped

    def around(self, step):
        """The step, recorded on every other call."""
        def wrapped():
            on = self.calls % 2 == 0
            self.calls += 1
            if on:
                self.cur = {"call": self.calls - 1, "on": True, "t0": time.perf_counter(), "events": [], "_gpu": []}
                self.cur["_e0"] = self._event() if self.cuda else None
            else:
                self.steps.append({"call": self.calls - 1, "on": False})
            try:
                return step()
            finally:
                if on:
                    self.mark("end")
                    self.steps.append(self.cur)
                    self.cur = None
        return wrapped

    def mark(self, label: str) -> None:
        if self.cur is not None:
            t = time.perf_counter() - self.cur["t0"]
            self.cur["events"].append([label, None, t, t])

    def dump(self) -> dict:
        """The recorded steps, GPU events read (after the timed loop: every step was synchronised)."""
        out = []
        for s in self.steps:
            s = dict(s)
            gpu, e0 = s.pop("_gpu", []), s.pop("_e0", None)
            if s["on"] and e0 is not None:
                s["gpu"] = [[kind, k, e0.elapsed_time(a) * 1e-3, e0.elapsed_time(b) * 1e-3] for kind, k, a, b in gpu]
            out.append(s)
        return {"patched": self.patched, "gpu_events": self.cuda, "steps": out}


class _TimedWork:
    """A dist.Work whose wait() is timed into the recorder's current step (the schedules call only wait())."""

    def __init__(self, work, timeline: Timeline, desc):
        self._work, self._tl, self._desc = work, timeline, desc

    def wait(self, *args, **kwargs):
        cur = self._tl.cur
        t0 = time.perf_counter()
        out = self._work.wait(*args, **kwargs)
        if cur is not None:
            cur["events"].append(["wait", self._desc, t0 - cur["t0"], time.perf_counter() - cur["t0"]])
        return out

    def __getattr__(self, name):
        return getattr(self._work, name)


# ---- the parser (no torch): a rank's recorded step, and the two ranks' steps together -------------------------------

def rank_features(step: dict) -> dict:
    """One rank's recorded step (seconds): `window_s` its schedule (the step's start to schedule.step's return), `issue_s`
    to the step's last call, `chunk_s` inside the fwd / bwd calls, `post_s` / `wait_s` inside batch_isend_irecv / Work.wait,
    `outside_s` the window less the chunk calls (posts, waits, the schedule's own Python, the loss), `outside_fraction`
    its share of the window, `inside_excess_s` the chunk calls' time beyond the shortest call of their kind (a wait
    inside them: issue_starts), and `largest_wait`: the (desc, seconds) of the longest Work.wait."""
    ev = step["events"]
    t_sched = next((e[2] for e in ev if e[0] == "schedule"), None)
    t_end = next((e[2] for e in ev if e[0] == "end"), None)
    window = t_sched if t_sched is not None else t_end
    dur = {k: sum(e[3] - e[2] for e in ev if e[0] == k) for k in ("fwd", "bwd", "post", "wait")}
    waits = [e for e in ev if e[0] == "wait"]
    big = max(waits, key=lambda e: e[3] - e[2]) if waits else None
    chunk = dur["fwd"] + dur["bwd"]
    return {"window_s": window, "issue_s": t_end, "chunk_s": chunk, "post_s": dur["post"], "wait_s": dur["wait"],
            "inside_excess_s": inside_excess(step),
            "outside_s": None if window is None else window - chunk,
            "outside_fraction": None if not window else (window - chunk) / window,
            "largest_wait": None if big is None else [big[1], big[3] - big[2]]}


def _chunks(step: dict, gpu: bool) -> dict:
    """{(kind, k): (start, end)} absolute host seconds of each chunk: the host call's (gpu False) or the GPU's."""
    rows = step.get("gpu") if gpu else [e for e in step["events"] if e[0] in CHUNKS]
    return {(e[0], e[1]): (step["t0"] + e[2], step["t0"] + e[3]) for e in rows or []}


def issue_starts(step: dict) -> dict:
    """{(kind, k): absolute host seconds} when each chunk's issue began: the call's start, or, where the call took more
    than INSIDE_SLACK over the shortest call of its kind in the step, its end less that shortest call (a host that
    blocks inside the call, before issuing, as a launch or an allocation can, starts issuing only then)."""
    calls = _chunks(step, False)
    short = {kind: min((b - a for (kk, _), (a, b) in calls.items() if kk == kind), default=0.0) for kind in CHUNKS}
    return {key: b - short[key[0]] if b - a > (1 + INSIDE_SLACK) * short[key[0]] else a for key, (a, b) in calls.items()}


def inside_excess(step: dict) -> float:
    """Seconds inside the chunk calls beyond the shortest call of each kind (issue_starts' blocking inside the calls)."""
    calls, starts = _chunks(step, False), issue_starts(step)
    return sum(starts[key] - a for key, (a, _) in calls.items())


def leads(first: dict, last: dict, gpu: bool = True) -> dict:
    """The input-dependent chunks of a 2-stage step (`first` the stage-0 rank's recorded step, `last` the stage-1 rank's
    same step): {"r1 fwd k": the arrival of its activations (stage 0's forward k ending on its GPU) less stage 1's issue
    start of forward k (issue_starts), "r0 bwd k": stage 1's backward k ending on its GPU less stage 0's issue start of
    backward k}, s.
    With `gpu` False (no CUDA events) the producer's host call end stands for the arrival (a lower bound: a chunk
    cannot end on the GPU before its last kernel was issued)."""
    p0, p1 = _chunks(first, gpu), _chunks(last, gpu)
    h0, h1 = issue_starts(first), issue_starts(last)
    out = {}
    for (kind, k), start in sorted(h1.items()):
        if kind == "fwd" and ("fwd", k) in p0:
            out[f"r1 fwd {k}"] = p0["fwd", k][1] - start
    for (kind, k), start in sorted(h0.items()):
        if kind == "bwd" and ("bwd", k) in p1:
            out[f"r0 bwd {k}"] = p1["bwd", k][1] - start
    return out


def before_chunk(step: dict, kind: str, k: int) -> dict:
    """Where the host was between the previous chunk call's return (or the step's start) and the start of chunk (kind,
    k): seconds inside posts, waits and the rest (the schedule's Python), and the gap itself."""
    ev = step["events"]
    start = next(e[2] for e in ev if e[0] == kind and e[1] == k)
    prev = max((e[3] for e in ev if e[0] in CHUNKS and e[3] <= start), default=0.0)
    inside = {x: sum(min(e[3], start) - max(e[2], prev) for e in ev if e[0] == x and e[3] > prev and e[2] < start)
              for x in ("post", "wait")}
    gap = start - prev
    return {"gap_s": gap, "post_s": inside["post"], "wait_s": inside["wait"], "other_s": gap - inside["post"] - inside["wait"]}


def overhead(step_times_s: list[float], warmup: int, timeline: dict) -> float | None:
    """The recorded steps' median time over the unrecorded ones' less 1, over a shape's timed steps (llm_step's
    step_times_s: call warmup + i is timed step i); None without both kinds."""
    on = {s["call"]: s["on"] for s in timeline.get("steps") or []}
    rec = [t for i, t in enumerate(step_times_s) if on.get(warmup + i) is True]
    bare = [t for i, t in enumerate(step_times_s) if on.get(warmup + i) is False]
    return statistics.median(rec) / statistics.median(bare) - 1 if rec and bare else None


def timed_recorded(timeline: dict, warmup: int) -> list[dict]:
    """The recorded steps among the timed ones (call >= warmup)."""
    return [s for s in timeline.get("steps") or [] if s.get("on") and s["call"] >= warmup]
