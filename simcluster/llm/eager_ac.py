"""Selective activation checkpointing in eager PyTorch (issue 44), as torchtitan runs it and the llm-step runner copies
(simcluster/runner/llm_ac.py; parallel.recompute with framework: torch):

  full      torch.utils.checkpoint on every decoder block (non-reentrant): the block's forward again in its backward,
            only its input kept (memory._checkpointed_live prices the peak)
  every N   (recompute: full, recompute_every: N) torchtitan's layer policy (selective_ac_option "N",
            torchtitan/distributed/activation_checkpoint.py _apply_layer_sac at 1f029641): a counter over the blocks
            from 1, block j checkpointed when j % N == 0 (blocks N, 2N, ...); the others run plain. N = 1 is full.
  op        (recompute: op) torchtitan's op policy (_apply_op_sac, the llama3 save list in
            torchtitan/models/llama3/parallelize.py at 1f029641): every block under torch.utils.checkpoint with
            create_selective_checkpoint_contexts; MUST_SAVE for the outputs of SDPA and of aten.mm, except every second
            mm of the block (a counter per block and per pass, forward and recompute alike: the 2nd, 4th, ... mm is
            recomputed); PREFER_RECOMPUTE for everything else (norms, casts, rotary, SiLU, products, copies, adds)

The eager decoder's block issues its mms in the order EAGER_MMS (runner: q, k, v projections, SDPA, output projection;
gate, up, down), so op keeps q, v, gate and down and recomputes k, the output projection and up (saved_mms).
Kept bytes of an op-checkpointed block (s tokens x b, widths in elements): its fp32 input r s b h (checkpoint's
argument), the saved bf16 mm outputs 2 s b (a d + g d + f + h), SDPA's bf16 output 2 s b a d and fp32 logsumexp
4 a s b (op_kept_bytes). Its recomputation re-runs every forward op but those saved (ops.layer_backward), the block's
weight casts too (the recompute's own autocast), and adds a block's activations less what the SDPA / mm cache already
holds (recompute_extra_bytes).
"""

from __future__ import annotations

from simcluster.llm.spec import LlmConfigError, ParallelSpec

EAGER_MMS = ("q", "k", "v", "attn_out", "gate", "up", "down")   # the runner's block: aten.mm in this order
SAVED_KINDS = ("attention",)   # SDPA's flash / efficient / cudnn kernels: MUST_SAVE in torchtitan's list


def document_mode(doc: dict) -> str:
    """An llm-step document's checkpointing mode (none, full, every:N, op): its ac_mode (llm-step --ac-mode), else full
    where the older runs set activation_checkpointing."""
    return str(doc.get("ac_mode") or ("full" if doc.get("activation_checkpointing") else "none"))


def parallel_of(mode: str) -> ParallelSpec:
    """The one-GPU parallel setting of an llm-step checkpointing mode (none, full, every:N, op)."""
    if mode.startswith("every:"):
        return ParallelSpec(recompute="full", recompute_every=int(mode.split(":")[1]))
    return ParallelSpec(recompute=mode)


def llama_layer_gap(model) -> str:
    """What the model's layer has beyond the runner's dense Llama block with a SwiGLU MLP (the EAGER_MMS order; '' when
    nothing): the op policy here and the compiled block (compiled.check_compiled) are modelled for that block only."""
    for name, what in (("moe", "experts"), ("mla", "MLA"), ("qk_norm", "QK-norm"), ("dropout", "dropout"),
                       ("window_share", "sliding-window attention")):
        if getattr(model, name):
            return what
    return "" if model.mlp == "swiglu" else f"a {model.mlp} MLP, not SwiGLU"


def check_op(model, par: ParallelSpec) -> None:
    """recompute: op is priced with the recompute set of EAGER_MMS: refused at parallel.recompute for another layer;
    recompute_every above the layer count (no block checkpointed) is refused at its key."""
    if par.recompute == "full" and par.recompute_every > model.layers:
        raise LlmConfigError("parallel.recompute_every", f"every {par.recompute_every}-th block of {model.layers} "
                             "checkpoints none", hint=f"recompute_every 1-{model.layers}, or recompute: none")
    gap = llama_layer_gap(model) if par.recompute == "op" else ""
    if gap:
        raise LlmConfigError("parallel.recompute", "recompute op prices torchtitan's op policy on the dense SwiGLU Llama "
                             f"block's 7 mms (q, k, v, output, gate, up, down); this model has {gap}",
                             hint="recompute: full, or recompute_every N")


def saved_mms(order: tuple[str, ...] = EAGER_MMS) -> tuple[str, ...]:
    """The mms whose outputs torchtitan's op policy saves: its counter goes 1, 2, ... over the block's mms and every
    even count is recomputed, so the 1st, 3rd, ... are kept."""
    return tuple(name for i, name in enumerate(order, start=1) if i % 2 == 1)


def op_recomputed(name: str, kind: str) -> bool:
    """Whether the op policy runs this forward op (ops.Op name and kind) again in the block's backward."""
    if kind in SAVED_KINDS or name.startswith("core."):
        return False
    return not (kind == "gemm" and name in saved_mms())


def checkpointed_layers(par: ParallelSpec, layers: int) -> int:
    """Blocks under torch.utils.checkpoint: all of them under full (every 1) and op, layers // N under every N, none
    otherwise."""
    if par.recompute == "op":
        return layers
    return layers // par.recompute_every if par.recompute == "full" else 0


def op_kept_bytes(model, par: ParallelSpec, batch, residual_bytes: int) -> float:
    """Bytes one op-checkpointed block keeps to its backward (module docstring): its input, the saved mm outputs, SDPA's
    output and logsumexp."""
    tokens = model.seq * batch.micro_batch
    q_width = model.heads * model.head_dim
    kv_width = model.kv_heads * model.head_dim
    widths = {"q": q_width, "k": kv_width, "v": kv_width, "attn_out": model.hidden, "gate": model.ffn, "up": model.ffn,
              "down": model.hidden}
    saved = sum(widths[name] for name in saved_mms())
    return tokens * (residual_bytes * model.hidden + 2 * saved + 2 * q_width) + 4 * model.heads * tokens


def recompute_extra_bytes(par: ParallelSpec, plain_block: float, kept: float, input_bytes: float, weight_copies: float) -> float:
    """Bytes a checkpointed block's recomputation adds to what is kept: its activations (plain_block, the block run
    without checkpointing) and its bf16 weight copies; under op less what its SAC cache already holds (kept bytes
    beyond the block's input), which the recomputation reuses."""
    cached = kept - input_bytes if par.recompute == "op" else 0.0
    return plain_block + weight_copies - cached


def checkpointed_live(layers: int, every: int, acts: float, plain: float, recompute: float, layer_copies: float,
                      forward_end: float, backward_start: float) -> float:
    """Live bytes of a step whose block j (1-based) is checkpointed where j % every == 0 (every 1: all): acts, what
    the forward leaves stashed (every block's kept bytes); plain, a plain block's activations; layer_copies, its bf16
    weight copies (autograd keeps them to its backward). The largest of
      the forward's end        acts + forward_end (autocast's cache, the loss's forward tensors)
      the backward's start     acts + the plain blocks' weight copies + backward_start (the head's copy, the loss's peak)
      the top checkpointed block's recompute (block N floor(L / N)): the blocks above it are done and freed, so
                               acts less their activations, the plain blocks' copies below it, and `recompute`
    every = 1 is memory._checkpointed_live's inputs + max(forward's end, backward's start, one block's recompute)."""
    ckpt = layers // every
    top = ckpt * every
    plain_n = layers - ckpt
    below = acts - (layers - top) * plain
    return max(acts + forward_end, acts + plain_n * layer_copies + backward_start,
               below + (top - ckpt) * layer_copies + recompute)
