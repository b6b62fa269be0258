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
  - What the backward keeps is AOTAutograd's min-cut rematerialization partitioner's choice (torch/_functorch/
    partitioners.py, min_cut_rematerialization_partition; torch 2.11): a forward node may be recomputed in the backward
    only if every backward user of it can fuse with it (should_ban_recomputation: `is_materialized_backwards`, banned
    when a backward user is not fusible, e.g. an aten.mm); GEMMs, attention and random ops are never recomputed, nor a
    reduction (output 4x smaller than its inputs: RMSNorm's rstd). So every tensor a backward GEMM reads is saved: the
    norms' bf16 outputs (the q/k/v and gate/up weight gradients read them), the SwiGLU product (down's weight gradient)
    and autocast's bf16 weight copies (each input gradient's GEMM reads W in bf16; treat_parameters_as_free_to_save
    only makes the fp32 parameters free to keep, it does not make their casts recomputable). Among the tensors that
    only fusible backward ops read, the cut keeps the fewest bytes: the block's fp32 input once, the bf16 out-projection
    output from which the fp32 residual x + o (norm2's input) is rebuilt, gate and up (SwiGLU's backward).
    saved_bytes counts the kept set; memdiag (calibration/h200x1-llm-diag-2026-11-29, development) measured it tensor by
    tensor at 1b 2048:2 and 0.3b 2048:4: 312.5 + 116.0 and 260.6 + 22.5 MiB a block (activations + bf16 weights).
  - Each block is its own graph (torch.compile per block): nothing fuses across blocks; the embedding, final norm, LM
    head, loss, the weight gradients' fp32 up-casts and the optimizer stay eager (vocab_ops.py, work.py).
Per layer, r = residual bytes (4: fp32 under autocast), a = 2 (bf16), T tokens, h hidden, f ffn, qk = T (a' + g') d,
qkv = T (a' + 2 g') d, kernels (count) and bytes (read + write):
  forward   norm1 + cast (1): T h (r + a)          rotary of q and of k (2): 2 qk a     attention output copy: eager's
            residual add + norm2 + cast (1): T h (2 r + 2 a)     silu(gate) x up (1): 3 T f a
            residual add (1): T h (2 r + a)
  backward  the branch gradient's bf16 cast (1): T h (r + a)
            SwiGLU backward from the saved gate, up and product's gradient (1): 5 T f a
            norm2 input gradient: the two GEMM gradients summed, norm2's input rebuilt (x + o), the norm's backward,
              the residual gradient added and its bf16 cast (1): T h (3 r + 4 a); norm2 weight gradient (1): T h (r + 2 a)
            rotary backward into dq, dk and dv's layout copy (3): 2 qkv a
            norm1 input gradient (three GEMM gradients; norm1's output saved, not rebuilt) (1): T h (3 r + 3 a);
              norm1 weight gradient (1): T h (r + 3 a)
            the attention output copy's backward: eager's
  GEMM and attention ops as eager's: 7 + 14 kernels, 1 + 1 attention. 7 + 10 memory-bound kernels against eager's
  22 + 41 (ops.layer_forward, eager_backward_extras).
Checkpointed (recompute full, every block; session 46), two ways the compiled code and the checkpoint compose:
  - checkpoint around the compiled block (llm-step --compile --ac-mode full: torch.utils.checkpoint, non-reentrant,
    calls the compiled module; framework torch on one GPU): the forward runs the compiled forward graph with its saved
    tensors discarded by the checkpoint's hooks; the backward's first unpack re-runs the whole compiled forward graph
    (every fused kernel, GEMM and attention of the forward, the casts of autocast's weights in it too:
    host.recasts_weights), then the compiled backward graph, as without checkpointing. The checkpoint itself runs
    eagerly around each block: its host cost is the ckpt mode's over single per block (eager_compiled.compiled_framework).
  - the checkpoint inside the compiled code (fw.ckpt_in_graph: torch.compile over checkpoint_wrapper'd blocks, the
    whole model compiled after FSDP2 as KempnerForge does, llm-step --compile-scope model; torch-compile+fsdp2):
    dynamo traces torch.utils.checkpoint as a higher-order op and AOTAutograd's partitioner recomputes, in the backward
    graph, what the backward reads (the GEMMs, attention and fused memory-bound kernels of the forward), not the
    block's output: the last residual add is not recomputed. FSDP2's hooks are dynamo-disabled (torch._dynamo.config
    skip_fsdp_hooks, default True in torch 2.5-2.11: "apply torch._dynamo.disable() to FSDP2 hooks"), so the graph
    breaks at each block's pre- and post-forward hooks: each block its own graph, the hooks eager (their host cost the
    fsdp mode's over single per block). Session 48's candidate (fw.whole_model_graph, off; compck): the backward graph
    is cut from the saved values to the gradients with dead code eliminated (partitioners.py
    _extract_graph_with_inputs_outputs), so down_proj's GEMM, read by the block's output alone, is not re-run either
    (not_recomputed); and the runner's loss, traced into the last graph, is Inductor's (fused_loss).
  Memory (memory.py): each block's input kept; during a block's recomputation its compiled saved set (saved_bytes);
  autocast's copies of the blocks' weights are graph tensors freed with the block, only the head's eager copy stays.
Valid for the llm-step decoder's dense Llama layer (RMSNorm, rotary or none, SwiGLU, GQA, no MoE / MLA / QK-norm /
dropout / sliding window) on one GPU, or under FSDP (FSDP_COMPILED), with no checkpointing or every block's
(eager.torch_framework refuses the rest).
"""

from __future__ import annotations

from dataclasses import replace

from simcluster.llm import autocast_block, dtensor_tp, eager_ac, ops, torch_cp
from simcluster.llm.framework import FrameworkSpec
from simcluster.llm.spec import BatchSpec, LlmConfigError, ParallelSpec, TransformerSpec

A = ops.ACT_BYTES
LIBRARY_KINDS = ("gemm", "attention")
# fused_loss (compck's candidate, off): cross-entropy bytes per logit, (forward, backward), Inductor's kernels over the
# bf16 logits with the .float() up-cast fused in: the forward's two reductions (max, then the sum of exponentials:
# log_softmax decomposed) each read the logits (2 + 2), the backward reads them and writes the bf16 gradient (2 + 2),
# one kernel each; no fp32 copy or softmax output written (memory.py's COMPILED_LOSS_LOGIT_BYTES, met by repeats47's
# peaks, says the same of memory). Eager's: framework.EAGER_LOSS, 22 + 26 with the up-cast's 6 + 6.
COMPILED_LOSS_BYTES = (4.0, 4.0)
# the FSDP trainers whose compiled blocks check_compiled allows at dp > 1 (check_compiled_parallel's `fsdp`): named here,
# the one place, so every caller (layer_ops, llm/job.py's refusal at the job's key) decides the same way
FSDP_COMPILED = frozenset({"fms-fsdp-compile", "torch-compile+fsdp2", "kempnerforge-fsdp2-compile"})


def layer_ops(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, fw: FrameworkSpec,
              cp_rank: int = 0) -> tuple[list, list]:
    """(forward, backward) ops of one layer as the framework runs it: compiled (module docstring) where fw.compiled,
    else ops.layer_forward / layer_backward (fw.autocast_block: as the runner's block runs them, llm/autocast_block.py;
    fw.torch_cp with cp > 1: CP rank cp_rank's ring
    attention, llm/torch_cp.py)."""
    fwd, bwd = ops.layer_forward(model, par, batch, fw), ops.layer_backward(model, par, batch, fw)
    if not fw.compiled:
        fwd, bwd = autocast_block.runner_ops(model, par, batch, fwd, bwd) if fw.autocast_block else (fwd, bwd)
        return torch_cp.runner_ops(model, par, batch, fwd, bwd, cp_rank) if fw.torch_cp and par.cp > 1 else (fwd, bwd)
    check_compiled(model, par, fw)
    # DTensor TP (llm/dtensor_tp.py): the chunk + cat copies around its collectives, recomputed ones in the backward's
    tp_f, tp_b = ((dtensor_tp.layout_copies(model, par, batch, phase, fw.ckpt_in_graph) for phase in (False, True))
                  if dtensor_tp.applies(fw, par) else ([], []))
    if par.recompute == "none":
        return compiled_forward(model, par, batch, fw, fwd) + tp_f, compiled_backward(model, par, batch, fw, bwd) + tp_b
    # full (module docstring, "Checkpointed"): the compiled forward's kernels again (named recompute.*), then the block's
    # compiled backward as without checkpointing; in the graph (fw.ckpt_in_graph) all but what only the block's output
    # reads (not_recomputed)
    plain = replace(par, recompute="none")
    fwd = compiled_forward(model, plain, batch, fw, fwd)
    dead = not_recomputed(fw)
    again = [replace(o, name=f"recompute.{o.name}") for o in fwd if o.name.split(".")[0] not in dead]
    return fwd + tp_f, again + compiled_backward(model, plain, batch, fw, ops.layer_backward(model, plain, batch, fw)) + tp_b


def not_recomputed(fw: FrameworkSpec) -> tuple[str, ...]:
    """The forward ops of a checkpointed compiled block its backward does not re-run (module docstring, "Checkpointed"):
    none where the checkpoint runs eagerly around the block (its recomputation is the whole forward graph again); in the
    graph (fw.ckpt_in_graph) the block's last residual add, and with fw.whole_model_graph (session 48 compck's candidate, off)
    the down projection's GEMM too: the partitioner's backward graph holds only the nodes the gradients need, and
    down_proj's output is read by that add alone (its weight gradient reads the SwiGLU product, its input gradient the
    output's gradient and W), as dtensor_tp already drops down_proj's reduce-scatter from the recompute. That reason holds for
    any graph with the checkpoint inside it (ckpt_in_graph), not for whole_model_graph alone: kempnerforge-fsdp2-compile
    (ckpt_in_graph on, whole_model_graph off) re-runs down's GEMM only for lack of evidence (unmeasured), not by mechanism
    (its dtensor_tp.RECOMPUTE already drops the reduce-scatter that GEMM feeds). Once measured: gate the GEMM on
    ckpt_in_graph and let dtensor_tp.RECOMPUTE follow not_recomputed."""
    if not fw.ckpt_in_graph:
        return ()
    return ("residual_add", "down") if fw.whole_model_graph else ("residual_add",)


def loss_in_last_graph(fw: FrameworkSpec, par: ParallelSpec) -> bool:
    """The runner's FSDP2 under whole-model compile with framework.loss_in_graph on: F.cross_entropy(logits.float())
    traced into the last graph (runner/llm_step.py's Decoder.forward returns the loss), over checkpointed blocks only:
    every process rule AM read (compileac, compilefsdp) ran recompute full; without checkpointing the eager loss stays
    (review C46 item 2: not extrapolated). memory.py's COMPILED_LOSS_LOGIT_BYTES; with fw.whole_model_graph its time too
    (fused_loss)."""
    return _fsdp2_last_graph(fw, par) and par.recompute == "full"


def _fsdp2_last_graph(fw: FrameworkSpec, par: ParallelSpec) -> bool:
    """The runner's whole-model compiled FSDP2 (zero 3, bf16 parameters) with framework.loss_in_graph on."""
    return fw.loss_in_graph and fw.ckpt_in_graph and fw.bf16_param_block and par.zero == 3


def loss_memory_in_last_graph(fw: FrameworkSpec, par: ParallelSpec) -> bool:
    """The loss's memory in the last graph (memory.py's COMPILED_LOSS_LOGIT_BYTES and FSDP2's root unit at the
    backward's end): loss_in_last_graph's steps, and (session 49, mem49) the same step without checkpointing. The loss
    graph is the same either way: Decoder.forward returns F.cross_entropy(logits.float()) whatever --ac-mode, FSDP2's
    root unit (embedding, final norm, head) breaks the graph before the head as at recompute full, and the partitioner
    decides the head's and loss's saved set within that last graph, which holds no block (so no checkpoint): the head
    mm's bf16 output and the fp32 logsumexp per row, the casts recomputed, the bf16 gradient in the backward: 2 + 2
    bytes a logit, not eager's 12. Development: x2set49's 1b 3040:2 row without checkpointing (+40.2% with eager's 12
    bytes, +2.7% with this and saved_bytes' bf16 block input; docs/models/llm-findings.md, session 49 mem49; held out:
    calibration/h200x2-mem49-2026-12-01, NOT HELD at 5%). The loss's time (fused_loss) keeps loss_in_last_graph's
    recompute full: no step time is moved by this."""
    return loss_in_last_graph(fw, par) or (fw.compiled_nock_memory and par.recompute == "none" and _fsdp2_last_graph(fw, par))


def fused_loss(fw: FrameworkSpec, par: ParallelSpec) -> bool:
    """fw.whole_model_graph (session 48 compck's candidate, adopted for FSDP2 by adopt48) where the loss is in the last
    graph (loss_in_last_graph): Inductor compiles the up-cast and the cross-entropy together (COMPILED_LOSS_BYTES,
    vocab_ops.head_forward). With fw.compiled_nock_loss (session 50 fsdpc50's candidate, OFF) the step without
    checkpointing too, where loss_memory_in_last_graph already prices the loss's memory: the same last graph
    (Decoder.forward returns the loss whatever --ac-mode; no block and no checkpoint in that graph), so its time is
    Inductor's as at recompute full. Development: x2set49's and mem49's three rows (studies/fsdpc50_loss.py; eager's
    48 B a logit the rows' slow reading, +5.1..+10.7%); held out: calibration/h200x2-fsdpc50-2026-12-01 (not run yet)."""
    nock = fw.compiled_nock_loss and par.recompute == "none" and _fsdp2_last_graph(fw, par)
    return fw.whole_model_graph and (loss_in_last_graph(fw, par) or nock)


def check_compiled(model: TransformerSpec, par: ParallelSpec, fw: FrameworkSpec | None = None) -> None:
    """What the compiled layer is not modelled for: one LlmConfigError at its key; dp > 1 allowed where `fw` is an FSDP
    trainer's compiled framework (FSDP_COMPILED; check_compiled_parallel's `fsdp`)."""
    gap = eager_ac.llama_layer_gap(model)
    if gap:
        raise LlmConfigError("framework.compile", f"a compiled block is modelled for the dense SwiGLU Llama layer; this "
                             f"model has {gap}", hint="compile: false")
    tp = fw is not None and dtensor_tp.applies(fw, par)
    if tp:   # KempnerForge's DTensor TP + sequence parallelism (llm/dtensor_tp.py): its own limits
        dtensor_tp.check(par)
    check_compiled_parallel(par, fw is not None and fw.name in FSDP_COMPILED, tp_ok=tp)


def check_compiled_parallel(par: ParallelSpec, fsdp: bool = False, torch_fsdp2: bool = False, tp_ok: bool = False) -> None:
    """The one rule of where a compiled step is modelled: one GPU (tp, pp, dp, cp, ep 1), recompute none or full (every
    block: torch.utils.checkpoint around the compiled block, layer_ops; session 46); a LlmConfigError at framework.compile
    naming the parallel keys that break it (eager.torch_framework, check_compiled). `fsdp` (an FSDP trainer's compiled
    framework, FSDP_COMPILED: fms-fsdp-compile, torch-compile+fsdp2): dp > 1 allowed, since FSDP's per-unit graph breaks
    leave each block its own graph and dp changes no op of the block (session 42, fsdpsrc; the 2-GPU compilefsdp set,
    session 46, registered to test it). `torch_fsdp2` (framework torch, eager_compiled.compiled_framework): its dp > 1 is
    FSDP2 (zero 3) alone, so dp > 1 under another zero (DDP, ZeRO-2) is refused naming parallel.zero (cold review B46
    item 10). `tp_ok`: tp > 1 allowed (the framework's DTensor TP, llm/dtensor_tp.py; session 47)."""
    names = tuple(n for n in (("tp", "pp", "cp", "ep") if fsdp else ("tp", "pp", "dp", "cp", "ep")) if not (tp_ok and n == "tp"))
    off = [f"parallel.{name}: {getattr(par, name)}" for name in names if getattr(par, name) != 1]
    off += [f"parallel.zero: {par.zero}"] if torch_fsdp2 and par.dp > 1 and par.zero != 3 else []
    off += [f"parallel.recompute: {par.recompute}"] if par.recompute not in ("none", "full") else []
    off += [f"parallel.recompute_every: {par.recompute_every}"] if par.recompute_every != 1 else []
    if off:
        where = "one GPU or FSDP2 (zero 3)" if torch_fsdp2 else "one GPU or FSDP data parallelism" if fsdp else "one GPU"
        raise LlmConfigError("framework.compile", f"torch.compile is modelled on {where}, with no activation "
                             f"checkpointing or every block's (llm-step --compile [--ac-mode full]); got {', '.join(off)}",
                             hint=f"compile: false, or {where} and recompute: none or full")


def _library(ops_list: list, names: tuple[str, ...]) -> list:
    return [o for o in ops_list if o.kind in LIBRARY_KINDS and o.name.split(".")[0] in names]


def _named(ops_list: list, name: str) -> list:
    return [o for o in ops_list if o.name == name]


def compiled_forward(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, fw: FrameworkSpec, eager_fwd: list) -> list:
    sh = ops.sharding(model, par, batch)
    T, Ts, h, f, r = sh.tokens, sh.seq_tokens, model.hidden, sh.ffn, fw.residual_bytes   # Ts: norms, residuals (T / tp under SP)
    qk = T * (sh.heads + sh.kv_heads) * model.head_dim
    out = [ops.memory("norm1_cast", Ts * h * (r + A), 4 * Ts * h)]
    out += _library(eager_fwd, ("q", "k", "v"))
    if model.rotary:
        out.append(ops.memory("rotary", qk * A, 3 * qk / 2, count=2))
    out += [o for o in eager_fwd if o.kind == "attention"] + _named(eager_fwd, "attn_out_copy") + _library(eager_fwd, ("attn_out",))
    out.append(ops.memory("add_norm2_cast", Ts * h * (2 * r + 2 * A), 5 * Ts * h))
    out += _library(eager_fwd, ("gate", "up"))
    out.append(ops.memory("swiglu", 3 * T * f * A, 4 * T * f))
    out += _library(eager_fwd, ("down",)) + [ops.memory("residual_add", Ts * h * (2 * r + A), Ts * h)]
    return out


def compiled_backward(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, fw: FrameworkSpec, eager_bwd: list) -> list:
    sh = ops.sharding(model, par, batch)
    T, Ts, h, f, r, d = sh.tokens, sh.seq_tokens, model.hidden, sh.ffn, fw.residual_bytes, model.head_dim
    qkv = T * (sh.heads + 2 * sh.kv_heads) * d
    out = [ops.memory("norm1_input_grad", Ts * h * (3 * r + 3 * A), 8 * Ts * h),
           ops.memory("norm1_weight_grad", Ts * h * (r + 3 * A), 4 * Ts * h)]
    out += _library(eager_bwd, ("q", "k", "v"))
    out.append(ops.memory("qkv_grad", 2 * qkv * A / 3, qkv / 3, count=3))
    out += [o for o in eager_bwd if o.kind == "attention"] + _named(eager_bwd, "attn_out_copy.bwd")
    out += _library(eager_bwd, ("attn_out",))
    out += [ops.memory("norm2_input_grad", Ts * h * (3 * r + 4 * A), 8 * Ts * h),
            ops.memory("norm2_weight_grad", Ts * h * (r + 2 * A), 3 * Ts * h)]
    out += _library(eager_bwd, ("gate", "up"))
    out.append(ops.memory("swiglu_bwd", 5 * T * f * A, 8 * T * f))
    out += _library(eager_bwd, ("down",)) + [ops.memory("branch_grad_cast", Ts * h * (r + A), Ts * h)]
    return out


def saved_bytes(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, fw: FrameworkSpec) -> float:
    """Bytes one compiled block keeps from its forward to its backward, its bf16 weight copies aside (memory.py counts
    those with eager's, 2 bytes per parameter): the partitioner's saved set (module docstring), per micro-batch,
    T tokens, a = 2, r = the residual stream's bytes as the backward keeps it (fw.stash_residual_bytes: fp32 under
    autocast's fp32 weights, bf16 under FSDP2's bf16 parameters, framework.bf16_param_block; session 49 mem49):
        r T h                   the block's input (norm1's input; norm2's input x + o is rebuilt from it)
        3 a T h                 norm1's and norm2's bf16 outputs, the out-projection's output
        a T d (2 H + 2 G)       q and k after rotary, v, the attention output (SDPA's backward; the out-projection's
                                weight gradient reads it as a view)
        4 H T + 2 x 4 T         the attention's fp32 logsumexp, the two norms' rstd
        3 a T f                 gate, up and their SwiGLU product"""
    sh = ops.sharding(model, par, batch)
    T, h, f, d = sh.tokens, model.hidden, sh.ffn, model.head_dim
    r = fw.stash_residual_bytes if fw.compiled_nock_memory else fw.residual_bytes   # session 49 mem49's switch
    return (r * T * h + 3 * A * T * h + A * T * d * (2 * sh.heads + 2 * sh.kv_heads)
            + 4 * sh.heads * T + 8 * T + 3 * A * T * f)
