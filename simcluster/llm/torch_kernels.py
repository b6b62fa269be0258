"""Megatron-Core's local layer spec (framework megatron-local-spec: no Transformer Engine, no Apex, no fusions) runs two
parts of each layer as chains of plain torch kernels, priced here kernel by kernel at each kernel's own rate (issue 44,
session 40; docs/models/llm.md "Megatron-Core local spec"):

  the attention core's softmax (FusedScaleMaskSoftmax.forward_torch_softmax, masked_softmax_fusion off, softmax in fp32),
    per score element of the b x heads x s x s tensor:
      forward   .float() copy (6 B), masked_fill with the causal mask (4 + 1 + 4), softmax (4 + 4), .to(bf16) (4 + 2)
      backward  the gradient's .float() copy (6), softmax's backward: grad x output (4 + 4 + 4) and the
                _softmax_backward_data kernel (12), masked_fill's backward: clone (4 + 4) and masked_fill_ (9), .to(bf16) (6)
  the experts' SwiGLU (MLP with bias_activation_fusion off, gated_linear_unit: torch.chunk, silu(x0) * x1, then the
    routing probability's multiply per_token_scale), per element of the routed tokens x expert ffn:
      forward   silu on the strided half, the product of the two halves, the probability's multiply: 3 element passes
      backward  the probability's multiply: grad x prob (2 + 2 + 2) and grad x act (unvectorized) with its sum over ffn
                (2); the product's: one vectorized (6) and one unvectorized multiply; silu's backward (unvectorized);
                the chunk's backward, a cat of both halves (4 + 4)

Rates: 'hbm' kernels (torch's vectorized elementwise loop, the softmax backward, copies) at the card's copy rate
(GpuSpec.memory_time_s); 'unvectorized' kernels (torch's elementwise_kernel / unrolled_elementwise_kernel: a dtype-converting
copy, an operand strided or broadcast) at the element rate of the card's measured bf16 -> fp32 copy (GpuSpec.upcast_Bps_per_sm
over its 6 bytes: 343 G elements / s on an H200, calibration/h200x1-llm-compile4-2026-11-29, independent of these sets);
masked_fill (a broadcast bool mask) and the fp32 softmax forward (cunn_SoftMaxForwardReg, one row per block) at their
own element rates per SM, read from the development set calibration/h200x4-megatron-moe-2026-11-27 (its two traces,
studies/megatron_moe/kernel_kinds.py --chain: rows of 4096, 268 M and 537 M scores a layer; the same kernels in the
registered sets were not used to set them). The rates are per SM (scaled by the card's SM count, an assumption off the H200).
"""

from __future__ import annotations

# (kernel, bytes per element, rate[, share: the kernel's elements per chain element, 1 if absent])
SOFTMAX_FWD = (("to_fp32", 6, "unvectorized"), ("masked_fill", 9, "masked_fill"), ("softmax", 8, "softmax"), ("to_bf16", 6, "hbm"))
SOFTMAX_BWD = (("to_fp32", 6, "unvectorized"), ("grad_x_out", 12, "hbm"), ("softmax_backward", 12, "hbm"), ("clone", 8, "hbm"),
               ("masked_fill", 9, "masked_fill"), ("to_bf16", 6, "hbm"))
GLU_FWD = (("silu", 4, "unvectorized"), ("product", 6, "unvectorized"), ("prob_mul", 4, "unvectorized"))
GLU_BWD = (("grad_x_prob", 6, "hbm"), ("grad_x_act", 6, "unvectorized"), ("prob_grad_sum", 2, "hbm"), ("product_grad", 6, "hbm"),
           ("product_grad_strided", 6, "unvectorized"), ("silu_backward", 6, "unvectorized"), ("chunk_cat", 8, "hbm"))
# Session 40, engineer moekern2: the rest of the local spec's layer, per element of the tensors named (docs/models/llm.md)
#   rotary (apply_rope_fusion off: Megatron-Core's _apply_rotary_pos_emb_bshd, per query and key element): t x cos and
#     rotate_half(t) x sin (broadcast cos / sin: unvectorized), rotate_half's neg of one half and its cat, the add, and the
#     cat with the (empty) pass-through slice; backward: both multiplies, the neg, chunk's cat, the gradients' add, the split's cat
#   qk_norm (RMSNorm per head, torch's fused_rms_norm over rows of head_dim): forward one kernel; backward grad_input and
#     the weight's GammaBeta reduction, whose template torch picks by the rows (rate 'gamma_beta', below)
#   attn_layout (the unfused core's context copy, [b np s d] -> [s b np d], per context element): a strided copy; backward one
#   gqa_expand (repeat_interleave of key and value to the query heads, per expanded element): a strided copy; backward
#     ExpandBackward's sum over the group (a reduction)
ROTARY_FWD = (("x_cos", 6, "unvectorized"), ("neg_half", 2, "unvectorized", 0.5), ("rotate_cat", 4, "cat"), ("x_sin", 6, "unvectorized"),
              ("add", 6, "hbm"), ("pass_cat", 4, "hbm"))
ROTARY_BWD = (("grad_x_cos", 6, "unvectorized"), ("grad_x_sin", 6, "unvectorized"), ("neg_half", 2, "unvectorized", 0.5),
              ("chunk_cat", 4, "cat"), ("grad_add", 6, "hbm"), ("split_cat", 4, "hbm"))
NORM_FWD = (("rms_norm", 4, "norm"),)
NORM_BWD = (("grad_input", 6, "norm_grad_input"), ("gamma_beta", 4, "gamma_beta"))
LAYOUT = (("strided_copy", 4, "strided_copy"),)
EXPAND_BWD = (("expand_sum", 2, "expand_sum"),)
# Session 41 (issue 44, engineer moegpu; docs/models/llm.md):
#   vocab_ce (Megatron-Core 0.14 _VocabParallelCrossEntropy unfused, per logit of the rank's t x V/tp logits): forward the
#     logits' .float() (a converting copy: unrolled, 6), max over the vocabulary (a reduction reading 4), the max's subtract
#     in place (a broadcast operand: torch's non-vectorized elementwise_kernel, 4 + 4), exp in place (vectorized, 8), the
#     sum (4), the divide by it in place (broadcast, 8): the 38 B of UNFUSED_LOSS; backward the gradient's multiply in
#     place by the broadcast loss gradient (8) and the cast back to bf16 (vectorized, 6): the 14 B
#   topk (the router's torch.topk calls, per routing score of the t x experts logits): two top-k calls a forward (fp32 and
#     bf16; each a gatherTopK over rows of experts and a bitonicSortKVInPlace of the k chosen), the routing map's scatter
#     and its zero fills (a few us each, priced at their development per-call times); backward none of its own
VOCAB_CE_FWD = (("to_fp32", 6, "unvectorized"), ("max", 4, "hbm"), ("sub_max", 8, "unvectorized"), ("exp", 8, "hbm"),
                ("sum", 4, "hbm"), ("div_sum", 8, "unvectorized"))
VOCAB_CE_BWD = (("grad_mul", 8, "unvectorized"), ("to_bf16", 6, "hbm"))
#   embedding_dense (torch's embedding_dense_backward, per element of the t x h gathered rows' gradient; its zero-filled
#     V/tp x h bf16 weight gradient is a memory op beside it: vocab_ops): the indices' radix sort (cub: eight onesweep
#     passes and a few small kernels, a per-call time), compute_grad_weight (the rows' gradient summed per segment of equal
#     index, 2 + 4 B) and sum_and_scatter (the segments' sums into the weight gradient, 4 + 2 B) at their own element rate
EMBEDDING_DENSE = (("index_sort", 0, "emb_sort"), ("compute_grad_weight", 6, "emb_segments"), ("sum_and_scatter", 6, "emb_segments"))
TOPK_FWD = (("gather_fp32", 4, "topk_fp32"), ("sort_fp32", 0, "topk_sort"), ("gather_bf16", 2, "topk_bf16"), ("sort_bf16", 0, "topk_sort"),
            ("scatter", 0, "topk_scatter"), ("fills", 0, "topk_fills"))
CHAINS = {"softmax": SOFTMAX_FWD, "softmax.bwd": SOFTMAX_BWD, "glu": GLU_FWD, "glu.bwd": GLU_BWD, "rotary": ROTARY_FWD,
          "rotary.bwd": ROTARY_BWD, "qk_norm": NORM_FWD, "qk_norm.bwd": NORM_BWD, "attn_layout": LAYOUT, "attn_layout.bwd": LAYOUT,
          "gqa_expand": LAYOUT, "gqa_expand.bwd": EXPAND_BWD, "vocab_ce": VOCAB_CE_FWD, "vocab_ce.bwd": VOCAB_CE_BWD,
          "topk": TOPK_FWD, "topk.bwd": (), "embedding_dense": EMBEDDING_DENSE}
UPCAST_ELEMENT_BYTES = 6          # the bf16 -> fp32 copy the card's upcast rate was measured on (2 read + 4 written)
# elements per second per SM, H200 (132 SMs), the development set's two traces (kernel_kinds.py --chain): masked_fill
# 268.4 M scores in 856 us (Mixtral-like) and 536.9 M in 1707 us (Qwen3-like): 314 G/s; cunn_SoftMaxForwardReg 984 / 1962 us: 273 G/s
MASKED_FILL_ELEMENTS_PER_S_PER_SM = 314e9 / 132
SOFTMAX_FWD_ELEMENTS_PER_S_PER_SM = 273e9 / 132
# the same development set's Mixtral-like trace (16 query / 8 key heads of 128, 4096 tokens, 4 layers; kernel by kernel,
# session 40 moekern2), elements per second on 132 SMs: rotate_half's CatArrayBatchedCopy 50.3 M elements in 217 us;
# repeat_interleave's and the context reshape's strided copies 67.1 M in 152 us; fused_rms_norm over rows of 128, forward
# 12.6 M in 63.6 us, grad_input in 70.8 us; ExpandBackward's sum 16.8 M expanded elements a layer in 87.3 us; GammaBeta:
# rows <= 64 Ki (its 32 x 32 template: the Mixtral-like q and k, the Qwen3-like k) 114.7 K rows in 301.9 us, more rows
# (the 32 x 1 template: the Qwen3-like q, 131 K rows) 24.6 us
PER_S_PER_SM = {"cat": 232e9 / 132, "strided_copy": 441e9 / 132, "norm": 198e9 / 132, "norm_grad_input": 178e9 / 132,
                "expand_sum": 192e9 / 132}
GAMMA_BETA_ROWS_PER_S_PER_SM = (380e6 / 132, 5.33e9 / 132)   # (rows <= GAMMA_BETA_FAST_ROWS, more)
# torch's switch, not a fit: LaunchGammaBetaBackwardCUDAKernel (aten/src/ATen/native/cuda/layer_norm_kernel.cu) takes the
# 32 x 1 path when M > 64 * 1024 rows and N / 32 < SMs / 2 (row 128: 4 < 66); the traces only bracket it in (64 Ki, 128 Ki].
# Only the row count is checked here: the second condition holds for QK-norm's rows of head_dim <= 128 on >= 16 SMs.
GAMMA_BETA_FAST_ROWS = 64 * 1024
# CALL_RATES: kernels priced as (seconds a call, elements a second on 132 SMs; 0: no per-element term), the router's
# top-k (topk_*, elements: routing scores) and the embedding backward (emb_*, elements: gradient elements).
# The router's top-k kernels, from the development set's two traces
# (h200x4-megatron-moe-2026-11-27, 4096 tokens, 4 layers): gatherTopK fp32 11.6 us at 8 experts (32.8 K scores), 32.8 us at
# 128 (524 K); bf16 8.9 / 27.2 us; a line through the two: a per-call time and a score rate. bitonicSortKVInPlace 6.1-6.3 us,
# the scatter 4.4-4.7 us, the two fills 0.8 us each, the same at 8 and 128 experts: per-call times (not read at other token counts)
# the same two traces' embedding backward (4096 x 2048 rows' gradient, once a step): the radix sort's kernels 57.5 / 57.8 us
# in all (47.6 / 46.6 us of onesweep passes), compute_grad_weight 58.1 / 57.7 us and sum_and_scatter 58.0 / 58.8 us: 145 G
# elements / s each (the sort not read at other token counts)
CALL_RATES = {"topk_fp32": (10.2e-6, 23.2e9), "topk_bf16": (7.7e-6, 26.9e9), "topk_sort": (6.2e-6, 0.0), "topk_scatter": (4.5e-6, 0.0),
              "topk_fills": (1.6e-6, 0.0), "emb_sort": (57.6e-6, 0.0), "emb_segments": (0.0, 145e9)}


def chain_bytes(chain: str) -> float:
    """Bytes per element the chain's kernels move (read + written)."""
    return float(sum(k[1] for k in CHAINS[chain]))


def chain_flops(chain: str, elements: float) -> float:
    """Nominal FLOPs (softmax: 5 per score, its backward twice; the SwiGLU: 4 per element, twice backward)."""
    if chain.startswith(("topk", "embedding_dense")):
        return 0.0
    return (5.0 if chain.startswith(("softmax", "vocab_ce")) else 4.0) * elements * (2 if chain.endswith(".bwd") else 1)


def kernel_s(gpu, nbytes: float, elements: float, rate: str, row: float = 0.0) -> float:
    """One kernel's seconds: the copy rate, or the slower of it and its element rate (gamma_beta: rows of `row` elements)."""
    hbm = gpu.memory_time_s(nbytes)
    if rate == "hbm":
        return hbm
    if rate in CALL_RATES:
        call_s, per_s = CALL_RATES[rate]
        return call_s + (elements / (per_s / 132 * gpu.sm_count) if per_s else 0.0)
    if rate == "gamma_beta":
        rows = elements / row
        return max(hbm, rows / (GAMMA_BETA_ROWS_PER_S_PER_SM[rows > GAMMA_BETA_FAST_ROWS] * gpu.sm_count))
    per_sm = {"unvectorized": gpu.upcast_Bps_per_sm / UPCAST_ELEMENT_BYTES, "masked_fill": MASKED_FILL_ELEMENTS_PER_S_PER_SM,
              "softmax": SOFTMAX_FWD_ELEMENTS_PER_S_PER_SM, **PER_S_PER_SM}[rate]
    return max(hbm, elements / (per_sm * gpu.sm_count))


def time_s(gpu, chain: str, elements: float, row: float = 0.0) -> float:
    """The chain's seconds over `elements` elements (row: a norm's row length)."""
    if chain not in CHAINS:
        raise ValueError(f"unknown torch kernel chain {chain!r}: expected one of {sorted(CHAINS)}")
    return sum(kernel_s(gpu, k[1] * elements, elements * (k[3] if len(k) > 3 else 1.0), k[2], row) for k in CHAINS[chain])
