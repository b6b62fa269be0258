"""A MoE layer's compute split as Megatron's combined 1F1B schedule runs it (MoeCompute, moe_compute) and the merged
forward / backward pair's time (a2a_pair_s): what llm/work.py's exposed expert-parallel time (exposed_ep) is built on."""

from __future__ import annotations

from dataclasses import dataclass

from simcluster.llm import ops


@dataclass(frozen=True)
class MoeCompute:
    """A MoE layer's compute (seconds) split as Megatron's combined 1F1B schedule runs it: the forward's pre-dispatch part
    (attention block, router) and MLP part (permutations, experts, shared expert), the backward's MLP input gradients
    (recomputed MLP forwards included), its MLP weight gradients (dw, delayed: delay_wgrad_compute) and the rest (the
    pre-dispatch backward, the main_grad additions); and the shared expert's kernels (forward, backward)."""
    pre_f: float
    mlp_f: float
    pre_b: float
    mlp_b: float
    dw_b: float
    shared_f: float = 0.0
    shared_b: float = 0.0

    @property
    def total(self) -> float:
        return self.pre_f + self.mlp_f + self.pre_b + self.mlp_b + self.dw_b


def moe_compute(gpu, fwd_ops: list, bwd_ops: list, dtype: str, comp_f: float, comp_b: float) -> MoeCompute:
    """The layer's ops split (MoeCompute); comp_f, comp_b: their totals, which build_work has already summed."""
    def base(op) -> str:
        return op.name.removeprefix("recompute.").split(".")[0]

    def seconds(sel) -> float:
        return sum(ops.op_time_s(gpu, o, dtype) for o in sel)

    mlp = set(ops.MOE_OPS) - set(ops.ROUTER_OPS)   # the router runs before the dispatch
    mlp_f = seconds(o for o in fwd_ops if base(o) in mlp)
    dw_b = seconds(o for o in bwd_ops if base(o) in mlp and o.name.endswith(".wgrad"))
    mlp_b = seconds(o for o in bwd_ops if base(o) in mlp and not o.name.endswith(".wgrad"))
    shared = [seconds(o for o in lst if base(o) in ops.SHARED_EXPERT_OPS) for lst in (fwd_ops, bwd_ops)]
    return MoeCompute(comp_f - mlp_f, mlp_f, comp_b - mlp_b - dw_b, mlp_b, dw_b, *shared)


def a2a_pair_s(c: MoeCompute, ep_f: float, ep_b: float) -> float:
    """One forward and one backward MoE layer merged by Megatron's combined 1F1B (overlap_moe_expert_parallel_comm;
    megatron/core/models/common/model_chunk_schedule_plan.py, TransformerLayerSchedulePlan.run), dispatch and combine
    each half of a pass's EP time. Three phases, each waiting for both streams of the one before (its inputs):
        comm stream                     | compute stream
      A combine_bwd                     | pre_dispatch_fwd
      B dispatch_fwd -> dispatch_bwd    | mlp_bwd -> mlp_bwd_dw -> mlp_fwd
      C combine_fwd                     | pre_dispatch_bwd
    in B dispatch_bwd waits for mlp_bwd, mlp_fwd for dispatch_fwd."""
    d_f = c_f = ep_f / 2
    d_b = c_b = ep_b / 2
    a = max(c_b, c.pre_f)
    b = max(max(c.mlp_b + c.dw_b, d_f) + c.mlp_f, max(d_f, c.mlp_b) + d_b)
    return a + b + max(c_f, c.pre_b)
