"""The router and dispatcher preprocess issued call by call where a recipe does not CUDA-graph them (framework
`megatron`'s MoE host after the dispatcher sync, llm/moe_sync.py; issue 44, session 37 moe).

Megatron-Core can capture a MoE layer's router and the dispatcher's preprocess in CUDA graphs (cuda_graph_scope
moe_router, moe_preprocess); the host then launches each as one graph. The source row of moe_sync's per-call cost c had
them captured (the skills' Qwen3 30B BF16 profile), so moe_sync prices the router as one modelled call and the preprocess
as none. A recipe without those graphs issues them op by op, just before the forward's sync, where the host is on the
critical path (the GPU queue drains at every sync). Its forward calls, read from Megatron-Core (router.py
TopKRouter.forward / routing with moe_router_fusion and the benchmarks' force balance; token_dispatcher.py
MoEAlltoAllTokenDispatcher.preprocess, dropless, ep > 1):
- router after its GEMM (ROUTER_CALLS = 7): the random logits (clone, normal_), the fused top-k with its score function,
  the fused aux-loss scores, their tokens-per-expert sum, the fused aux loss, the aux-loss tracker's add;
- preprocess (PREPROCESS_CALLS = 12): the per-expert count and its cast to long, the input splits' reshape-sum, the
  counts' all_gather over TP x EP, the local experts' slice made contiguous, the per-rank, per-TP-rank and per-local-
  expert sums, and the device-to-host copies of the split sizes and counts (4);
less the GRAPH_LAUNCHES = 2 graphs a captured recipe launches instead: UNGRAPHED_CALLS = 17 more forward host calls a
layer pass. A count read from the code (one version; HybridEP's flex preprocess is other code, counted the same), not
traced: +-30% is its honest range. Each costs HOST_CALL_S, Megatron-Core's measured host time per small forward kernel
(framework.MoeHost: 50 us under the profiler on the H200 traces of session 30, 40 us unprofiled), not moe_sync's c,
which is per modelled Transformer Engine call. Their GPU time (a few us each, T x E tensors) is not priced, captured or
not (llm.md, Missing). The backward has no sync and is unchanged. Where moe_sync does not apply (A2A overlap, the local
spec) neither does this term.
"""

from __future__ import annotations

import numpy as np

from simcluster.llm.framework import MoeHost

ROUTER_CALLS = 7
PREPROCESS_CALLS = 12
GRAPH_LAUNCHES = 2
UNGRAPHED_CALLS = ROUTER_CALLS + PREPROCESS_CALLS - GRAPH_LAUNCHES
HOST_CALL_S = MoeHost().kernel_s / MoeHost().profiled_over_plain   # 40 us: Megatron-Core's host per small forward kernel


def ungraphed_calls(fw) -> int:
    """Forward host calls a MoE layer pass adds before its sync when the recipe does not graph router and preprocess."""
    return 0 if fw.moe_graphs else UNGRAPHED_CALLS


def with_ungraphed(seg: np.ndarray, issue_s: float, fw) -> tuple[np.ndarray, np.ndarray]:
    """moe_sync's forward segment (GPU seconds per modelled call, issued at issue_s each) with the ungraphed router /
    preprocess calls appended at its end (they run just before the sync): their GPU time 0, their host HOST_CALL_S."""
    n = ungraphed_calls(fw)
    times = np.concatenate([seg, np.zeros(n)])
    issue = np.concatenate([np.full(len(seg), issue_s), np.full(n, HOST_CALL_S)])
    return times, issue
