"""Eager pipeline steps run back to back with no barrier between them (issue 44, session 39): the runner's loop (and a
torch.distributed.pipelining training loop) ends a step on each rank when that rank's own GPU is done
(torch.cuda.synchronize of its device; no collective joins the ranks at the step's end), and the rank's host starts
the next step at once. With the host running ahead of the GPU (llm/host_ahead.py), a rank that ends its step early
starts issuing the next one while its peers finish theirs: in a host-bound 1F1B or GPipe step the last stage ends
first (its last backward is the step's first to finish) and its host is already issuing the next step's forwards when
the first stage runs its last backward.

The measured step is that loop's period. With stage s starting its step at o_s (host and GPU) and ending it at
e_s(o) (llm/maxplus.py, PipelineWork.stage_start_s), the next step starts at o'_s = e_s(o); since the recurrence
only adds and takes maxima, e(o + c) = e(o) + c, so the offsets o - min(o) are iterated to their fixed point and the
period is e_s - o_s (one value for every stage at the fixed point; their maximum if ROUNDS were not enough). A
GPU-bound pipeline's offsets change nothing (each stage waits for its inputs); only a host that is free before its
inputs arrive gains. Pipelines whose framework keeps the hosts in step (Megatron: the loss and gradient-norm
collectives across the pipeline every step), or without host_ahead, are left as they are (one iteration from t = 0).
"""

from __future__ import annotations

from dataclasses import replace

from simcluster.llm.maxplus import evaluate_iteration
from simcluster.llm.simulate import PipelineWork

ROUNDS = 16          # steps iterated at most (the fixed point is reached in 1-3 on every eager pipeline measured)
TOLERANCE_S = 1e-9   # offsets this close (seconds) are the fixed point


def free_running(work: PipelineWork) -> PipelineWork:
    """The work with stage_start_s at the loop's fixed point (module docstring); as it is without host_ahead or with
    one stage."""
    if not work.host_ahead or work.pp < 2:
        return work
    starts = (0.0,) * work.pp
    for _ in range(ROUNDS):
        it = evaluate_iteration(replace(work, stage_start_s=starts))
        ends = [o + e for o, e in zip(starts, it.stage_ends_s, strict=True)]
        nxt = tuple(e - min(ends) for e in ends)
        if max(abs(a - b) for a, b in zip(nxt, starts, strict=True)) <= TOLERANCE_S:
            break
        starts = nxt
    return replace(work, stage_start_s=nxt)
