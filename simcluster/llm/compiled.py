"""One eager decoder layer under torch.compile (issue 44): the ops of a block that `torch.compile(block)` runs
(the llm-step runner's --compile, runner/llm_compile.py; torchtitan's per-block compile), and the one place the step
model takes a layer's ops from (layer_ops: the compiled list where the framework compiles, ops.py's otherwise).

What Inductor does to the block (PyTorch 2.x docs, "TorchInductor: a PyTorch-native compiler" (dev-discuss, 2022) and
Ansel et al., "PyTorch 2", ASPLOS 2024, sections 4-5):
  - GEMMs and attention stay library kernels: in the default mode (max-autotune off) aten.mm runs as an extern cuBLAS
    call and scaled_dot_product_attention as the flash kernel eager calls, so their FLOPs, bytes and rates are eager's.
  - Every chain of pointwise ops and reductions between two library kernels fuses into one generated Triton kernel
    that reads its inputs and writes its outputs once (vertical fusion; a reduction takes its pointwise prologue and
    epilogue: RMSNorm with the residual add before it and autocast's bf16 cast after it).
  - Tensors the backward needs that are cheap pointwise functions of other saved tensors are recomputed in the backward
    (AOTAutograd's min-cut rematerialization partitioner): the norms' bf16 outputs (from x and its rstd), the SwiGLU
    product (from gate and up) and autocast's bf16 weight copies (from the fp32 weights, graph inputs).
  - Each block is its own graph (torch.compile per block): nothing fuses across blocks; the embedding, final norm, LM
    head, loss, the weight gradients' fp32 up-casts and the optimizer stay eager (vocab_ops.py, work.py).
Per layer, r = residual bytes (4: fp32 under autocast), a = 2 (bf16), T tokens, h hidden, f ffn, qk = T (a' + g') d,
qkv = T (a' + 2 g') d, kernels (count) and bytes (read + write):
  forward   norm1 + cast (1): T h (r + a)          rotary of q and of k (2): 2 qk a     attention output copy: eager's
            residual add + norm2 + cast (1): T h (2 r + 2 a)     silu(gate) x up (1): 3 T f a
            residual add (1): T h (2 r + a)
  backward  the branch gradient's bf16 cast (1): T h (r + a)
            SwiGLU backward with the product recomputed for down's weight gradient (1): 6 T f a
            norm2 input gradient: the two GEMM gradients summed, the norm's backward, the residual gradient added, its
              bf16 cast and norm2's output recomputed (1): T h (3 r + 4 a); norm2 weight gradient (1): T h (r + 2 a)
            rotary backward into dq, dk and dv's layout copy (3): 2 qkv a
            norm1 input gradient (three GEMM gradients) and norm1's output recomputed (1): T h (3 r + 4 a);
              norm1 weight gradient (1): T h (r + 3 a)
            the attention output copy's backward: eager's
  GEMM and attention ops as eager's: 7 + 14 kernels, 1 + 1 attention. 7 + 10 memory-bound kernels against eager's
  22 + 41 (ops.layer_forward, eager_backward_extras).
Valid for the llm-step decoder's dense Llama layer (RMSNorm, rotary or none, SwiGLU, GQA, no MoE / MLA / QK-norm /
dropout / sliding window) on one GPU without activation checkpointing (eager.torch_framework refuses the rest).
"""

from __future__ import annotations

from simcluster.llm import eager_ac, ops
from simcluster.llm.framework import FrameworkSpec
from simcluster.llm.spec import BatchSpec, LlmConfigError, ParallelSpec, TransformerSpec

A = ops.ACT_BYTES
LIBRARY_KINDS = ("gemm", "attention")


def layer_ops(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, fw: FrameworkSpec) -> tuple[list, list]:
    """(forward, backward) ops of one layer as the framework runs it: compiled (module docstring) where fw.compiled,
    else ops.layer_forward / layer_backward."""
    fwd, bwd = ops.layer_forward(model, par, batch, fw), ops.layer_backward(model, par, batch, fw)
    if not fw.compiled:
        return fwd, bwd
    check_compiled(model, par)
    return compiled_forward(model, par, batch, fw, fwd), compiled_backward(model, par, batch, fw, bwd)


def check_compiled(model: TransformerSpec, par: ParallelSpec) -> None:
    """What the compiled layer is not modelled for: one LlmConfigError at its key."""
    gap = eager_ac.llama_layer_gap(model)
    if gap:
        raise LlmConfigError("framework.compile", f"a compiled block is modelled for the dense SwiGLU Llama layer; this "
                             f"model has {gap}", hint="compile: false")
    check_compiled_parallel(par)


def check_compiled_parallel(par: ParallelSpec) -> None:
    """The one rule of where a compiled step is modelled: one GPU (tp, pp, dp, cp, ep 1) and recompute none; a
    LlmConfigError at framework.compile naming the parallel keys that break it (eager.torch_framework, check_compiled)."""
    off = [f"parallel.{name}: {getattr(par, name)}" for name in ("tp", "pp", "dp", "cp", "ep") if getattr(par, name) != 1]
    off += [f"parallel.recompute: {par.recompute}"] if par.recompute != "none" else []
    if off:
        raise LlmConfigError("framework.compile", "torch.compile is modelled and measured on one GPU without activation "
                             f"checkpointing (llm-step --compile, single mode); got {', '.join(off)}",
                             hint="compile: false, or one GPU and recompute: none")


def _library(ops_list: list, names: tuple[str, ...]) -> list:
    return [o for o in ops_list if o.kind in LIBRARY_KINDS and o.name.split(".")[0] in names]


def _named(ops_list: list, name: str) -> list:
    return [o for o in ops_list if o.name == name]


def compiled_forward(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, fw: FrameworkSpec, eager_fwd: list) -> list:
    sh = ops.sharding(model, par, batch)
    T, h, f, r = sh.tokens, model.hidden, sh.ffn, fw.residual_bytes
    qk = T * (sh.heads + sh.kv_heads) * model.head_dim
    out = [ops.memory("norm1_cast", T * h * (r + A), 4 * T * h)]
    out += _library(eager_fwd, ("q", "k", "v"))
    if model.rotary:
        out.append(ops.memory("rotary", qk * A, 3 * qk / 2, count=2))
    out += [o for o in eager_fwd if o.kind == "attention"] + _named(eager_fwd, "attn_out_copy") + _library(eager_fwd, ("attn_out",))
    out.append(ops.memory("add_norm2_cast", T * h * (2 * r + 2 * A), 5 * T * h))
    out += _library(eager_fwd, ("gate", "up"))
    out.append(ops.memory("swiglu", 3 * T * f * A, 4 * T * f))
    out += _library(eager_fwd, ("down",)) + [ops.memory("residual_add", T * h * (2 * r + A), T * h)]
    return out


def compiled_backward(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, fw: FrameworkSpec, eager_bwd: list) -> list:
    sh = ops.sharding(model, par, batch)
    T, h, f, r, d = sh.tokens, model.hidden, sh.ffn, fw.residual_bytes, model.head_dim
    qkv = T * (sh.heads + 2 * sh.kv_heads) * d
    out = [ops.memory("norm1_input_grad", T * h * (3 * r + 4 * A), 8 * T * h),
           ops.memory("norm1_weight_grad", T * h * (r + 3 * A), 4 * T * h)]
    out += _library(eager_bwd, ("q", "k", "v"))
    out.append(ops.memory("qkv_grad", 2 * qkv * A / 3, qkv / 3, count=3))
    out += [o for o in eager_bwd if o.kind == "attention"] + _named(eager_bwd, "attn_out_copy.bwd")
    out += _library(eager_bwd, ("attn_out",))
    out += [ops.memory("norm2_input_grad", T * h * (3 * r + 4 * A), 8 * T * h),
            ops.memory("norm2_weight_grad", T * h * (r + 2 * A), 3 * T * h)]
    out += _library(eager_bwd, ("gate", "up"))
    out.append(ops.memory("swiglu_bwd", 6 * T * f * A, 8 * T * f))
    out += _library(eager_bwd, ("down",)) + [ops.memory("branch_grad_cast", T * h * (r + A), T * h)]
    return out
