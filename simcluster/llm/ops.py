"""One transformer layer (the embedding, LM head and loss: llm/vocab_ops.py) as the compute ops of one micro-batch on one GPU.

Shapes after sharding, with b micro-batch, s sequence, c = cp, t = tp, T = b * s / c tokens on this GPU,
h hidden, a heads, g kv heads, d head size, f ffn, V vocab:
  GEMM Y[M, N] = X[M, K] W[K, N], 2 M N K FLOPs, bytes (M K + K N) e + M N 2   (e: 2 bf16, 1 fp8)
    qkv       (T, (a' + 2 g') d, h), a' = a / t, g' = max(1, g / t)   out  (T, h, a' d)   (eager: q, k, v apart)
    gate, up  (T, f / t, h) each                      down (T, h, f / t)     (GeLU MLP: up, down and a GeLU 2 T f / t 2)
    MoE: router (T', E, h), T' = T / t under SP (moedev51); the dispatcher's copies of the T k / (t / etp) rows a GPU
      dispatches (permute_copies: 4, or 2 without the sort by local expert; permute_bytes: with expert TP, permute and
      unpermute on the rank's own T k / t); experts E / ep, each (ep T k / E, f_e / t, h) and back (.., h, f_e / t);
      shared expert(s) (T, f_s / t, h) x 2 and (T, h, f_s / t) on every token
    MLA: q_down (T, r_q, h), q_up (T, a' (d_nope + d_rope), r_q), kv_down (T, r_kv + d_rope, h), kv_up
      (T, a' (d_nope + d_v), r_kv), out (T, h, a' d_v); latent norms 2 T (r_q + r_kv) 2; rotary + q/k/v layout (mla_layout.py)
    QK-norm: 2 T (a' + g') d 2 bytes (every query and key head normalised)
  backward of each GEMM: dgrad (M, K, N) and wgrad (K, N, M): twice the forward FLOPs
  attention (flash / SDPA): 4 b a' s_q s_kv d FLOPs forward, halved when causal; backward 2.5 x forward
    (flash recomputes the scores: 5 matmuls against 2); with cp > 1 each rank's s/c queries meet half the
    keys (load-balanced): c unmasked ring blocks of s/c x s/2c, timed at that block's rate
  memory-bound (bf16, 2 bytes per element, bytes = read + write; backward moves twice the forward bytes):
    RMSNorm 2 T' h 2 (x2), residual add 3 T' h 2 (x2), rotary 2 T (a' + g') d 2, SwiGLU 3 T f / t 2,
    where T' = T / t with sequence parallelism (norms and residuals run on a sequence shard), else T
  unfused attention core (FrameworkSpec.attention, Megatron before flash attention, cp = 1): Q K^T (s, s, d) and
    P V (s, d, s) batched over b a', softmax 2 b a' s^2 2 bytes, dropout b a' s^2 (2 + 2 + 1) bytes
  fp8 (Transformer Engine): a transposed fp8 copy of every GEMM input forward (M K bytes; the attention output's
    cast 3 M K more), a cast-transpose of every output gradient backward (4 M N bytes)
recompute: 'full' runs the layer's forward again inside its backward ('op', eager torch: eager_ac.op_recomputed's); 'selective' the ops of its recompute_modules
(modules_of: core_attn the attention core, layernorm the two RMSNorms, mla_up_proj MLA's up-projections and rotary,
mlp a dense layer's MLP, moe the whole MoE block (router, permutation, experts, shared experts), moe_act the experts'
SwiGLU, shared_experts the shared expert); the fp8 casts of recomputed GEMMs are not repeated (a few % of their bytes).
Dropout is off (as in Llama pre-training) except the unfused core's attention dropout and, with model.dropout, the hidden dropout of
the two bias-dropout-adds (mask T' h bytes forward, 5 T' h backward); flash attention's own dropout draws its mask in the kernel (no
bytes; its random numbers cost time per score element: GpuParams.attention_dropout_s). Every Op carries its FLOPs and bytes (tests).
Op, its constructors (gemm, attention, memory, torch_chain) and an op's time on a GPU card (op_time_s) are llm/op_price.py's;
this module re-exports them (the step model's callers read ops.Op, ops.op_time_s).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from simcluster.llm import eager_ac, mla_layout, moe_router_term
from simcluster.llm.framework import MEGATRON, FrameworkSpec
from simcluster.llm.op_price import ACT_BYTES, Op, attention, gemm, gemm_backward, gemm_dtype, memory, torch_chain
from simcluster.llm.op_price import GROUPED_GEMMS as GROUPED_GEMMS
from simcluster.llm.op_price import op_time_s as op_time_s
from simcluster.llm.op_price import ops_time_s as ops_time_s
from simcluster.llm.op_price import total_flops as total_flops
from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec


@dataclass(frozen=True)
class Sharding:
    """Per-GPU sizes of one micro-batch under the parallelism."""

    tokens: int          # T = b s / c
    seq_tokens: int      # T' for norms and residual adds (T / t with sequence parallelism)
    heads: int           # a / t
    kv_heads: int        # g / t, at least 1 (kv heads are replicated when t > g)
    ffn: int             # f / t (or f_e / t)
    seq_q: int           # s / c
    in_bytes: int        # GEMM input element size (1 for fp8)


def sharding(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec) -> Sharding:
    t, c = par.tp, par.cp
    tokens = batch.micro_batch * model.seq // c
    ffn = model.expert_ffn // par.etp if model.moe else model.ffn // t
    return Sharding(tokens, tokens // t if par.sequence_parallel else tokens, model.heads // t,
                    max(1, model.kv_heads // t), ffn, model.seq // c, 1 if batch.precision == "fp8" else 2)


def _attention_cores(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, sh: Sharding, backward: bool) -> list[Op]:
    """The fused attention kernel(s) of a layer. With a sliding window (model.window_share of the layers), the windowed
    kernel runs as s queries over window_keys keys each (no causal halving: the band is already causal), with
    the share of the layers as its count, beside the full causal kernel's share."""
    share = model.window_share
    if not share:
        return [_attention_core(model, par, batch, sh, backward)]
    name = "attention_window.bwd" if backward else "attention_window"
    keys = max(1, round(model.window_keys))
    op = attention(name, batch.micro_batch, sh.heads, sh.kv_heads, model.seq, keys, core_head_dim(model), False, backward, model.dropout)
    windowed = replace(op, count=share)
    return [windowed] if share == 1 else [replace(_attention_core(model, par, batch, sh, backward), count=1 - share), windowed]


def _attention_core(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, sh: Sharding, backward: bool) -> Op:
    name = "attention.bwd" if backward else "attention"
    drop = model.dropout   # attention dropout inside the fused kernel (its random numbers: GpuParams.attention_dropout_s)
    d = core_head_dim(model)
    if par.cp == 1:
        return attention(name, batch.micro_batch, sh.heads, sh.kv_heads, model.seq, model.seq, d, True, backward, drop)
    # load-balanced context parallelism (Megatron / TE ring attention, two zig-zag chunks per rank): a rank's s / cp
    # queries meet half the keys on average, in cp ring steps of (s / cp) x (s / 2cp) unmasked pairs each: causal / cp
    # of the FLOPs, at the efficiency of blocks of s / 2cp keys
    keys = max(1, model.seq // (2 * par.cp))
    return replace(attention(name, batch.micro_batch, sh.heads, sh.kv_heads, sh.seq_q, keys, d, False, backward, drop),
                   count=par.cp)


def core_head_dim(model: TransformerSpec) -> int:
    """The flash kernel's head size: Q K^T runs over the query/key size, P V over the value size, so (d_qk + d_v) / 2
    gives both GEMMs' FLOPs (MLA: (192 + 128) / 2 = 160); the head size itself otherwise."""
    return (model.head_dim + model.value_dim) // 2


def attention_inputs(model: TransformerSpec, sh: Sharding, e: int, fused: bool) -> list[Op]:
    """The projections before the attention core. MLA (DeepSeek-V2/V3): the query and K/V down-projections to their
    latents (replicated over tp, as Megatron's MLA does), each latent's RMSNorm, and the up-projections to a' heads
    (queries: a' (d_nope + d_rope); keys and values: a' (d_nope + d_v)); the rotary key comes from the K/V
    down-projection (one per token). Otherwise the fused QKV GEMM (eager: q, k, v apart)."""
    T, h, d = sh.tokens, model.hidden, model.head_dim
    if model.mla:
        rq, rkv, nope = model.q_lora_rank, model.kv_lora_rank, model.attn_head_dim
        ops = [gemm("q_down", T, rq, h, in_bytes=e), gemm("q_up", T, sh.heads * d, rq, in_bytes=e)] if rq else \
            [gemm("q", T, sh.heads * d, h, in_bytes=e)]
        ops += [gemm("kv_down", T, rkv + model.qk_rope_dim, h, in_bytes=e),
                memory("latent_rmsnorm", 2 * T * (rq + rkv) * ACT_BYTES, 4 * T * (rq + rkv)),
                gemm("kv_up", T, sh.heads * (nope + model.v_head_dim), rkv, in_bytes=e)]
        return ops
    if fused:
        return [gemm("qkv", T, (sh.heads + 2 * sh.kv_heads) * d, h, in_bytes=e)]
    return [gemm("q", T, sh.heads * d, h, in_bytes=e), gemm("k", T, sh.kv_heads * d, h, in_bytes=e),
            gemm("v", T, sh.kv_heads * d, h, in_bytes=e)]


def _core_forward(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, sh: Sharding, fw: FrameworkSpec) -> list[Op]:
    """The attention core: one flash kernel, or (fw.attention == 'unfused', cp = 1) Megatron's pre-flash core over
    the full s x s scores (the causal mask is applied in the softmax, so no FLOPs are saved): Q K^T, fused
    scale-mask-softmax (scores read, probabilities written), dropout (probabilities read, output and 1-byte mask
    written), P V. Megatron-Core's local spec (fw.torch_chains) runs the softmax as plain torch kernels, each at its own
    rate (llm/torch_kernels.py), with the layout copy of the queries and GQA's key / value expansion before the core.
    Its ops are named core.* so selective recompute finds them."""
    if fw.attention != "unfused" or par.cp > 1:
        return _attention_cores(model, par, batch, sh, backward=False)
    s, d, n = model.seq, model.head_dim, batch.micro_batch * sh.heads
    probs = n * s * s
    # backward: softmax reads probabilities and their gradient, writes the scores' gradient (3 a per element);
    # dropout reads the gradient and the 1-byte mask, writes the gradient (2 a + 1)
    fwd_b, bwd_b = fw.softmax_bytes or (2 * ACT_BYTES, 3 * ACT_BYTES)   # softmax_bytes: in fp32, and no dropout kernel (FrameworkSpec)
    softmax = torch_chain("core.softmax", "softmax", probs) if fw.torch_chains else \
        Op("core.softmax", "memory", float(5 * probs), float(fwd_b * probs), (float(bwd_b * probs),))
    dropout = Op("core.dropout", "memory", float(probs), float(probs * (2 * ACT_BYTES + 1)), (float(probs * (2 * ACT_BYTES + 1)),))
    local = [torch_chain(c, c, k * n * s * d) for c, k in (("attn_layout", 1), ("gqa_expand", 2 * (sh.heads > sh.kv_heads))) if k] * fw.torch_chains
    return local + [gemm("core.scores", s, s, d, n), softmax] + ([] if fw.softmax_bytes else [dropout]) + [gemm("core.context", s, d, s, n)]


def permutation(name: str, bytes_moved: float) -> Op:
    """Row copies whose backward is the inverse permutation: the same bytes backward (not twice, as an elementwise op's)."""
    return Op(name, "memory", 0.0, float(bytes_moved), (float(bytes_moved),))


def permute_copies(par: ParallelSpec, local_experts: int) -> int:
    """Copies of the T k dispatched rows per MoE layer pass, forward (each read and written): the alltoall dispatcher's
    permute, sort of the received chunks by local expert, its inverse and unpermute; without the sort (one local
    expert, or DeepEP, whose kernels write the received tokens in place) permute and unpermute. Measured on one H100
    (calibration/h100x1-moe-permute-2026-11-27): a row gather runs at 1.05-1.16x a copy's time."""
    return 4 if par.moe_dispatcher == "alltoall" and local_experts > 1 else 2


PERMUTE_OWN_ROWS = True   # permute_bytes: expert-TP permute / unpermute on the rank's own rows (moedev51's third fact);
                          # off inside heldout/registration.moedev51_off / moedev51_facts


def permute_bytes(par: ParallelSpec, local_experts: int, rows: int, h: int) -> float:
    """Bytes of a MoE layer pass's permutations, forward (read + write of each row copied; permute_copies of them), rows
    the rows this GPU's experts compute (routed x local experts). The alltoall dispatcher permutes the rank's own rows
    before the EP alltoall and unpermutes them after the combine, but sorts by local expert after the expert-TP
    all_gather (token_dispatcher.py MoEAlltoAllTokenDispatcher's docstring: permute, A2A(EP), AG(TP) -> sort_chunk; the
    combine's inverse; NVIDIA/Megatron-LM d98e8a64; core_v0.9.0 1afee592 token_permutation L515-542 / token_unpermutation
    L572-596, core_v0.10.0 7ee599a2 L495-519 / L554-579): with expert TP etp > 1 permute and
    unpermute copy rows / etp, the sorts all rows (session 51, moedev51; before: all copies on all rows, as the sets
    registered then reproduce under PERMUTE_OWN_ROWS, this fact's own switch since mendC51)."""
    copies = permute_copies(par, local_experts)
    own = rows // par.etp if par.moe_dispatcher == "alltoall" and PERMUTE_OWN_ROWS else rows
    return float(2 * (2 * own + (copies - 2) * rows) * h * ACT_BYTES)


def layer_forward(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, fw: FrameworkSpec = MEGATRON) -> list[Op]:
    sh = sharding(model, par, batch)
    T, Tsp, h, d, e = sh.tokens, sh.seq_tokens, model.hidden, model.head_dim, sh.in_bytes
    rb = fw.residual_bytes
    qk = T * (sh.heads + sh.kv_heads) * d
    qkv = attention_inputs(model, sh, e, fw.fused_qkv)
    ops = [memory("rmsnorm", 2 * Tsp * h * rb, 4 * Tsp * h, count=2)]
    if rb != ACT_BYTES:  # autocast: each linear casts its fp32 input to bf16 itself (q, k, v, gate, up: five casts of
        # the two norm outputs); each cast's backward is one bf16 -> fp32 copy of its gradient (the same bytes)
        cast = Tsp * h * (rb + ACT_BYTES)
        ops.append(Op("cast", "memory", 0.0, float(cast), (float(cast),), len(qkv) + model.mlp_matrices - 1))
    ops += qkv
    if model.qk_norm and fw.torch_chains:   # the local spec: torch's RMSNorm kernels per tensor, queries and keys
        ops += [torch_chain("qk_norm", "qk_norm", T * g * d, d) for g in (sh.heads, sh.kv_heads)]
    elif model.qk_norm:   # RMSNorm of every query and key head (read + write)
        ops.append(memory("qk_norm", 2 * qk * ACT_BYTES, 4 * qk))
    if model.mla:       # rotary while query, key and value are written out contiguous (llm/mla_layout.py); backward: the same bytes
        lay = mla_layout.mla_layout_bytes(model, T, sh.heads, fw.rope_fusion)
        ops.append(Op("rotary", "memory", mla_layout.mla_layout_flops(model, T, sh.heads), lay, (lay,)))
    elif not model.rotary:   # learned positions (MPT): added to the embedding, no per-layer op
        pass
    elif fw.eager or fw.torch_chains:  # x cos, rotate-half (neg, cat), x sin, add: five kernels per tensor, 11 element passes in all
        ops.append(torch_chain("rotary", "rotary", qk) if fw.torch_chains else memory("rotary", 11 * qk * ACT_BYTES / 10, 3 * qk / 10, count=10))
    else:
        ops.append(memory("rotary", 2 * qk * ACT_BYTES, 3 * qk))
    ops += _core_forward(model, par, batch, sh, fw)
    if fw.eager:  # transpose + reshape makes a contiguous copy of the attention output
        ops.append(memory("attn_out_copy", 2 * T * sh.heads * d * ACT_BYTES))
    residual = memory("residual_add", Tsp * h * (2 * rb + ACT_BYTES), Tsp * h, count=2)
    if model.dropout:  # bias-dropout-add: the 1-byte mask written forward; backward, the gradient times the mask (2 + 1 + 2)
        residual = Op(residual.name, "memory", residual.flops, residual.bytes + Tsp * h, (2 * residual.bytes + 5 * Tsp * h,), 2)
    if fw.eager:  # autograd passes the gradient through an add; its one kernel casts it to the bf16 branch's dtype
        residual = Op(residual.name, "memory", residual.flops, residual.bytes, (float(Tsp * h * (rb + ACT_BYTES)),), 2)
    ops += [gemm("attn_out", T, h, sh.heads * model.value_dim, in_bytes=e), residual]
    if model.moe:
        local_experts = model.experts // par.ep
        # tokens per local expert, balanced routing; expert TP 1: each TP rank dispatches its own 1/t of the tokens
        # and runs whole experts (expert_ffn unsplit), the same FLOPs per GPU
        routed = T * model.top_k * par.ep // (model.experts * (par.tp // par.etp))
        # the measured router / permutation term's scope (its ADOPTED frameworks); Megatron-Core's unfused router measured
        term = moe_router_term.RouterTerm.TABLE if moe_router_term.applies(fw) else None
        router_term = moe_router_term.RouterTerm.UNFUSED if moe_router_term.unfused(fw) else term
        rt = moe_router_term.router_tokens(T, Tsp)   # the rank's sequence shard under SP (moedev51)
        ops += [replace(gemm("router", rt, model.experts, h, in_bytes=2), term=router_term),
                *([torch_chain("router_topk", "topk", rt * model.experts)] if fw.torch_chains else []),
                # the rows this GPU dispatches (T k / (t / etp): with expert TP 1 each TP rank sends its own share) and,
                # balanced, receives: routed x local experts
                replace(permutation("permute", permute_bytes(par, local_experts, routed * local_experts, h)), term=term),
                *([gemm("expert_fc1", routed, 2 * sh.ffn, h, local_experts, e)] if fw.fused_expert_fc1 else
                  [gemm("expert_gate", routed, sh.ffn, h, local_experts, e), gemm("expert_up", routed, sh.ffn, h, local_experts, e)]),
                torch_chain("swiglu", "glu", routed * local_experts * sh.ffn) if fw.torch_chains else
                memory("swiglu", 3 * routed * local_experts * sh.ffn * ACT_BYTES, 4 * routed * local_experts * sh.ffn),
                gemm("expert_down", routed, h, sh.ffn, local_experts, e)]
        if model.shared_expert_ffn:   # the shared expert(s): a dense SwiGLU MLP of width f_s on every token
            fs = model.shared_expert_ffn // par.tp
            ops += [gemm("shared_gate", T, fs, h, in_bytes=e), gemm("shared_up", T, fs, h, in_bytes=e),
                    memory("shared_swiglu", 3 * T * fs * ACT_BYTES, 4 * T * fs), gemm("shared_down", T, h, fs, in_bytes=e)]
    elif model.mlp == "gelu":
        tf = T * sh.ffn
        ops += [gemm("up", T, sh.ffn, h, in_bytes=e), memory("gelu", 2 * tf * ACT_BYTES, 8 * tf),
                gemm("down", T, h, sh.ffn, in_bytes=e)]
    else:
        tf = T * sh.ffn
        swiglu = memory("swiglu", 5 * tf * ACT_BYTES / 2, 2 * tf, count=2) if fw.eager else memory("swiglu", 3 * tf * ACT_BYTES, 4 * tf)
        ops += [gemm("gate", T, sh.ffn, h, in_bytes=e), gemm("up", T, sh.ffn, h, in_bytes=e), swiglu,
                gemm("down", T, h, sh.ffn, in_bytes=e)]
    if e == 1:
        ops.append(fp8_casts(ops))
    return ops


def fp8_casts(layer_ops: list[Op]) -> Op:
    """Transformer Engine's fp8 casts around the layer's fp8 GEMMs Y[M,N] = X[M,K] W[K,N] (weights cast once per
    step, not counted): forward, the transposed fp8 copy of every input X kept for the weight gradient (M K bytes
    written; the cast itself is fused into the norm / activation before it) and the attention output's cast
    (read 2 + write 1 per element, no kernel before it to fuse into); backward, the fused cast-transpose of every
    output gradient dY (read 2, write fp8 dY and dY^T: 4 bytes per element). The backward bytes ride in shape."""
    gemms = [o for o in layer_ops if o.kind == "gemm" and not o.name.startswith("core.") and gemm_dtype(o.name, "fp8") == "fp8"]
    fwd = sum((4 if o.name == "attn_out" else 1) * o.shape[0] * o.shape[2] * o.shape[3] for o in gemms)   # attn_out: + 3
    bwd = sum(4 * o.shape[0] * o.shape[1] * o.shape[3] for o in gemms)
    return Op("fp8_cast", "memory", 0.0, float(fwd), (float(bwd),))


def backward_of(ops: list[Op], model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, e: int) -> list[Op]:
    out: list[Op] = []
    for op in ops:
        if op.kind == "gemm":
            out += gemm_backward(op, e)
        elif op.kind == "attention":   # each kernel's backward: the same sizes at the backward's rates
            b, a, g, sq, skv, d, causal, _, dropout = op.shape
            bwd = attention(f"{op.name}.bwd", b, a, g, sq, skv, d, causal, True, dropout)
            out.append(replace(bwd, flops=op.flops * 2.5, count=op.count))
        elif op.kind == "torch":       # a chain of torch kernels: its backward chain
            out.append(replace(torch_chain(f"{op.name}.bwd", op.shape[0] + ".bwd", *op.shape[1:]), count=op.count))
        else:   # a memory op's backward: twice its bytes unless its shape names them (and its kernels); autocast's cast: an up-cast
            b, k = (op.shape + (1,))[:2] if op.shape else (2 * op.bytes, 1)
            out.append(Op(f"{op.name}.bwd", "upcast" if op.name == "cast" else "memory", 2 * op.flops / k, b / k, (), op.count * k, op.term))
    return out


def eager_backward_extras(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, fw: FrameworkSpec) -> list[Op]:
    """Kernels eager autograd launches in a layer's backward beyond the mirror of layer_forward's (one backward
    kernel per forward kernel: backward_of), from the runner's decoder (simcluster/runner/llm_step.py) and torch's
    autograd rules; r = fw.residual_bytes, a = 2 activation bytes:
      grad accumulation: an input read n times gets n - 1 adds of its gradient: x (norm and residual) twice per
        layer, the attention norm's output (q, k, v) twice and the MLP norm's (gate, up) once when each linear
        reads it (autocast casts it per linear), in the residual dtype: 3 passes of T h r each
      RMSNorm: the weight gradient is a second kernel beside the input gradient (reads x and dy: 2 T h r), 2 per layer
      SwiGLU: d(silu(g) * u) is two multiplies and silu's backward: one kernel more than the forward's two
      rotary: the mirror's ten kernels are the four multiplies, two negations and four adds of the gradient paths;
        the halves of cat(-x2, x1) come back through slices, each a zero fill and a copy: 4 per rotated tensor
      attention input gradients: dq, dk, dv from the (b, heads, s, d) layout back to (b, s, heads d) for their
        linears' backward: one copy each (read + write)
    (the residual adds' mirror is the cast of the branch gradient: layer_forward gives it its bytes)"""
    sh = sharding(model, par, batch)
    T, Tsp, h, d, r, a = sh.tokens, sh.seq_tokens, model.hidden, model.head_dim, fw.residual_bytes, ACT_BYTES
    consumers = (1 if fw.fused_qkv else 3) - 1 + (model.mlp_matrices - 1) - 1   # extra reads of the two norm outputs
    qk, qkv = T * (sh.heads + sh.kv_heads) * d, T * (sh.heads + 2 * sh.kv_heads) * d
    ops = [memory("grad_accumulate", 3 * Tsp * h * r, Tsp * h, count=2 + consumers),
           memory("rmsnorm_weight_grad", 2 * Tsp * h * r, 2 * Tsp * h, count=2),
           memory("qkv_grad_copy", 2 * qkv * a / 3, count=3)]
    if model.rotary:     # per rotated tensor: 2 fills and 2 copies of half of it
        ops.append(memory("rotary_slices", 3 * qk * a / 8, count=8))
    if model.mlp == "swiglu" and not model.moe:
        ops.append(memory("swiglu_extra", 3 * T * sh.ffn * a, T * sh.ffn))
    return ops


SHARED_EXPERT_OPS = ("shared_gate", "shared_up", "shared_swiglu", "shared_down")
ROUTER_OPS = ("router", "router_topk")   # before the dispatch: the gating GEMM and its top-k
MOE_OPS = ROUTER_OPS + ("permute", "expert_fc1", "expert_gate", "expert_up", "swiglu", "expert_down") + SHARED_EXPERT_OPS
DENSE_MLP_OPS = ("gate", "up", "swiglu", "down", "gelu")


def modules_of(op: Op, model: TransformerSpec) -> tuple[str, ...]:
    """The recompute_modules (spec.RECOMPUTE_MODULES) whose recomputation runs this forward op again."""
    if op.kind == "attention" or op.name.startswith("core."):
        return ("core_attn",)
    if op.name == "rmsnorm":
        return ("layernorm",)
    if model.mla and op.name in ("q_up", "kv_up", "rotary"):
        return ("mla_up_proj",)
    if model.moe:
        found = ("moe",) if op.name in MOE_OPS else ()
        found += ("shared_experts",) if op.name in SHARED_EXPERT_OPS else ()
        return found + (("moe_act",) if op.name == "swiglu" else ())
    return ("mlp",) if op.name in DENSE_MLP_OPS else ()


def layer_backward(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, fw: FrameworkSpec = MEGATRON) -> list[Op]:
    """The layer's backward, with the forward ops recomputation re-runs first (eager: eager_backward_extras too)."""
    fwd, e = layer_forward(model, par, batch, fw), sharding(model, par, batch).in_bytes
    again = [replace(op, name=f"recompute.{op.name}") for op in fwd   # op: torchtitan's policy
             if par.recompute == "full" or any(par.recomputes(m) for m in modules_of(op, model))
             or (par.recompute == "op" and eager_ac.op_recomputed(op.name, op.kind))]
    extras = eager_backward_extras(model, par, batch, fw) if fw.eager else []
    return again + backward_of(fwd, model, par, batch, e) + extras + grad_accumulate(fwd, fw)


def grad_accumulate(fwd: list[Op], fw: FrameworkSpec, fill_bytes: float = 0.0) -> list[Op]:
    """Every weight gradient added into its persistent fp32 main_grad each micro-batch (Megatron): one pass per weight
    GEMM of fw.grad_accumulate_bytes per weight element (bf16 gradient read, fp32 main_grad read and written: 10), plus
    fill_bytes per element where the gradient is first made as a zeroed dense tensor (the embedding's)."""
    weights = [o for o in fwd if o.kind == "gemm" and not o.name.startswith("core.")]
    if not fw.grad_accumulate_bytes or not weights:
        return []
    elements = sum(o.shape[1] * o.shape[2] * o.shape[3] for o in weights)   # K N per (batched) weight
    return [memory("main_grad_accumulate", (fw.grad_accumulate_bytes + fill_bytes) * elements / len(weights), count=len(weights))]
