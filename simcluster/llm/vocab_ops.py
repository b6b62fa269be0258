"""The ops at the model's two ends, sized by its vocabulary: the embedding lookup (and its gradient) before the first
layer, the final norm, the LM head GEMM and the cross-entropy loss after the last (llm/ops.py's Op, priced alike)."""

from __future__ import annotations

from simcluster.llm import compiled, dtensor_tp
from simcluster.llm.framework import MEGATRON, FrameworkSpec
from simcluster.llm.ops import ACT_BYTES, Op, backward_of, gemm, grad_accumulate, memory, sharding, torch_chain
from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec

EAGER_BWD_KERNELS = 2   # eager cross_entropy's backward besides the cast back: the zero fill and SoftMaxBackward


def embedding_forward(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, fw: FrameworkSpec = MEGATRON) -> list[Op]:
    sh = sharding(model, par, batch)
    return [memory("embedding", 2 * sh.seq_tokens * model.hidden * fw.residual_bytes)]


def embedding_backward(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, fw: FrameworkSpec = MEGATRON) -> list[Op]:
    """The gathered rows' gradient, and (Megatron) the dense V/t x h weight gradient, zero-filled (2 bytes per element)
    and added into main_grad."""
    table = gemm("embedding_table", 1, model.vocab // par.tp, model.hidden)   # stands for the V/t x h weight
    if fw.torch_chains:   # the local spec: torch's embedding_dense_backward kernel by kernel (llm/torch_kernels.py; its
        # zero fill of the weight gradient is grad_accumulate's fill_bytes)
        rows = [torch_chain("embedding.bwd", "embedding_dense", float(sharding(model, par, batch).seq_tokens * model.hidden))]
    else:
        rows = [Op("embedding.bwd", "memory", 0.0, 2 * op.bytes) for op in embedding_forward(model, par, batch, fw)]
    return rows + grad_accumulate([table], fw, fill_bytes=ACT_BYTES)


def head_forward(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, fw: FrameworkSpec = MEGATRON) -> list[Op]:
    """Final RMSNorm, LM head GEMM (vocab sharded over tp) and cross-entropy (fp32 softmax over the logits;
    fw.loss_fwd_bytes / loss_bwd_bytes per logit; eager, framework.EAGER_LOSS: forward two kernels, the logits' .float()
    up-cast (6 B, GpuSpec.upcast_time_s) and log_softmax; backward three, nll_loss's zero-filled gradient and
    log_softmax's backward (cross_entropy's, EAGER_BWD_KERNELS of equal bytes) and the cast back (6 B); fused: one each)."""
    sh = sharding(model, par, batch)
    v, n = model.vocab // par.tp, sh.tokens * model.vocab // par.tp
    rb = fw.residual_bytes
    ops = [memory("final_rmsnorm", 2 * sh.seq_tokens * model.hidden * rb, 4 * sh.seq_tokens * model.hidden)]
    if rb != ACT_BYTES:
        ops.append(memory("cast", sh.seq_tokens * model.hidden * (rb + ACT_BYTES)))
    ops.append(gemm("lm_head", sh.tokens, v, model.hidden))   # bf16 under fp8 too (op_price.BF16_UNDER_FP8)
    if dtensor_tp.applies(fw, par):   # KempnerForge's compiled TP: the logits gathered, the loss over all of them on each rank
        ops, n = ops + dtensor_tp.logits_layout(model, par, batch), dtensor_tp.loss_logits(model, par, batch)
    fused = compiled.fused_loss(fw, par)   # the loss in the last compiled graph, Inductor's (compck's candidate, off)
    up = float(n * (ACT_BYTES + 4)) if fw.eager and not fused else 0.0   # eager: the .float() copy, an up-cast (its
    ops += [Op("logits_upcast", "upcast", 0.0, up, (up,))] if up else []  # backward: the cast back)
    bwd_kernels = EAGER_BWD_KERNELS if fw.eager and not fused else 1
    fb, bb = compiled.COMPILED_LOSS_BYTES if fused else (fw.loss_fwd_bytes, fw.loss_bwd_bytes)
    if fw.torch_chains:   # Megatron-Core's unfused vocab-parallel loss kernel by kernel (llm/torch_kernels.py vocab_ce; no fused framework sets it)
        ops.append(torch_chain("cross_entropy", "vocab_ce", float(n)))
    else:
        ops.append(Op("cross_entropy", "memory", float(5 * n), n * fb - up, (n * bb - up, bwd_kernels)))
    return ops


def head_backward(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, fw: FrameworkSpec = MEGATRON) -> list[Op]:
    fwd = [o for o in head_forward(model, par, batch, fw) if o.name != dtensor_tp.LOGITS_LAYOUT]   # its backward: a slice
    return backward_of(fwd, model, par, batch, ACT_BYTES) + grad_accumulate(fwd, fw)
