"""MLA's query, key and value as the attention kernel takes them (issue 44, session 36 moeprof).

Multi-latent attention's up-projections give q [T, a', d_nope + d_rope] and kv [T, a', d_nope + d_v]; the one rotary
key k_pe [T, d_rope] comes from the K/V down-projection. The fused attention kernel takes contiguous query and key of
d_nope + d_rope per head and a contiguous value of d_v, so rotary embedding is applied while the three are written out
(Megatron-Core's MLASelfAttention: fused_apply_mla_rope_for_q / _for_kv with apply_rope_fusion, otherwise rotary on
the rope slices, torch.cat of query and key with k_pe broadcast over the heads, and value.contiguous(), which moves at
least as much). The least traffic that makes them, in bf16 (2 bytes an element):
    query:       read q, write query                                   2 T a' (d_nope + d_rope) 2
    key, value:  read kv and k_pe, write key and value                 T a' (d_nope + d_v) 2 + T d_rope 2
                                                                       + T a' (d_nope + d_rope + d_v) 2
priced at the card's memory rate (a memory op). Its backward moves the same bytes the other way (the query gradient
through the rotary into dq; the key and value gradients, dk_pe summed over the heads, into dkv): the same bytes, not
twice. It replaces a rotary op over the rope dimensions only (2 T (a' + 1) d_rope 2 bytes), which left the layout out.
Checked on DeepSeek's published DualPipe trace (studies/moe_deepseek_profile.py; DeepSeek-V3, TP 1, T = 4096, H800):
its rotary and copy kernels' times fit these bytes at 3.1-3.2 TB/s (read as query 403 MB, key 335 MB with its reads,
value 268 MB; the trace has no shapes): 935 us a forward + backward layer, this op 1013 us (tests/test_llm_mla_layout.py).
The op keeps the name 'rotary' (ops.modules_of: recompute_modules mla_up_proj runs it again).
"""

from __future__ import annotations

ACT_BYTES = 2   # bf16 activations (ops.ACT_BYTES)


def mla_layout_bytes(model, tokens: int, heads: int) -> float:
    """Bytes one MLA layer's query / key / value materialisation moves forward (the backward moves the same)."""
    nope, rope, v = model.attn_head_dim, model.qk_rope_dim, model.v_head_dim
    query = 2 * tokens * heads * (nope + rope)
    key_value = tokens * heads * (nope + v) + tokens * rope + tokens * heads * (nope + rope + v)
    return float((query + key_value) * ACT_BYTES)


def mla_layout_flops(model, tokens: int, heads: int) -> float:
    """The rotary's multiply-adds on the rope dimensions (3 per element), a' query heads and the one shared key."""
    return 3.0 * tokens * (heads + 1) * model.qk_rope_dim
