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

# (kernel, bytes per element, rate)
SOFTMAX_FWD = (("to_fp32", 6, "unvectorized"), ("masked_fill", 9, "masked_fill"), ("softmax", 8, "softmax"), ("to_bf16", 6, "hbm"))
SOFTMAX_BWD = (("to_fp32", 6, "unvectorized"), ("grad_x_out", 12, "hbm"), ("softmax_backward", 12, "hbm"), ("clone", 8, "hbm"),
               ("masked_fill", 9, "masked_fill"), ("to_bf16", 6, "hbm"))
GLU_FWD = (("silu", 4, "unvectorized"), ("product", 6, "unvectorized"), ("prob_mul", 4, "unvectorized"))
GLU_BWD = (("grad_x_prob", 6, "hbm"), ("grad_x_act", 6, "unvectorized"), ("prob_grad_sum", 2, "hbm"), ("product_grad", 6, "hbm"),
           ("product_grad_strided", 6, "unvectorized"), ("silu_backward", 6, "unvectorized"), ("chunk_cat", 8, "hbm"))
CHAINS = {"softmax": SOFTMAX_FWD, "softmax.bwd": SOFTMAX_BWD, "glu": GLU_FWD, "glu.bwd": GLU_BWD}
UPCAST_ELEMENT_BYTES = 6          # the bf16 -> fp32 copy the card's upcast rate was measured on (2 read + 4 written)
# elements per second per SM, H200 (132 SMs), the development set's two traces (kernel_kinds.py --chain): masked_fill
# 268.4 M scores in 856 us (Mixtral-like) and 536.9 M in 1707 us (Qwen3-like): 314 G/s; cunn_SoftMaxForwardReg 984 / 1962 us: 273 G/s
MASKED_FILL_ELEMENTS_PER_S_PER_SM = 314e9 / 132
SOFTMAX_FWD_ELEMENTS_PER_S_PER_SM = 273e9 / 132
def chain_bytes(chain: str) -> float:
    """Bytes per element the chain's kernels move (read + written)."""
    return float(sum(b for _, b, _ in CHAINS[chain]))


def chain_flops(chain: str, elements: float) -> float:
    """Nominal FLOPs (softmax: 5 per score, its backward twice; the SwiGLU: 4 per element, twice backward)."""
    return (5.0 if chain.startswith("softmax") else 4.0) * elements * (2 if chain.endswith(".bwd") else 1)


def kernel_s(gpu, nbytes: float, elements: float, rate: str) -> float:
    """One kernel's seconds: the copy rate, or the slower of it and its element rate."""
    hbm = gpu.memory_time_s(nbytes)
    if rate == "hbm":
        return hbm
    per_sm = {"unvectorized": gpu.upcast_Bps_per_sm / UPCAST_ELEMENT_BYTES, "masked_fill": MASKED_FILL_ELEMENTS_PER_S_PER_SM,
              "softmax": SOFTMAX_FWD_ELEMENTS_PER_S_PER_SM}[rate]
    return max(hbm, elements / (per_sm * gpu.sm_count))


def time_s(gpu, chain: str, elements: float) -> float:
    """The chain's seconds over `elements` elements."""
    if chain not in CHAINS:
        raise ValueError(f"unknown torch kernel chain {chain!r}: expected one of {sorted(CHAINS)}")
    return sum(kernel_s(gpu, b * elements, elements, rate) for _, b, rate in CHAINS[chain])
