"""Data-parallel collectives beside the compute they overlap, or on its stream (the forward gathers and bucket reductions moved out of
llm/work.py in session 55, hfds55, with the one new case: FrameworkSpec.dp_on_compute_stream, the reductions serial).

Beside: NCCL kernels on their own stream beside compute, each slowing the other by the GPU card's measured comm_overlap
(FrameworkSpec.comm_interference; llm/overlap.beside, as work.py has priced it since session 43).

dp_on_compute_stream (DeepSpeed's zero_optimization.overlap_comm false, its default for stages 1 and 2 and what
LLaMA-Factory's examples/deepspeed/ds_z2_config.json and ds_z3_config.json set): DeepSpeed issues its gradient
reductions on the compute stream and waits for them there (DeepSpeed v0.16.4: stage_1_and_2.py average_tensor, `stream =
get_accelerator().current_stream()` without overlap_comm; stage3.py L268-269 reduce_and_partition_stream = the default
stream, and runtime/comm/coalesced_collectives.py L22-23 its reduce_scatter with async_op=False). So a reduction of C
seconds adds C to the compute it would have overlapped, and nothing runs after the backward.
ZeRO-3's parameter all_gathers are not serial, whatever overlap_comm says (cold review C55, item 1): each is launched with
async_op=True (partition_parameters.py L94-95), its handle kept in flight (partitioned_param_coordinator.py L497-503)
and waited for only when the module needing it is fetched (L320-343), and fetch_sub_module launches the next modules'
gathers (prefetch, L350-412) before the current module's forward runs. overlap_comm picks only the stream the launch is
ordered on (parameter_offload.py L143-144: the default stream when false); torch's ProcessGroupNCCL runs the kernel on
its own stream, which waits for the issuing stream at launch only. So the gathers run beside compute, prefetched one
call ahead, slowing it by the card's comm_overlap (hf-deepspeed sets comm_interference, as the overlapped variant):
  forward  = compute beside AG;   backward = (compute beside AG) + RS   (ZeRO-3, per layer's calls summed)
  ZeRO-1/2 backward = compute + the buckets' reductions, and no reduction left after it.
The serial reductions do not run beside compute, so the card's interference does not apply to them. Not measured: no
published or lab row runs overlap_comm false (llm.md "Hugging Face trainers").
"""

from __future__ import annotations

from simcluster.llm import host
from simcluster.llm.framework import FrameworkSpec
from simcluster.llm.overlap import beside
from simcluster.llm.spec import TransformerSpec


def forward_gather_s(compute_s: float, gather_s: float, layers: int, gpu, fw: FrameworkSpec) -> float:
    """Exposed seconds of a forward's per-layer parameter all_gathers (`layers` calls, `gather_s` in all): beside the
    compute, prefetched one call ahead (what they cost the compute, their excess over it, the first call ahead), under
    dp_on_compute_stream too (DeepSpeed's gathers are async and prefetched whatever overlap_comm says: module docstring)."""
    slow, span = beside(compute_s, gather_s, gpu, fw)
    return slow + max(0.0, span - compute_s - slow) + gather_s / layers


def buckets_beside(compute_s: float, buckets: list[float], gpu, fw: FrameworkSpec) -> tuple[float, list[float]]:
    """The last backward's gradient-bucket reductions beside its `compute_s`: (compute seconds lost, each bucket's time
    stretched to the span the reductions take beside it). On the compute stream (dp_on_compute_stream): the compute
    takes their whole time and no bucket is left to run after it."""
    total = sum(buckets)
    if fw.dp_on_compute_stream:
        return total, [0.0] * len(buckets)
    slow, span = beside(compute_s, total, gpu, fw)
    return slow, [t * span / total for t in buckets] if total > 0 else list(buckets)


def calls_per_layer(model: TransformerSpec, fw: FrameworkSpec) -> int:
    """ZeRO-3's all_gather / reduce_scatter calls per layer: one per FSDP unit (a block), or one per weight matrix
    under FrameworkSpec.zero3_module_calls (DeepSpeed's per-submodule fetch; docs/models/llm.md "Hugging Face
    trainers"). The norms' weights stay whole on every rank there (stage3_param_persistence_threshold) and are not counted."""
    return host.weight_matrices(model, fw) if fw.zero3_module_calls else 1
