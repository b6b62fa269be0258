"""Per-GPU memory of a training step: parameters, gradients, optimizer state, activations, logits, overhead.

Parameters on a stage's GPU (P, counted by llm/param_counts.py): its layers' dense weights / t, expert weights / (t ep), plus the embedding
/ t on the first stage and the LM head / t on the last. Bytes per parameter come from the framework
(framework.FrameworkSpec); Megatron's mixed-precision Adam:
  parameters  P * 2 (bf16)                    / dp with ZeRO-3
  gradients   P * 4 (fp32 main_grad buffers)  / dp with ZeRO-2 and 3
  optimizer   P * 12 (fp32 master, m and v)   / dp with ZeRO-1, 2 and 3
The ZeRO group is data x context parallel (dp cp; expert weights (dp / ep) cp; under HSDP the shard group of
dp_shard ranks, llm/hsdp.py): context-parallel ranks hold the same weights, and Megatron-Core builds its
distributed optimizer on get_data_parallel_group(with_context_parallel=True) (megatron/core/optimizer/__init__.py
L343 at core_r0.8.0; NeMo's distributed Adam likewise, nemo/core/optim/distributed_adam.py L130 at 070a0bb). 18 bytes
per parameter unsharded; a recipe's own dtypes replace 4 and 12 (FrameworkSpec.grad_buffer_bytes, state_bytes:
docs/models/llm.md, Memory). torch autocast with fp32
weights (the runner's llm_step): 4 + 4 + 8, plus the bf16 weight copies (2 P) the forward makes and the backward
keeps; its gradients exist only from the backward to zero_grad, so its peak is the larger of the backward's
start (activations, copies, logits) and end (gradients) over parameters and optimizer state. torch DDP (dp > 1,
no ZeRO) adds its reducer's buckets: a flat copy of every gradient in its dtype (FrameworkSpec.ddp_bucket_bytes, 4 for
fp32 gradients), allocated when the model is wrapped and held for the run (gradient_as_bucket_view off, the default),
and in its first iterations one more copy of that size (MemoryBreakdown.ddp_rebuild: the reducer rebuilds its buckets in
the second step; the old ones go with their last reference, before the step's peak in some processes and after it in
others: calibration/h200x2-eager-diagnose-2026-11-29). The job's peak includes it (`allocated`, an upper bound);
`steady_allocated` is the peak of a later step.

Activations stashed per layer per micro-batch (bytes), after Korthikanti et al. 2022 ("Reducing Activation
Recomputation in Large Transformer Models", eq. 1-2: s b h (34 + 5 a s / h) for GPT with dropout and
GeLU 4h MLP), adapted to a Llama layer (s' = s / cp, kv = g d, f = ffn, all bf16 unless stated):
  RMSNorm inputs 2 x r s'bh (r: the residual stream's element size, 2; 4 under autocast with fp32 weights);
  QKV input 2 s'bh; Q 2 s'bh, K and V 2 x 2 s'b kv; flash attention output
  2 s'bh and its fp32 logsumexp 4 a s'b (no s^2 term: flash recomputes the scores); MLP input 2 s'bh;
  SwiGLU gate, up and product 3 x 2 s'bf  ->  s'b (12 h + 4 kv + 6 f) + 4 a s'b  (r = 2)
  GPT's GeLU MLP keeps the GeLU input and output, 2 x 2 s'bf, instead of the SwiGLU's three
  eager torch also keeps the contiguous copy of the attention output (2 s'bh) and the SiLU output (2 s'bf)
  eager torch under torch.compile per block: the min-cut partitioner's saved set (llm/compiled.py, saved_bytes):
  the block's input (fp32; bf16 under FSDP2's bf16 parameters: compiled_nock_memory), the two norms' outputs and the
  out-projection's output, Q, K, V, O and the logsumexp, gate, up and product, the norms' fp32 rstd (r s'bh + s'b (6 h
  + 4 kv + 4 h' + 6 f) + 4 a s'b + 8 s'b); its bf16 weight copies are kept as eager's
  with TP: the sharded tensors (Q, K, V, O, lse, gate, up, product) / t; norm, QKV and MLP inputs (8 s'bh)
  / t only with sequence parallelism (K, V stay whole when t > g: kv heads are replicated)
  MoE: the MLP term becomes 2 s'bh + k (2 s'bh e + 2 s'bh + 6 s'b f_e / t) (per expert pick the experts' input, e = etp:
  gathered over expert TP, and the combined tokens)
  selective recompute, Megatron's recompute_modules (default core_attn; spec.RECOMPUTE_MODULES):
    core_attn      the attention core is recomputed; with flash attention its only stash beyond the tensors above is
                   the logsumexp, so it saves 4 a s'b / t
    layernorm      (output-discarding) the two norms' outputs, i.e. the QKV and MLP inputs: 2 x e s'bh / sp
    mla_up_proj    (output-discarding) MLA's up-projected, rotated Q, K and V: s'b (2 a d_qk / t + 4 kv)
    moe_act        (output-discarding) the experts' SwiGLU product: k 2 s'b f_e / t
    shared_experts the shared expert's gate / up / product and input: (4 + e) s'b f_s / t
    mlp, moe       (dense layers / MoE layers) only the norm's input and the module's checkpointed input, 2 s'bh / sp
                   each, are kept
  full recompute: only each layer's input, 2 s'bh (/ t with sequence parallelism)
fp8 under Transformer Engine (FrameworkSpec.transformer_engine): each GEMM's input is saved for the backward as TE's
  fp8 copy, 1 byte (TE 1.8 layernorm_linear.py / linear.py; TE 2.14 keeps one usage of the quantized input): the QKV,
  fc1 and fc2 inputs cost 1 byte instead of 2, and the out-projection saves its fp8 copy of the attention output
  (s'bh / t) beside the bf16 one flash attention keeps; SwiGLU's input (fc1's bf16 output, 4 s'bf / t) stays.
  Each linear weight also has its fp8 copy and transpose cached across micro-batches (2 bytes per parameter;
  Megatron-Core passes is_first_microbatch, TE caches the workspace), unless the weights themselves are fp8
  (FrameworkSpec.fp8_params: 1 byte + the cached transpose = the 2 of bf16, no cache).
Micro-batches in flight at stage r: 1F1B holds pp - r of them (pp - r - 1 warm-up forwards + one);
interleaved (v chunks) holds 2 (pp - r - 1) + (v - 1) pp + 1 chunk-micro-batches of layers / (pp v) layers
each (Megatron's warm-up count), never more than m v. The last stage also holds the logits of one micro-batch,
s'b V / t in bf16 plus their fp32 copy for the loss (6 bytes each).
GPipe (pp_schedule gpipe) stashes all m micro-batches. Eager torch (issue 44): torch.utils.checkpoint per block keeps each
block's fp32 input and peaks at the largest of the forward's end, the backward's start and one block's recomputation
(_checkpointed_live); torch.distributed.pipelining holds each stashed micro-batch's sent output, a receive buffer per
micro-batch for each chunk's input (not the first stage) and output gradient (not the last: _pipelining_receive_buffers), and on the last stage
every micro-batch's bf16 logits to the step's end and their merged copy beside the gradients (step_end); freed gradients
made by a first backward sit beside the micro-batches stashed after it (live_after_backward; docs/models/llm.md).
ZeRO-3 also holds two layers' gathered bf16 weights (the one running and the one prefetched).
The runner's FSDP2 (bf16 parameters, FrameworkSpec.bf16_param_block): the embedding's output and so the residual stream are
bf16, its norms' saved inputs 2 B (not autocast's fp32 4), and no attention-output copy is saved (cuDNN's layout).
The Hugging Face frameworks (llm/hf_memory.py): transformers' Llama saves each norm's fp32 upcast, K and V after
repeat_kv and no attention-output copy; DeepSpeed ZeRO-3 holds a bf16 gradient partition (grad_partition) and its step
copies one sub-group's gradient to fp32 (the gradients at the step).
Framework overhead (CUDA context, cuBLAS workspaces, NCCL buffers): a fixed OVERHEAD_BYTES, outside what
torch.cuda.max_memory_allocated reports; `fits` compares allocated + overhead with the card's capacity.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from simcluster.llm import autocast_block, compiled, dtensor_tp, eager_ac, grad_sync, hf_memory, torch_cp
from simcluster.llm.framework import MEGATRON, FrameworkSpec
from simcluster.llm.param_counts import layer_linear_params, layer_params, stage_dense_layers, stage_layers, stage_params
from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec

GiB = 2.0**30
FP8_WEIGHT_CACHE_BYTES = 2.0   # TE's fp8 copy of a bf16 linear weight and its transpose, per parameter
EAGER_PP_LOGITS_HELD = 2.0    # bytes per logit: the last stage's bf16 logits, held by torch pipelining to the step's end
# The runner's FSDP2 with its whole model compiled (llm-step --mode fsdp --compile-scope model;
# FrameworkSpec.loss_in_graph, on since session 46 compileac's rule AM read ADOPT, under recompute full: the population
# it read; under recompute none too with FrameworkSpec.compiled_nock_memory, session 49 mem49: the same last graph,
# compiled.loss_memory_in_last_graph). Its forward returns F.cross_entropy(logits.float()), so the loss is in the last compiled graph:
# Inductor fuses the fp32 cast, log-softmax and NLL into reductions over the bf16 logits (the partitioner saves the mm's
# bf16 output and the fp32 logsumexp per row, torch/_functorch/partitioners.py: the casts are fusible, recomputed) and
# the backward writes the logits' gradient in bf16: 2 + 2 bytes a logit at the loss's peak, not eager's 12 (no fp32
# copy, no fp32 log-softmax output). And FSDP2's root unit (fully_shard(model): the embedding, final norm and LM head)
# holds its gathered bf16 parameters through the whole backward (the head's backward comes first, the embedding's last:
# the root's pre-backward gathers them, or they stay from the forward where the root skips its reshard,
# torch/distributed/fsdp/_fully_shard/_fsdp_state.py _lazy_init), the head's unsharded bf16 gradient waits from the
# backward's start for the root's post-backward after the embedding's, which copies the root's gradients into one
# reduce_dtype (fp32) reduce-scatter input (_fsdp_collectives.py, foreach_reduce; the runner's MixedPrecisionPolicy:
# bf16 params, fp32 reduce, runner/llm_mesh.py): 2 + 2 + 4 bytes per root parameter beside the sharded gradients at the
# backward's end (step_end). Development: the compilefsdp set's fsdp peaks (4.53, 9.20 GiB: 4.56, 9.34 with both).
COMPILED_LOSS_LOGIT_BYTES = 4.0
FSDP2_ROOT_END_BYTES = 8.0
# FrameworkSpec.compiled_loss_donated (session 50 fsdpc50's candidate, OFF): at the loss's peak in that last graph the
# backward writes the logits' bf16 gradient over the saved bf16 logits (AOTAutograd's donated buffers: a saved tensor
# that aliases no forward input or output and no backward output may be reused in place by Inductor's backward,
# torch/_inductor/ir.py DonatedBuffer, torch._functorch.config.donated_buffer on by default): 2 bytes a logit, not 2 + 2;
# and FSDP2's root unit holds, from the backward's start (the comment above), its gathered bf16 parameters (2 bytes per
# root parameter: embedding, final norm, head) and the head's unsharded bf16 gradient (2 bytes per head parameter, V x H,
# tied or not: the norm's and an untied embedding's gradients come later in the backward). Only the step without
# checkpointing (the rows that chose it and the registered rows; the one checkpointed row it would move, compck2's 0.5b,
# reads worse with it). Development (two rows solved for the two coefficients, the third a check): x2set49's and
# mem49's three peaks without checkpointing (studies/fsdpc50_loss.py, section 4); held out:
# calibration/h200x2-fsdpc50-2026-12-01 (not run yet).
DONATED_LOSS_LOGIT_BYTES = 2.0
FSDP2_ROOT_START_BYTES = 2.0
HEAD_GRAD_START_BYTES = 2.0
OVERHEAD_BYTES = 1.5 * GiB   # CUDA context ~0.5 GiB + cuBLAS/NCCL workspaces + allocator slack (an estimate, not measured)


def layer_activation_bytes(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, fw: FrameworkSpec = MEGATRON) -> float:
    s, b, h, t = model.seq / par.cp, batch.micro_batch, model.hidden, par.tp
    rb = fw.stash_residual_bytes
    fp8 = fp8_saved_inputs(batch, fw)
    g = 1 if fp8 else 2                 # bytes per element of a GEMM input saved for the backward
    sp = t if par.sequence_parallel else 1
    kv = max(1, model.kv_heads // t) * model.head_dim   # per-GPU K/V width
    if par.recompute == "op":     # eager torch: torchtitan's op-level checkpointing (llm/eager_ac.py)
        return eager_ac.op_kept_bytes(model, par, batch, rb)
    if par.recompute == "full" and par.recompute_every > 1:   # every N-th block checkpointed: the blocks' mean
        ckpt = eager_ac.checkpointed_layers(par, model.layers)
        plain = layer_activation_bytes(model, replace(par, recompute="none", recompute_every=1), batch, fw)
        return (ckpt * rb * s * b * h / sp + (model.layers - ckpt) * plain) / model.layers
    if par.recompute == "full":   # each layer's input, in the residual stream's dtype (eager torch: fp32)
        return rb * s * b * h / sp
    if fw.compiled:   # torch.compile per block (one GPU, no recompute: compiled.check_compiled_parallel)
        return compiled.saved_bytes(model, par, batch, fw)
    norm_out = 0 if par.recomputes("layernorm") else 1   # output-discarding: the norms' outputs (the QKV / MLP inputs) go
    lse = 4 * model.heads / t * s * b
    qo = model.heads * (model.head_dim + model.value_dim) / 2     # = h unless attn_head_dim / MLA (Q and O widths)
    attn = (rb + g * norm_out) * s * b * h / sp + s * b * (4 * qo / t + 4 * kv) + lse   # norm1 in, qkv in | Q, O, K, V | lse
    if model.mla:     # the two latents (saved for their up-projections) and their normalised copies
        attn += 2 * (1 + g / 2) * s * b * (model.q_lora_rank + model.kv_lora_rank)
        if par.recomputes("mla_up_proj"):   # output-discarding: the up-projected, rotated Q and K, V are rebuilt
            attn -= s * b * (2 * model.heads / t * model.head_dim + 4 * kv)
    if model.qk_norm:   # the normalised query and key heads' inputs
        attn += 2 * s * b * (model.heads / t + kv / model.head_dim) * model.head_dim
    if fp8:
        attn += s * b * h / t          # the out-projection's fp8 copy of the attention output
    if fw.eager:   # the contiguous copy of the attention output the out-projection saves; the runner's block: autocast_block
        no_copy = fw.bf16_param_block or fw.hf_llama_saves   # the output's layout makes the copy a view (llm/hf_memory.py)
        attn += (0 if no_copy else 2 * s * b * h / t) + (autocast_block.saved_extra_bytes(model, par, batch) if fw.autocast_block else 0.0)
    if model.moe and par.recomputes("moe"):    # norm2 in and the layer's checkpointed input
        mlp = 2 * s * b * h / sp + 2 * s * b * h / sp
    elif model.moe:
        act = 4 if par.recomputes("moe_act") else 6     # gate, up (and the product, unless the activation is rebuilt)
        # norm2 in, router in, and per expert pick the experts' input (after the expert-TP all_gather: etp x the rank's
        # dispatched rows, comm.dispatch_bytes) and the combined tokens (the unpermute's input, the rank's own rows) and
        # gate, up (product); expert TP 1: the rank's own rows twice
        mlp = 2 * s * b * h / sp + 2 * norm_out * s * b * h / sp + model.top_k * (2 * s * b * h * par.etp / sp + 2 * s * b * h / sp
                                                                                  + act * s * b * model.expert_ffn / t)
        if not par.recomputes("shared_experts"):
            mlp += (4 + g) * s * b * model.shared_expert_ffn / t      # shared expert: gate/up/product (input shared)
    elif par.recomputes("mlp"):                # norm2 in and the MLP's checkpointed input (bf16)
        mlp = rb * s * b * h / sp + 2 * s * b * h / sp
    elif model.mlp == "gelu":
        mlp = (rb + g * norm_out) * s * b * h / sp + (2 + g) * s * b * model.ffn / t   # norm2 in, mlp in, GeLU in and out (fc2 in)
    else:
        mlp = (rb + g * norm_out) * s * b * h / sp + (8 if fw.eager else 4 + g) * s * b * model.ffn / t
        # norm2 in, mlp in, gate/up/(silu)/product
    if model.dropout:   # the two hidden-dropout masks, 1 byte per element of the (sequence-sharded) residual stream
        mlp += 2 * s * b * h / sp
    if par.recomputes("core_attn"):
        attn -= lse
    elif fw.attention == "unfused" and par.cp == 1:   # Korthikanti's 5 a s^2 b: softmax output, dropout mask and output
        attn += 5 * model.heads / t * s * s * b
    hf = hf_memory.layer_extra_bytes(model, par, batch) if fw.hf_llama_saves and par.recompute == "none" else 0.0
    return attn + mlp + hf


def fp8_saved_inputs(batch: BatchSpec, fw: FrameworkSpec) -> bool:
    """Transformer Engine's fp8: GEMM inputs saved in 1 byte, fp8 weight caches (module docstring)."""
    return batch.precision == "fp8" and fw.transformer_engine


def in_flight(par: ParallelSpec, micro_batches: int, rank: int = 0) -> tuple[int, float]:
    """(chunk-micro-batches a stage stashes at its peak, the fraction of the stage's layers in one chunk):
    Megatron's warm-up forwards of that rank plus the one in flight, at most every chunk-micro-batch."""
    v, pp = par.virtual_stages, par.pp
    if par.pp_schedule == "gpipe":   # every micro-batch's forward before the first backward
        return micro_batches, 1.0
    warm = pp - rank - 1 if v == 1 else 2 * (pp - rank - 1) + (v - 1) * pp
    return min(micro_batches * v, warm + 1), 1.0 / v


@dataclass(frozen=True)
class MemoryBreakdown:
    parameters: float
    gradients: float
    optimizer: float
    activations: float
    logits: float
    weight_copies: float
    overhead: float
    capacity: float
    stage: str
    persistent_grads: bool = True
    fp8_weight_cache: float = 0.0     # TE's cached fp8 weights and transposes (persistent)
    ddp_buckets: float = 0.0          # torch DDP's reducer bucket copy of the gradients (persistent, allocated at wrap)
    ddp_rebuild: float = 0.0          # one more such copy in DDP's first iterations (bucket rebuild): in the job's peak only
    live_peak: float | None = None    # the step's live bytes where activations, logits and copies do not all coexist
                                      # (eager activation checkpointing, _checkpointed_live); None: their sum
    step_end: float = 0.0             # bytes alive beside the full gradients at the backward's end (torch pipelining's
                                      # last stage: its micro-batches' outputs and their merged copy)
    live_after_backward: float | None = None   # freed gradients, several micro-batches a step: the live bytes beside the
                                               # gradients a first backward made (1F1B's next forward, GPipe's next backward)
    accumulated_grads: float = 0.0    # FSDP no-sync: the unsharded gradient accumulator held across the step's micro-batches,
                                      # beside them in place of the sharded gradients (llm/grad_sync.py)
    grad_partition: float = 0.0       # DeepSpeed ZeRO-3's flat gradient partition, held across steps (llm/hf_memory.py)

    @property
    def allocated(self) -> float:
        """The job's peak of what torch.cuda.max_memory_allocated reports (no context, no workspaces), its first
        iterations included."""
        return self.steady_allocated + self.ddp_rebuild

    @property
    def steady_allocated(self) -> float:
        """The peak of a step after the first iterations. Gradients that are created in the backward and freed after
        the step (torch's set_to_none) peak at either the start of the backward (all activations, no gradients) or
        its end (all gradients, no activations)."""
        static = self.parameters + self.optimizer + self.fp8_weight_cache + self.ddp_buckets + self.grad_partition
        live = self.activations + self.logits + self.weight_copies if self.live_peak is None else self.live_peak
        if self.persistent_grads:
            return static + self.gradients + live
        held = self.accumulated_grads or self.gradients   # what a first backward leaves beside the next micro-batch
        after = held + self.live_after_backward if self.live_after_backward is not None else 0.0
        return static + max(live, self.gradients + self.step_end, after)

    @property
    def total(self) -> float:
        return self.allocated + self.overhead

    @property
    def fits(self) -> bool:
        return self.total <= self.capacity

    def to_gib(self) -> dict:
        parts = ("parameters", "gradients", "optimizer", "activations", "logits", "weight_copies", "fp8_weight_cache", "ddp_buckets",
                 "ddp_rebuild", "overhead") + (("accumulated_grads",) if self.accumulated_grads else ()) \
            + (("grad_partition",) if self.grad_partition else ())   # FSDP no-sync, DeepSpeed ZeRO-3 only
        out = {k: getattr(self, k) / GiB for k in parts}
        return {**out, "allocated": self.allocated / GiB, "total": self.total / GiB, "capacity": self.capacity / GiB,
                "stage": self.stage}


def _stage_memory(model, par, batch, capacity, stage: int, fw: FrameworkSpec) -> MemoryBreakdown:
    vocab_split = par.tp if fw.tp_vocab_split else 1
    first, last = stage == 0, stage == par.pp - 1
    label = "only" if first and last else "first" if first else "last" if last else f"middle ({stage})"
    p = stage_params(model, par, stage, vocab_split)
    dp, edp = par.shard * par.cp, par.expert_dp   # the ZeRO groups: data x context parallel (expert_dp has its CP
    #                                               ranks); HSDP: the shard group (parallel.dp_shard, llm/hsdp.py)
    z = par.zero

    def sharded(on: bool) -> float:
        return p.dense / dp + p.expert / edp if on else p.total

    params = fw.param_bytes * sharded(z >= 3)
    if z == 3:  # FSDP holds the gathered weights of the layer it runs and of the one it prefetches
        params += 2 * fw.param_bytes * layer_params(model, par).total
    if z == 2 and fw.eager and fw.bf16_param_block:   # FSDP2 reshard_after_forward=False (llm/eager.py): every layer's
        params += fw.param_bytes * sharded(True)        # gathered weights above, and the fp32 shard's share zero 3 counts
    grads = fw.grad_buffer_bytes * sharded(z >= 2)
    partition = 0.0   # DeepSpeed ZeRO-3's held gradient partition; grads then the step's fp32 copy (llm/hf_memory.py)
    if fw.deepspeed_zero3_buffers and z == 3:
        partition, grads = hf_memory.zero3_gradient_bytes(fw.grad_bytes, sharded(True))
    fp8 = fp8_saved_inputs(batch, fw)
    state = (fw.state_bytes - (2 if fw.master_remainders and not (fp8 and fw.fp8_params) else 0)) * sharded(z >= 1)
    m = batch.micro_batches(par.dp)
    chunks, frac = in_flight(par, m, stage)
    stage_layer_count = stage_layers(model, par, stage) + (model.mtp_layers if last else 0)   # MTP: one more layer each
    cached = fp8 and not fw.fp8_params
    cache = FP8_WEIGHT_CACHE_BYTES * stage_layer_count * layer_linear_params(model, par) if cached else 0.0
    layers = stage_layer_count * frac
    per_layer = layer_activation_bytes(model, par, batch, fw)
    dense_here = stage_dense_layers(model, par, stage) if model.dense_layers else 0   # a MoE model's first layers are dense
    if dense_here:
        dense = layer_activation_bytes(model.dense_layer(), par, batch, fw)
        per_layer = (dense_here * dense + (stage_layer_count - dense_here) * per_layer) / stage_layer_count
    residual = fw.stash_residual_bytes * model.seq / par.cp * batch.micro_batch * model.hidden / (par.tp if par.sequence_parallel else 1)
    heads = 1 + model.mtp_layers   # the LM head's logits, and each MTP module's
    logit_split = 1 if dtensor_tp.applies(fw, par) else vocab_split   # KempnerForge's head: output_layouts Replicate, the
    #                                                                  full logits on every TP rank (llm/dtensor_tp.py)
    logit_elements = model.seq / par.cp * batch.micro_batch * model.vocab / logit_split
    eager_pp = fw.eager and par.pp > 1   # torch.distributed.pipelining keeps each in-flight micro-batch's stage output
    root_params = model.vocab * model.hidden * (1 if model.tied_embeddings else 2) + model.hidden   # FSDP2's root unit

    def acts_of(n: int) -> float:   # n chunk-micro-batches stashed
        out = n * layers * per_layer + (n * residual if first else 0.0)
        return out + (n * residual if eager_pp and not last else 0.0) + (_pipelining_receive_buffers(par, m, n, first, last)
                                                                         * residual if eager_pp else 0.0)

    def logits_of(n: int) -> float:
        if not last:
            return 0.0
        out = heads * (COMPILED_LOSS_LOGIT_BYTES if compiled.loss_memory_in_last_graph(fw, par) else fw.logit_bytes) * logit_elements
        if fw.compiled_loss_donated and par.recompute == "none" and compiled.loss_memory_in_last_graph(fw, par) and first:
            out = (heads * DONATED_LOSS_LOGIT_BYTES * logit_elements + FSDP2_ROOT_START_BYTES * root_params   # fsdpc50's
                   + HEAD_GRAD_START_BYTES * model.vocab * model.hidden / vocab_split)                      # candidate
        if eager_pp:   # every micro-batch's bf16 logits (output_chunks, kept to the step's end), and log_softmax's saved
            #            fp32 output of each in-flight micro-batch beyond the one at the loss's peak
            # interleaved (v > 1): the last chunk runs each forward's backward next (torch's ScheduleInterleaved1F1B
            # order, as Megatron's), so one micro-batch's logits are in flight whatever the rank's chunk count n
            flight = 1 if par.virtual_stages > 1 else n
            out += EAGER_PP_LOGITS_HELD * heads * logit_elements * m + 4 * (flight - 1) * heads * logit_elements
        return out

    acts, logits = acts_of(chunks), logits_of(chunks)
    step_end = 2 * EAGER_PP_LOGITS_HELD * heads * logit_elements * m if eager_pp and last else 0.0   # step() merges the chunks
    if compiled.loss_memory_in_last_graph(fw, par) and first and last:   # FSDP2's root unit at the backward's end (COMPILED_LOSS_LOGIT_BYTES)
        step_end += FSDP2_ROOT_END_BYTES * root_params
    copies = fw.weight_copy_bytes * p.total
    if fw.compiled and par.recompute == "full" and last:   # the compiled blocks' casts are graph ops checkpoint frees after
        copies = fw.weight_copy_bytes * model.vocab * model.hidden / vocab_split   # each block (session 46): the head's
    elif fw.compiled and par.recompute == "full":   # eager autocast copy is the one left
        copies = 0.0
    buckets = fw.ddp_bucket_bytes * p.total if dp > 1 and z == 0 else 0.0   # DDP's reducer: unsharded, only when it reduces
    def live_of(n: int, forward: bool = True) -> float | None:   # n chunk-micro-batches stashed, where activations,
        #   logits and copies do not all coexist (None: their sum); forward False: no forward runs (GPipe's backwards)
        a, lg = acts_of(n), logits_of(n)
        if fw.eager and par.recompute in ("full", "op"):
            head = fw.weight_copy_bytes * model.vocab * model.hidden / vocab_split if last else 0.0
            return _checkpointed_live(model, par, batch, fw, a, lg, copies, head, heads * logit_elements if last else 0.0,
                                      forward)
        if fw.torch_cp and par.cp > 1:   # the ring's gathered K, V and fp32 buffers, after the logits are freed (llm/torch_cp.py)
            return a + copies + max(lg, torch_cp.transient_bytes(model, par, batch))
        return None

    live = live_of(chunks)
    after = None   # gradients made by a first backward beside the micro-batches still stashed (several per step, freed grads;
    #                FSDP no-sync's unsharded accumulator: MemoryBreakdown.accumulated_grads), with or without checkpointing
    if not fw.persistent_grads and m > 1 and not partition:   # DeepSpeed ZeRO-3 accumulates into its
        #   held partition (static): its step copy exists inside the step only
        n = m - 1 if par.pp_schedule == "gpipe" else chunks if m * par.virtual_stages > chunks else 0   # 1F1B: a forward
        #   follows a backward (a rank runs m x v chunk-micro-batches; chunks of them are stashed at once)
        if n:
            after = live_of(n, par.pp_schedule != "gpipe") if live is not None else acts_of(n) + logits_of(n) + copies
    return MemoryBreakdown(params, grads, state, acts, logits, copies, OVERHEAD_BYTES, capacity, label, fw.persistent_grads,
                           cache, buckets, buckets, live, step_end, after,
                           grad_sync.accumulated_grad_bytes(par, m, fw.grad_bytes, p.total), partition)


def _pipelining_receive_buffers(par: ParallelSpec, m: int, in_flight: int, first: bool, last: bool) -> float:
    """Boundary tensors torch.distributed.pipelining's PipelineStage keeps for the whole run (stage.py,
    _prepare_forward_infra / _prepare_backward_infra, torch 2.4-2.11): one activation receive buffer per micro-batch for
    every chunk that is not the pipeline's first stage, one gradient receive buffer per micro-batch for every chunk that
    is not its last. A stashed micro-batch's received input is its first layer's saved input, which
    layer_activation_bytes already counts: the in-flight chunk-micro-batches' share of those buffers is not added again."""
    v = par.virtual_stages
    receiving = v - (1 if first else 0)   # chunks with an activation receive buffer per micro-batch
    return max(0.0, m * receiving - in_flight * receiving / v) + m * (v - (1 if last else 0))


def _checkpointed_live(model, par, batch, fw: FrameworkSpec, inputs: float, logits: float, copies: float, head_copy: float,
                       logit_elements: float, forward: bool = True) -> float:
    """Live bytes of an eager step with torch.utils.checkpoint per block (non-reentrant): the blocks' inputs (`inputs`)
    are kept throughout; above them the largest of
      the forward's end   autocast's cache still holds every bf16 weight copy; the loss's forward tensors, 2 bytes per
                          logit fewer than at the backward's start (no fp32 gradient yet)
      the backward's start  the LM head's bf16 copy (the only one autograd saved) and the loss's peak
      a block's recompute   its full activations and its own bf16 weight copies (the recomputation's autocast)
    every N-th block and op checkpointing (llm/eager_ac.py): eager_ac.checkpointed_live, which is this for full.
    forward False (the live bytes beside a first backward's gradients under GPipe, where backwards follow it): no
    forward's end."""
    copies_one = fw.weight_copy_bytes * layer_params(model, par).total
    plain = layer_activation_bytes(model, replace(par, recompute="none", recompute_every=1), batch, fw)
    kept = layer_activation_bytes(model, replace(par, recompute_every=1), batch, fw)
    block_input = layer_activation_bytes(model, replace(par, recompute="full", recompute_every=1), batch, fw)
    recompute = eager_ac.recompute_extra_bytes(par, plain, kept, block_input, copies_one)   # op: less its SAC cache
    return eager_ac.checkpointed_live(model.layers, par.recompute_every, inputs, plain, recompute, copies_one,
                                      copies + logits - 2 * logit_elements if forward else 0.0, head_copy + logits)


def stage_memories(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, capacity_bytes: float,
                   fw: FrameworkSpec = MEGATRON) -> list[MemoryBreakdown]:
    """Each pipeline stage's GPU, stage order."""
    return [_stage_memory(model, par, batch, capacity_bytes, s, fw) for s in range(par.pp)]


def memory_per_gpu(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, capacity_bytes: float,
                   fw: FrameworkSpec = MEGATRON) -> MemoryBreakdown:
    """The fullest pipeline stage (the first on a tie; the one GPU's when pp = 1): every stage is checked, since a layout
    (parallel.pipeline_layout) can make a middle stage the heaviest."""
    return max(stage_memories(model, par, batch, capacity_bytes, fw), key=lambda mb: mb.total)
