"""The llm-step runner's decoder block as it runs under bf16 autocast with fp32 weights (issue 44, session 35, engineer
eagerbias; FrameworkSpec.autocast_block: TORCH_AMP and the DDP / TP / pipeline frameworks eager.torch_framework builds from
it; not FSDP2's bf16 parameters, not the compiled mode, not the published trainers, whose blocks run in bf16 without
autocast). What its kernels and autograd's saved tensors are beyond the generic eager block (ops.layer_forward,
ops.eager_backward_extras, memory.layer_activation_bytes), read from the runner's code (simcluster/runner/llm_step.py)
and its torch 2.11 kernel traces (calibration/h200x1-llm-eager5-2026-11-29/traces and its lease2's: one profiled step
each; llm-findings.md, session 35 eagerbias). T tokens, h hidden, n the elements of one rotated tensor (T a' d for q,
T g' d for k), f ffn:

  rotary in fp32  Decoder.rotary builds cos / sin in the embedding output's dtype, fp32 (autocast leaves nn.Embedding
                  alone), so `q cos` and `rotate_half(q) sin` promote the bf16 projections to fp32 and SDPA (autocast's
                  lower-precision list) casts the rotated q and k back to bf16. Per element of each rotated tensor:
      forward     q cos (bf16 read 2, fp32 written 4), neg of one half (2), cat (4), cat sin (6), add (12): 5 kernels on
                  torch's non-vectorized path (mixed dtypes; cos / sin broadcast over the permuted (b, s, heads, d)
                  layout), then SDPA's cast to bf16 (6, vectorized): 36 B in 6 kernels (ROTARY_FWD)
      backward    the cast's backward, an up-cast (6); G sin and G cos in fp32 (8 each, non-vectorized), each cast to
                  bf16 (6 each, vectorized); neg of a half (2); each half's slice backward, a zero fill (2, vectorized)
                  and a copy (2); two bf16 adds gathering the input's three gradients (6 each): 56 B in 12 kernels
                  (ROTARY_BWD); the generic count was 11 x 2 B forward in 10 kernels, twice that and 8 slice
                  kernels of 3 / 8 x 2 B backward, all at the HBM rate
  rates           the non-vectorized kernels (kind 'unvectorized') at GpuSpec.upcast_time_s, the SM-bound rate measured
                  for torch's unrolled converting copy (the same non-vectorized elementwise path), the others at HBM
  residual add    fp32 x + the bf16 branch output: a mixed-dtype add, the unrolled kernel (unvectorized); its backward,
                  the gradient's cast to bf16, is vectorized (unchanged)
  no copies       cuDNN's SDPA (the kernel torch picks on Hopper) writes its output and dq / dk / dv in the
                  (b, s, heads, d) layout, so `o.transpose(1, 2).reshape` is a view: no attention output copy forward
                  or backward, no q / k / v gradient copies (the traces have none)
  SwiGLU backward three kernels of 6 B per element of T f (grad x up, grad x silu, silu's backward), 18 B, where the
                  generic count is two of 10 and one of 6 (26 B)
  saved tensors   each of q, k, v, gate and up casts the fp32 norm output to bf16 itself (autocast's cache keeps only
                  leaf weights) and each Linear saves its own cast: 5 x 2 T h, where the generic count has 2 x 2 T h;
                  and no attention output copy is saved (2 T h / t less): + (6 - 2 / t) T h per block (saved_extra_bytes).
                  The fp32 rotary tensors are not saved (the multiplies save only cos / sin; SDPA saves its bf16 casts).
"""

from __future__ import annotations

from dataclasses import replace

from simcluster.llm.ops import ACT_BYTES, Op, sharding
from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec

# (bytes per rotated element, vectorized) of each kernel, in launch order (module docstring)
ROTARY_FWD = ((6, False), (2, False), (4, False), (6, False), (12, False), (6, True))
ROTARY_BWD = ((6, False), (8, False), (6, True), (2, False), (8, False), (6, True), (2, True), (2, False), (2, True),
              (2, False), (6, False), (6, False))
DROPPED_BWD = ("attn_out_copy.bwd", "qkv_grad_copy", "rotary_slices", "swiglu_extra")   # replaced or not run
AUTOCAST_LINEARS = 5   # q, k, v, gate, up: each casts its fp32 input and saves the cast


def _grouped(name: str, table: tuple, n: float) -> list[Op]:
    """One rotated tensor's kernels of a table as two ops: the non-vectorized ones and the vectorized ones."""
    out = []
    for vectorized, kind in ((False, "unvectorized"), (True, "memory")):
        sizes = [b for b, v in table if v == vectorized]
        if sizes:
            out.append(Op(f"{name}.{kind}", kind, 0.0, float(sum(sizes) * n / len(sizes)), (), len(sizes)))
    return out


def rotary(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, backward: bool) -> list[Op]:
    """The fp32 rotary of q and k, forward or backward (with SDPA's casts and their backward)."""
    sh = sharding(model, par, batch)
    table, suffix = (ROTARY_BWD, ".bwd") if backward else (ROTARY_FWD, "")
    return [o for name, heads in (("rotary_q", sh.heads), ("rotary_k", sh.kv_heads))
            for o in _grouped(name + suffix, table, sh.tokens * heads * model.head_dim)]


def _forward(op: Op, model, par, batch, prefix: str = "") -> list[Op]:
    base = op.name.removeprefix(prefix)
    if base == "rotary" and model.rotary and not model.mla:
        return [replace(o, name=prefix + o.name) for o in rotary(model, par, batch, backward=False)]
    if base == "attn_out_copy":
        return []
    if base == "residual_add":
        return [replace(op, kind="unvectorized")]
    return [op]


def runner_ops(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, fwd: list[Op], bwd: list[Op]) -> tuple[list, list]:
    """The generic eager layer ops (ops.layer_forward / layer_backward) made the runner's (module docstring); the
    recomputed forward ops of a checkpointed block (recompute.*) alike."""
    new_fwd = [o for op in fwd for o in _forward(op, model, par, batch)]
    tf = sharding(model, par, batch).tokens * sharding(model, par, batch).ffn
    new_bwd: list[Op] = []
    for op in bwd:
        if op.name.startswith("recompute."):
            new_bwd += _forward(op, model, par, batch, "recompute.")
        elif op.name == "rotary.bwd" and model.rotary and not model.mla:
            new_bwd += rotary(model, par, batch, backward=True)
        elif op.name == "swiglu.bwd" and model.mlp == "swiglu" and not model.moe:
            new_bwd.append(Op("swiglu.bwd", "memory", op.flops, float(3 * tf * ACT_BYTES), (), 3))
        elif op.name not in DROPPED_BWD:
            new_bwd.append(op)
    return new_fwd, new_bwd


def saved_extra_bytes(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec) -> float:
    """Bytes one plain block saves beyond the generic eager count (module docstring): three more bf16 casts of a norm
    output (every linear reading one saves its own), less the attention output copy cuDNN's layout makes a view."""
    s, b, h = model.seq / par.cp, batch.micro_batch, model.hidden
    return (AUTOCAST_LINEARS - 2) * ACT_BYTES * s * b * h - ACT_BYTES * s * b * h / par.tp
