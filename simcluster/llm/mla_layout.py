"""MLA's query, key and value as the attention kernel takes them (issue 44, session 36 moeprof).

Multi-latent attention's up-projections give q [T, a', d_nope + d_rope] and kv [T, a', d_nope + d_v]; the one rotary
key k_pe [T, d_rope] comes from the K/V down-projection. The fused attention kernel takes contiguous query and key of
d_nope + d_rope per head and a contiguous value of d_v. Two forms, by FrameworkSpec.rope_fusion (Megatron-Core's
apply_rope_fusion):
  fused (Megatron-Core's MLASelfAttention with apply_rope_fusion, which Megatron-Bridge's and NeMo 25.07's performance
    recipes set): fused_apply_mla_rope_for_q rotates q in place, reading and writing only the last d_rope elements of
    each head (its docstring: "the first qk_head_dim elements are not modified"), so q is the query; and
    fused_apply_mla_rope_for_kv reads kv and k_pe and writes key and value out;
  unfused (apply_rope_fusion False: NeMo 25.04's DeepSeek-V3 recipe, eager torch): the query written out whole, the
    least traffic that makes it (Megatron's unfused path, rotary on the rope slice and then torch.cat of query and key
    with k_pe broadcast over the heads and value.contiguous(), moves at least as much; DeepSeek's own kernels fit
    this form, below).
In bf16 (2 bytes an element):
    query, fused:    read and write q's rope slice in place                  2 T a' d_rope 2
    query, unfused:  read q, write query                                     2 T a' (d_nope + d_rope) 2
    key, value:      read kv and k_pe, write key and value (both forms)      T a' (d_nope + d_v) 2 + T d_rope 2
                                                                             + T a' (d_nope + d_rope + d_v) 2
priced at the card's memory rate (a memory op). Its backward moves the same bytes the other way (the query gradient
through the rotary into dq, in place when fused; the key and value gradients, dk_pe summed over the heads, into dkv):
the same bytes, not twice. It replaces a rotary op over the rope dimensions only (2 T (a' + 1) d_rope 2 bytes), which
left the layout out.
Development evidence (the profile prompted this op): DeepSeek's published DualPipe trace (studies/moe_deepseek_profile.py;
DeepSeek-V3, TP 1, T = 4096, H800; DeepSeek's own stack, not Megatron): its rotary and copy kernels' times fit the
unfused form at 3.1-3.2 TB/s (read as query 403 MB = 2 T a' (d_nope + d_rope) 2, key 335 MB with its reads, value
268 MB; the trace has no shapes): 935 us a forward + backward layer, the unfused op 1013 us, the fused one 743 us
(tests/test_llm_mla_layout.py). The fused form is not checked against any measurement.
The op keeps the name 'rotary' (ops.modules_of: recompute_modules mla_up_proj runs it again).
"""

from __future__ import annotations

ACT_BYTES = 2   # bf16 activations (ops.ACT_BYTES)


def mla_layout_bytes(model, tokens: int, heads: int, rope_fusion: bool) -> float:
    """Bytes one MLA layer's query / key / value materialisation moves forward (the backward moves the same); with
    rope_fusion the query is q rotated in place (only its rope slice read and written)."""
    nope, rope, v = model.attn_head_dim, model.qk_rope_dim, model.v_head_dim
    query = 2 * tokens * heads * (rope if rope_fusion else nope + rope)
    key_value = tokens * heads * (nope + v) + tokens * rope + tokens * heads * (nope + rope + v)
    return float((query + key_value) * ACT_BYTES)


def mla_layout_flops(model, tokens: int, heads: int) -> float:
    """The rotary's multiply-adds on the rope dimensions (3 per element), a' query heads and the one shared key."""
    return 3.0 * tokens * (heads + 1) * model.qk_rope_dim
