"""Host-bound steps: eager frameworks issue every kernel from the CPU, one after the other.

The host issues kernel k at k c (c = host seconds per kernel); the GPU runs it when it is issued and the
previous kernel is done, so a sequence of kernels with GPU times t_1..t_n ends at
    T = max_k ( k c + sum_{j >= k} t_j )          (k = 1..n)
the GPU-bound time sum t_j when c is small, the issue time n c when the kernels are short. c and a fixed
per-step host cost are the framework's (framework.FrameworkSpec.host_kernel_s, host_step_s), measured on the same
host with a model whose GPU work is negligible: step(L) = a + L k_layer c for L layers of k_layer kernels
(fit_host; calibration/llm-host-2026-11-23). Megatron-style runs (CUDA graphs or enough work per kernel)
keep c = 0.
"""

from __future__ import annotations

import numpy as np

from simcluster.llm import compiled, ops
from simcluster.llm.framework import FrameworkSpec
from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec

# Kernels one CUDA stream queues before a launching host blocks until the GPU starts the oldest: about 1,000, measured
# (a ~190 us kernel launched 10,000 times: the first ~1,000 launches take 4-5 us each, later ones wait ~190 us each, per
# stream; stackoverflow.com/questions/53970187, forums.developer.nvidia.com/t/68937, 2018-2019; NVIDIA documents no
# figure). The lab's own: 1,021 launches queued on one stream before the host blocked, three repeats alike (H200, torch
# 2.11; calibration/h200x2-ppcouple-2026-11-30/runs/queue, runner/launch_queue.py, its rule Q, reported, not fitted).
# Read where a pipeline stage's host runs ahead of its GPU (launch_backlog.free_host).
LAUNCH_QUEUE_KERNELS = 1000

# Host seconds torch.distributed.pipelining's schedule spends before each stage chunk call (its Python between actions,
# the fused batch_isend_irecv posts, the Work.wait calls): 0.45 ms, the mean over the 16 rank-processes of the ppblock
# set of each one's median gap before a chunk call (0.35-0.62 ms; calibration/h200x2-ppblock-2026-11-30/runs,
# pp_timeline.before_chunk; development for session 45's ppfree term, llm/launch_backlog.py). Priced only with
# framework.launch_backlog (off in the product). One lease's seconds (ppblock's), NOT scaled with the host fit: under a
# lease's own host fits (rules O / S) every other host cost moves and this one stays at ppblock's lease (review B45, 11).
# Were the term adopted, it should be a multiple of the single-mode per-kernel cost of the fit in use (0.45 ms over
# ppblock's lease's per-kernel seconds), or fitted per lease, with its development status said.
PIPELINE_ACTION_HOST_S = 0.45e-3


def kernel_times(gpu, op_list: list[ops.Op], dtype: str) -> np.ndarray:
    """GPU time of every kernel of the ops, in issue order (an op of count n is n equal kernels; a fractional count, an op
    only some layers run, has no kernel sequence: the frameworks that call this refuse such models)."""
    if any(o.count != int(o.count) for o in op_list):
        raise ValueError("kernel_times needs whole kernel counts (a sliding-window model's attention ops have fractions)")
    per = [ops.op_time_s(gpu, o, dtype) / o.count for o in op_list]
    return np.repeat(np.array(per, dtype=float), [o.count for o in op_list])


def issue_bound_s(times: np.ndarray, host_kernel_s: float | np.ndarray) -> float:
    """End of the last kernel when the host issues one every host_kernel_s (see the module docstring); an array: each
    kernel's own host seconds (kernel k issued at their sum up to k)."""
    if len(times) == 0:
        return 0.0
    suffix = np.cumsum(times[::-1])[::-1]
    issued = np.cumsum(np.broadcast_to(np.asarray(host_kernel_s, dtype=float), len(times)))
    return float(np.max(issued + suffix))


def recasts_weights(par: ParallelSpec, fw: FrameworkSpec) -> bool:
    """Whether a block's backward casts its weights again: torch.utils.checkpoint re-runs a checkpointed eager block
    under its own autocast (full, every N-th, op); a compiled block saves its bf16 weight copies (llm/compiled.py) and
    casts nothing again, unless checkpointed (full: its compiled forward graph, the casts in it, runs again; session 46).
    work._recast prices them; layer_kernels counts them."""
    return par.recompute in ("full", "op") and fw.eager and (not fw.compiled or par.recompute == "full")


def layer_kernels(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, fw: FrameworkSpec) -> int:
    """Kernels of one layer's forward and backward (with autocast, one cast per weight matrix each way, and again in an
    eager checkpointed block's recomputation: work._recast)."""
    fwd, bwd = compiled.layer_ops(model, par, batch, fw)
    casts = (2 + recasts_weights(par, fw)) * weight_matrices(model, fw) if fw.cast_bytes else 0
    return sum(o.count for o in fwd + bwd) + casts


def weight_matrices(model: TransformerSpec, fw: FrameworkSpec) -> int:
    return (2 if fw.fused_qkv else 4) + model.mlp_matrices


def fit_host(points: list[tuple[int, float]], kernels_per_layer: int) -> tuple[float, float]:
    """Least-squares step(L) = a + L k c over (layers, step seconds) points: (c, a)."""
    layers = np.array([p[0] for p in points], dtype=float)
    steps = np.array([p[1] for p in points], dtype=float)
    if len(set(layers)) < 2:
        raise ValueError("fit_host needs steps at two or more layer counts")
    slope, intercept = np.polyfit(layers, steps, 1)
    return float(slope / kernels_per_layer), float(intercept)
