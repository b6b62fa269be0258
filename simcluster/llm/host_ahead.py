"""The host of an eager pipeline stage runs ahead of its GPU (issue 44, session 39): torch.distributed.pipelining's
stage waits for a boundary tensor with NCCL Work.wait(), which makes the compute stream wait for the receive (an event
on the stream) and returns at once on the host (ProcessGroupNCCL's WorkNCCL::wait blocks the host only under
TORCH_NCCL_BLOCKING_WAIT or a timeout; the schedule passes neither). So each rank's host issues its whole action list
back to back, at its own pace, and never waits for a peer; only the GPU waits for the tensors.

A task (one forward or backward of a chunk, llm/simulate.Task) whose kernels are issued from the host has
  duration_s  the host-bound time from the issue of its first kernel, max_k (k c + sum_{j >= k} t_j) (llm/host.py),
  gpu_s       duration_s - parts['host'] (its kernels back to back), and
  issue_s     the host seconds to issue all of them (sum of each kernel's host cost).
Its host starts issuing when the stage's host finished issuing the previous task (h); its first kernel may run when
the stream is free and its input tensor has arrived (g). On one stream, kernel k ends at the latest of
its issue plus the kernels after it and g plus all of them, so the task ends at
  end = max(g + gpu_s, h + duration_s)
and the host moves on to h + issue_s. Before this (and where `host_ahead` is off) the host started every task when its
GPU could: end = g + duration_s, the host waiting for the peer's tensor, which the runtime does not do. A host-bound
2-stage pipeline then runs the two hosts partly in series: the 0.8b 1F1B x 4 step of
calibration/h200x2-eager-hostbound-noise-2026-11-29 priced at 146.5 ms with that lease's host fit against 118.4 ms
measured (docs/models/llm-findings.md, session 39).
"""

from __future__ import annotations

from dataclasses import replace


def ahead(task, gpu_start: float, host_free: float) -> tuple:
    """(`task`, a simulate.Task, as run from `gpu_start`: its duration end - gpu_start, its 'host' part the GPU's wait
    for the host; the time the stage's host is free again). A task without issue_s (no host priced) is returned as it
    is. simulate.py and maxplus.py both call this (simulate is not imported here)."""
    if task.issue_s <= 0.0:
        return task, host_free
    gpu_s = task.duration_s - task.parts["host"]
    end = max(gpu_start + gpu_s, host_free + task.duration_s)
    waited = end - gpu_start - gpu_s
    return replace(task, duration_s=end - gpu_start, parts=dict(task.parts, host=waited)), host_free + task.issue_s
