"""A free stage host's issue (free_host, the DES's and maxplus's one place) and the launch queue one CUDA stream shares
across an eager pipeline stage's chunks (backlog_issue, steady: issue 44, session 45 ppfree).

A stage's host that issues free of its inputs (free_host below) fills its compute stream's launch queue: the stream
holds Q kernels (llm/host.LAUNCH_QUEUE_KERNELS, 1,000, measured) that it has not started; a further launch blocks the
host until the GPU starts the oldest. The free model at the registering commit of session 44 counted only the task's own
kernels against Q. The ppblock timeline (calibration/h200x2-ppblock-2026-11-30, development for this term) shows hosts
blocking inside a chunk call while the earlier chunks' kernels wait on the GPU for their input (a GPipe stage 0's
second backward call 41 ms against 17 for its first, the call ending 13 ms after the first backward started on the GPU;
stage 1's fourth forward 22 ms against 6 while its first three waited; a 1F1B stage 1's second forward 17 ms against
8): the queue holds every chunk the host has issued ahead, so the host is free until its backlog, the earlier chunks'
kernels not yet started plus this chunk's own, reaches Q.

The host issues the chunk's n kernels c seconds apart from `host_at`. The queue holds, at time t,
    held(t) = sum of k_i over the stage's earlier chunks i with GPU start s_i > t  +  this chunk's kernels issued by t
(while t < its own GPU start `start`; a stream runs in order, so once it started, every earlier chunk had); the host
issues while held < Q, else waits for the next s_i (or `start`). Kernels are counted as a whole chunk until its start
(a chunk's kernels leave the queue as the GPU runs them; its first starts the drain).
"""

from __future__ import annotations

from dataclasses import replace

from simcluster.errors import SimclusterError


def backlog_issue(host_at: float, kernels: int, kernel_s: float, start: float, pending: list[tuple[float, int]],
                  queue: int) -> tuple[float, float]:
    """(when the host issued the chunk's last kernel, the seconds it stood blocked meanwhile): `pending` the stage's
    earlier chunks' (GPU start, kernels), `start` this chunk's GPU start, `queue` the kernels the stream holds (module
    docstring)."""
    t, done, stall = host_at, 0, 0.0
    while done < kernels:
        if t >= start:   # its own GPU start passed: the earlier chunks started too, the rest issues freely
            return t + (kernels - done) * kernel_s, stall
        room = queue - done - sum(k for s, k in pending if s > t)
        if room > 0:
            x = min(kernels - done, room)
            t, done = t + x * kernel_s, done + x
            continue
        nxt = min([s for s, _ in pending if s > t] + [start])
        stall, t = stall + nxt - t, nxt
    return t, stall


ROUNDS = 8   # fixed-point rounds of `steady` (2-stage host-bound pipelines settle in 2-3; the rest is margin)
SETTLED_S = 1e-7   # the offsets' largest change (s) taken as the fixed point


def steady(work, run):
    """The step in the steady state of consecutive steps without a barrier (torch.distributed.pipelining: each rank
    synchronises its own device only, so a stage that ends its step early starts the next one early; the ppblock
    timeline had stage 1 starting its step 1.0-39.1 ms before stage 0, studies/pp_free_timeline.txt (c)): stage s's
    step starts at o_s = e_s - e_0 relative to stage 0's (e_s its end in the step whose starts were o), iterated to the
    fixed point from o = 0; the step is the period, every stage's e_s - o_s. `run(work)` is the pipeline's simulation.
    Offsets that have not settled after ROUNDS rounds: a SimclusterError (the term is off and reached only by studies and
    registrations, regime_predict(backlog=True): an unsettled period would enter a registered prediction unsaid; a caveat
    would carry a new field through IterationResult for no product path)."""
    r = run(work)
    offsets = (0.0,) * work.pp
    for rerun in range(ROUNDS + 1):   # the first run and ROUNDS runs at the offsets it and each next one imply
        new = tuple(e - r.stage_ends_s[0] for e in r.stage_ends_s)
        change = max(abs(a - b) for a, b in zip(new, offsets, strict=True))
        if change < SETTLED_S:
            return replace(r, step_time_s=max(e - o for e, o in zip(r.stage_ends_s, offsets, strict=True)))
        if rerun < ROUNDS:
            offsets = new
            r = run(replace(work, host_offsets=offsets))
    raise SimclusterError(f"launch_backlog.steady: the stages' step offsets did not settle in {ROUNDS} rounds (last change "
                          f"{change * 1e3:.3f} ms); no steady-state step")


def free_host(task, start: float, host_at: float, queue: int = 0, pending: list | None = None,
              action_s: float = 0.0) -> tuple:
    """PipelineWork.free_hosts (llm/simulate.py and maxplus.py, one place): the task (a simulate.Task) with its GPU free
    from `start` (the stream's previous work done, its input arrived) and its host issuing from `host_at` (the host's
    previous issue done; it never waits for the input: the receive is enqueued and the stream waits), and the host's next
    free time. Its kernels end at
        end = max(start + G, host_at + late + bound_s)          (G its GPU-bound time, duration_s less its 'host' part)
    the kernel-by-kernel issue bound (llm/host.py) with the first kernel held until `start`: max_k(max(start, issued_k)
    + the GPU time from k on). The launch queue (`queue` kernels a stream holds, 0: unbounded): a host that has issued
    `queue` kernels at c = issue_s / kernels each while its GPU waits to start this task blocks until it starts,
        stall = max(0, start - host_at - queue c),   next free = host_at + issue_s + stall
    and the task's own kernels after the first `queue` are that late (late = stall where it has more kernels than the
    queue holds, else 0: the stall falls on the next task's issue). With `pending` (PipelineWork.launch_backlog: the
    stage's earlier tasks' (GPU start, kernels)) the queue holds those not yet started too (llm/launch_backlog.py): the
    host blocks where that backlog fills it, late = the seconds blocked, next free = its last issue. The part beyond G is
    'host'. `action_s` (PipelineWork.action_host_s): the schedule's own host seconds before the task's issue, host_at
    advanced by it first. A task without an issue time is returned as it is, host_at too (no action: both engines, here
    in one place)."""
    if task.issue_s <= 0.0:
        return task, host_at
    host_at += action_s
    gpu = task.duration_s - task.parts["host"]
    if pending is not None and queue and task.kernels:
        issued, late = backlog_issue(host_at, task.kernels, task.issue_s / task.kernels, start, pending, queue)
        pending.append((start, task.kernels))
        end = max(start + gpu, host_at + late + task.bound_s)
        return replace(task, duration_s=end - start, parts=dict(task.parts, host=end - start - gpu)), issued
    stall = max(0.0, start - host_at - queue * task.issue_s / task.kernels) if queue and task.kernels else 0.0
    late = stall if task.kernels > queue else 0.0
    end = max(start + gpu, host_at + late + task.bound_s)
    out = replace(task, duration_s=end - start, parts=dict(task.parts, host=end - start - gpu))
    return out, host_at + task.issue_s + stall


def fsdp_step(par) -> bool:
    """A one-stage FSDP2 step (zero 3 over dp > 1, no TP, CP or pipeline): where framework.fsdp_free_phases asks on a
    compiled framework (frees_phases), the step's fixed host seconds go beside the last backward's GPU backlog
    (work._beside_backlog). Its phases stay in series: every such step reduce-scatters, so work.free_hosts is False."""
    return par.pp == 1 and par.zero == 3 and par.dp > 1 and par.tp == 1 and par.cp == 1


def frees_phases(fw, gpus: int, fsdp: bool) -> bool:
    """The one predicate of work.free_hosts and work._beside_backlog: free_phase_host on one GPU, or fsdp_free_phases on
    a compiled framework's one-stage FSDP2 step (`fsdp`: fsdp_step; eager FSDP2 never, whatever its switch: cold review
    B48 item 3)."""
    return fw.free_phase_host and gpus == 1 or fw.fsdp_free_phases and fw.compiled and fsdp
