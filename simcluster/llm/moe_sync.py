"""The host after Megatron-Core's MoE dispatcher sync, under Transformer Engine (framework `megatron`; issue 44, moepub).

Every forward MoE layer pass synchronises the host with the GPU: the dispatcher needs the token counts on the host
(the alltoall dispatcher's split sizes, token_dispatcher.py MoEAlltoAllTokenDispatcher.preprocess, cuda_sync_point
"before_ep_alltoall"; HybridEP without a token bound and DeepEP's normal dispatch wait for their counts likewise;
TE's grouped GEMM takes the per-expert splits as a host list; llm-findings.md, session moe). After the sync the GPU
queue is empty, so the forward from one sync to the next (the dispatch, the experts, the combine, then the next
attention block and router) runs at
    T_f = max_k ( k c + sum_{j >= k} t_j )          (llm/host.issue_bound_s)
over its kernels t_j, the host issuing one every c seconds; the backward has no sync, its kernels one stream over
the chunk's layers. The excess over the GPU-bound time is the layer's `host` part (work.build_work). Not modelled: the
sync of a MoE forward recomputed in the backward (recompute_modules moe: the backward is still one stream), CUDA
graphs (fewer host calls where a recipe captures the router and preprocess; the source row below had them).
Not priced under moe_a2a_overlap (applies): the source's overlap row shows no GPU idle (GPU-active union 21.221 s in a
20.99-21.07 s step), so whatever host time the overlapped schedule has is hidden there; the term's size under the
overlap is therefore left out, not modelled (mendB, s35: before, the term put 5.9 s of idle into that row).

c is per *modelled* host call (one per op, an expert GEMM group one, the EP dispatch and combine one each): an
effective host cost, not a launch latency. FrameworkSpec.moe_sync_kernel_s (every Transformer Engine framework) is
derived from one measured GPU-idle figure, not from any step time: the Nsight Systems profile that Megatron-Bridge's
skills report for Qwen3 30B-A3B on 16 H100 (BF16, EP 16 HybridEP, no EP overlap, CUDA graphs over router and
preprocess; calibration/published/llm-megatron-bridge-skills-qwen3-30b-h100-bf16.yaml row 0): a 24.7138 s step
with a 22.821 s GPU-active union, 1.89 s of GPU idle; c is the value at which this term adds 1.89 s to that row's
predicted step (`python studies/moe_te_host.py` derives it; tests/test_llm_moe_sync.py checks the constant).
"""

from __future__ import annotations

import numpy as np

from simcluster.llm import host, moe_graphs, ops

SYNC_AFTER = "router"   # the dispatcher's preprocess (and its sync) follows the router
PAD_NO_SYNC = True      # capacity padding has no sync (applies); off inside the handles of the sets registered before
                        # session 51's moedev51 (heldout/registration._router_term_as), which priced the sync there too
# The Megatron-Core versions whose padded path has no sync (session 51 mendC51, cold review C51 item 1): f27a04f6
# (NVIDIA/Megatron-LM, 2025-01-10, "Make MoE token dispatcher cuda graph-able if token-drop and padding") first in
# core_v0.11.0 (aa6207e2), not an ancestor of core_v0.10.0 (7ee599a2). A published file sets parallel.moe_pad_to_capacity
# only where its stated software maps to such a core (PAD_NO_SYNC_SOFTWARE, checked by tests/test_llm_moe_sync.py);
# an earlier or unknown core keeps the sync (the dgxc Grok-1 files: NeMo 24.12 = core 0.10, and v24.11.1's unnamed
# nemo:dev image).
PAD_NO_SYNC_SOFTWARE = {"NeMo 25.09": "Megatron-Bridge's 25.09 container, after core_v0.11.0 (2025-03-14) by its date"}


def applies(fw, par) -> bool:
    """Whether the term prices this layer: a Transformer Engine framework (FrameworkSpec.transformer_engine: megatron,
    megatron-te-fa2, megatron-unfused-loss; not the local spec, whose MoeHost prices its host, layer_work._moe_host) with a
    host cost per call, and no A2A overlap. Under
    moe_a2a_overlap the same Nsight table gives no GPU idle (rank 0's GPU-active union 21.221 s in a 20.99-21.07 s step,
    the source's row 1): the host's calls are hidden behind the other micro-batch's overlapped compute and
    communication, so the term is 0 there (a consequence of that profile, not a model of the overlapped schedule's host).
    Nor under capacity padding on Megatron-Core >= 0.11 (par.moe_pad_to_capacity, Megatron's
    moe_pad_expert_input_to_capacity; session 51, moedev51, narrowed by mendC51): every expert's token count is its
    capacity, known on the host, so the alltoall dispatcher keeps cuda_sync_point "no_sync", and since f27a04f6
    (core_v0.11.0) permute / unpermute take the drop_and_pad argsort path with no boolean index (at d98e8a64
    token_dispatcher.py preprocess returns before any sync point); the host then runs ahead of the GPU through the layer
    as through a dense one. At core_v0.10.0 (7ee599a2) the dispatcher's explicit sync is also "no_sync" (L322-392) but
    moe_utils.permute (L178) and unpermute (L212) call masked_select, whose output size the host reads back: the sync
    stays there, so files on such cores (before core_v0.11.0) do not set the key."""
    padded = par.moe_pad_to_capacity and PAD_NO_SYNC
    return fw.transformer_engine and fw.moe_host is None and fw.moe_sync_kernel_s > 0 and not par.moe_a2a_overlap and not padded


def kernel_list(gpu, op_list: list, dtype: str) -> np.ndarray:
    """GPU seconds of each modelled host call in issue order: an op of count n as round(n) (at least 1) equal calls (a
    fractional count, an op only some layers run, rounds); an expert GEMM group as one call (Transformer Engine's
    grouped linear issues its per-expert cuBLAS GEMMs from one call, in C++: ops.GROUPED_GEMMS)."""
    out = [np.full(max(1, round(o.count)), ops.op_time_s(gpu, o, dtype) / max(1, round(o.count))) for o in op_list]
    return np.concatenate(out) if out else np.zeros(0)


def forward_segment(gpu, fwd_ops: list, dtype: str, ep_f: float) -> np.ndarray:
    """The kernels from one forward sync to the next: the layer's ops after the router, with the exposed dispatch and
    combine (ep_f, half each) after the permutation and after the last expert GEMM, then the ops up to the router."""
    names = [o.name for o in fwd_ops]
    cut = names.index(SYNC_AFTER) + 1 if SYNC_AFTER in names else 0
    after, before = fwd_ops[cut:], fwd_ops[:cut]
    parts = []
    for o in after:
        parts.append(kernel_list(gpu, [o], dtype))
        if o.name in ("permute", "expert_down"):
            parts.append(np.array([ep_f / 2]))
    parts.append(kernel_list(gpu, before, dtype))
    return np.concatenate(parts)


def sync_host_s(gpu, fwd_ops: list, bwd_ops: list, dtype: str, ep_f: float, ep_b: float,
                chunk_layers: int, kernel_s: float, fw=None) -> tuple[float, float]:
    """The host excess of one MoE layer (forward, backward) at kernel_s host seconds per modelled kernel: the forward
    segment between two syncs, the backward as one stream over the chunk's chunk_layers layers (per layer). fw: the
    framework, whose moe_graphs False adds the router / preprocess calls a recipe leaves ungraphed (llm/moe_graphs.py);
    None: captured, as the source row of kernel_s."""
    if kernel_s <= 0:
        return 0.0, 0.0
    seg = forward_segment(gpu, fwd_ops, dtype, ep_f)
    times, issue = moe_graphs.with_ungraphed(seg, kernel_s, fw) if fw is not None else (seg, kernel_s)
    extra_f = max(0.0, host.issue_bound_s(times, issue) - float(seg.sum()))
    n = max(1, chunk_layers)
    one = np.concatenate([kernel_list(gpu, bwd_ops, dtype), np.array([ep_b])])
    stream = np.tile(one, n)
    extra_b = max(0.0, host.issue_bound_s(stream, kernel_s) - float(stream.sum())) / n
    return extra_f, extra_b
