"""The router and dispatcher preprocess issued call by call where a recipe does not CUDA-graph them (framework
`megatron`'s MoE host after the dispatcher sync, llm/moe_sync.py; issue 44, session 37 moe).

Megatron-Core can capture a MoE layer's router and the dispatcher's preprocess in CUDA graphs (cuda_graph_scope
moe_router, moe_preprocess); the host then launches each as one graph. The source row of moe_sync's per-call cost c had
them captured (the skills' Qwen3 30B BF16 profile). A recipe without those graphs issues them op by op, just before the
forward's sync, where the host is on the critical path (the GPU queue drains at every sync). Read from NVIDIA/Megatron-LM
at d98e8a64 (2026-08-22; the stored snapshot; the graph scopes postdate 0014f137, which has no moe_preprocess), under
megatron/core/transformer/moe/, with moe_router_fusion, the benchmarks' force balance, dropless, ep > 1:
- router after its GEMM (ROUTER_CALLS = 7; router.py TopKRouter.forward L845-873, routing L746-837): the random logits
  (apply_random_logits L861-863: clone, normal_), the fused top-k with its score function (L779), the fused aux-loss
  scores (L806), their tokens-per-expert sum, the fused aux loss and the aux-loss tracker's add (_apply_aux_loss L410-448);
- preprocess (PREPROCESS_CALLS = 8; token_dispatcher.py MoEAlltoAllTokenDispatcher.preprocess L501-622, L543-596): the
  per-expert count and its cast to long (L543), the input splits' reshape-sum, the counts' all_gather over TP x EP, the
  local experts' slice made contiguous, the per-rank, per-TP-rank and per-local-expert sums.
Not counted: the device-to-host copies of the split sizes and counts (4; _maybe_dtoh_and_synchronize L921-958). Both
forms issue them eagerly: ungraphed at "before_permutation_1" in dispatch_preprocess (L661-663); with moe_preprocess
captured the dispatcher moves that point to "before_ep_alltoall" (__init__ L465-470), issued in token_dispatch
(L702-704), outside the graph, whose scope is MoELayer.preprocess -> dispatch_preprocess (moe_layer.py L454-494,
moe_utils.py maybe_skip_or_early_return_by_cudagraph L1655-1760). Nor any graph launch: the graphed form prices the
router graph as the one modelled `router` call at c and the permutation inside the preprocess graph as the `permute` call
at c (the preprocess graph's launch at 0, inside c's calibration); ungraphed, those two modelled calls are the router
GEMM and the permutation issued eagerly, so the difference is UNGRAPHED_CALLS = 7 + 8 = 15 forward host calls a layer
pass, the rest priced alike. A count read from the code (one version; HybridEP's flex preprocess is other code, counted
the same), not traced: +-30% is its honest range. Each costs HOST_CALL_S = 40 us, Megatron-Core's measured host time per
small forward kernel (framework.MoeHost: 50 us under the profiler on the local spec's H200 traces of session 30, 40 us
unprofiled), not moe_sync's c (147.2 us, an effective cost per modelled Transformer Engine call that carries the
unmodelled calls around it, from a DGX-H100 profile). Applied to Transformer Engine's fused router kernels, an NCCL
all_gather and small torch ops on DGX-H100 hosts it is an extrapolation (other kernels, other host CPUs), not a
measurement of these calls. Their GPU time is not this term's: llm/moe_router_term prices the router chain's GPU time
for its adopted frameworks since session 49's adopt49 (its kernel time since session 50's adopt50), captured or not.
The backward has no sync and is unchanged. Where moe_sync does not apply (A2A overlap, the local spec)
neither does this term (a scenario's `framework.moe_graphs: false` is refused there, llm/job.py).
"""

from __future__ import annotations

import numpy as np

from simcluster.llm import moe_router_term, moe_router_unfused
from simcluster.llm.framework import MoeHost

ROUTER_CALLS = 7       # router.py at d98e8a64 (docstring)
PREPROCESS_CALLS = 8   # token_dispatcher.py preprocess at d98e8a64, less the D2H copies both forms issue
UNGRAPHED_CALLS = ROUTER_CALLS + PREPROCESS_CALLS
HOST_CALL_S = MoeHost().kernel_s / MoeHost().profiled_over_plain   # 40 us: Megatron-Core's host per small forward kernel


def router_host(fw) -> tuple[int, float]:
    """(calls, host seconds each) of the ungraphed router after its GEMM: the unfused router's measured ones where it is
    priced (moe_router_term.unfused, the condition of its GPU price and caveat too), else ROUTER_CALLS x HOST_CALL_S."""
    if moe_router_term.unfused(fw):
        return moe_router_unfused.measured_router_calls()
    return ROUTER_CALLS, HOST_CALL_S


def ungraphed_calls(fw) -> int:
    """Forward host calls a MoE layer pass adds before its sync when the recipe does not graph router and preprocess."""
    return 0 if fw.moe_graphs else router_host(fw)[0] + PREPROCESS_CALLS


def with_ungraphed(seg: np.ndarray, issue_s: float, fw) -> tuple[np.ndarray, np.ndarray]:
    """moe_sync's forward segment (GPU seconds per modelled call, issued at issue_s each) with the ungraphed router /
    preprocess calls appended at its end (they run just before the sync): their GPU time 0, their host HOST_CALL_S; the
    router's measured where the recipe runs Megatron-Core's unfused router (llm/moe_router_unfused.router_host)."""
    if fw.moe_graphs:
        return np.asarray(seg, dtype=float), np.full(len(seg), issue_s)
    rn, rs = router_host(fw)
    times = np.concatenate([seg, np.zeros(rn + PREPROCESS_CALLS)])
    issue = np.concatenate([np.full(len(seg), issue_s), np.full(rn, rs), np.full(PREPROCESS_CALLS, HOST_CALL_S)])
    return times, issue
