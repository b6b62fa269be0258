"""What is trained and how it is split: TransformerSpec, ParallelSpec, BatchSpec and their checks.

A Llama-style decoder (or GPT-style with mlp: gelu): RMSNorm, grouped-query attention with rotary embeddings, SwiGLU MLP (or a
mixture of SwiGLU experts with top-k routing), untied or tied input embedding and LM head.
Parameter count per layer (h hidden, d = h / heads head size, g kv heads, f ffn):
  attention  h * (heads * d) + 2 * h * (g * d) + (heads * d) * h      (Q, K, V, O; no biases)
  MLP        3 * h * f  (SwiGLU: gate, up, down; GPT's GeLU MLP: 2 * h * f, up and down)
  MoE        E * 3 * h * f_e + h * E                                  (experts, router)
  norms      2 * h
plus the embedding V * h, the LM head V * h (unless tied) and the final norm h.
Every check raises LlmConfigError whose `key` names the offending setting (e.g. "parallel.tp").
"""

from __future__ import annotations

from dataclasses import dataclass

from simcluster.errors import SimclusterError

RECOMPUTE = ("none", "selective", "full")
MLPS = ("swiglu", "gelu")
PRECISIONS = ("bf16", "fp8")
ZERO_STAGES = (0, 1, 2, 3)


class LlmConfigError(SimclusterError):
    """A model, parallelism or batch setting that cannot run; `key` is the dotted setting to blame."""

    def __init__(self, key: str, message: str, hint: str | None = None):
        self.key = key
        super().__init__(f"{key}: {message}", hint=hint)


@dataclass(frozen=True)
class TransformerSpec:
    layers: int
    hidden: int
    ffn: int
    heads: int
    kv_heads: int
    vocab: int
    seq: int
    experts: int = 0          # 0 = dense
    top_k: int = 0
    expert_ffn: int = 0
    tied_embeddings: bool = False
    mlp: str = "swiglu"       # or "gelu": GPT's two-matrix MLP (up, GeLU, down)
    dropout: bool = False     # hidden dropout after attention and MLP (Megatron's fused bias-dropout-add keeps a 1-byte mask)

    def __post_init__(self):
        if self.mlp not in MLPS:
            raise LlmConfigError("model.mlp", f"expected one of {', '.join(MLPS)}, got {self.mlp!r}")
        for name in ("layers", "hidden", "heads", "kv_heads", "vocab", "seq"):
            if getattr(self, name) < 1:
                raise LlmConfigError(f"model.{name}", f"expected an integer >= 1, got {getattr(self, name)}")
        if self.hidden % self.heads:
            raise LlmConfigError("model.heads", f"{self.heads} heads do not divide hidden {self.hidden}")
        if self.heads % self.kv_heads:
            raise LlmConfigError("model.kv_heads", f"{self.kv_heads} kv heads do not divide {self.heads} heads")
        if self.moe:
            if not 1 <= self.top_k <= self.experts:
                raise LlmConfigError("model.top_k", f"expected 1 <= top_k <= experts ({self.experts}), got {self.top_k}")
            if self.expert_ffn < 1:
                raise LlmConfigError("model.expert_ffn", "a mixture of experts needs expert_ffn >= 1")
        elif self.ffn < 1:
            raise LlmConfigError("model.ffn", f"expected an integer >= 1, got {self.ffn}")

    @property
    def moe(self) -> bool:
        return self.experts > 0

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim

    def attention_params(self) -> int:
        h = self.hidden
        return 2 * h * h + 2 * h * self.kv_dim

    @property
    def mlp_matrices(self) -> int:
        return 3 if self.mlp == "swiglu" else 2

    def mlp_params(self) -> int:
        if self.moe:
            return self.experts * self.mlp_matrices * self.hidden * self.expert_ffn + self.hidden * self.experts
        return self.mlp_matrices * self.hidden * self.ffn

    def layer_params(self) -> int:
        return self.attention_params() + self.mlp_params() + 2 * self.hidden

    def embedding_params(self) -> int:
        return self.vocab * self.hidden

    def parameter_count(self) -> int:
        head = 0 if self.tied_embeddings else self.vocab * self.hidden
        return self.layers * self.layer_params() + self.embedding_params() + head + self.hidden

    def active_parameter_count(self) -> int:
        """Parameters one token passes through (a MoE token sees top_k experts, not all)."""
        if not self.moe:
            return self.parameter_count()
        inactive = (self.experts - self.top_k) * self.mlp_matrices * self.hidden * self.expert_ffn
        return self.parameter_count() - self.layers * inactive


@dataclass(frozen=True)
class ParallelSpec:
    tp: int = 1
    pp: int = 1
    dp: int = 1
    cp: int = 1
    ep: int = 1
    zero: int = 0                 # 0 DDP, 1 optimizer state sharded, 2 + gradients, 3 + parameters (FSDP)
    virtual_stages: int = 1       # interleaved 1F1B model chunks per pipeline stage
    recompute: str = "none"
    sequence_parallel: bool = False
    tp_comm_overlap: bool = False       # Megatron --tp-comm-overlap: TE userbuffers pipeline TP collectives with GEMMs (llm/overlap.py)
    overlap_param_gather: bool = False  # Megatron --overlap-param-gather: ZeRO-1/2 parameter all_gather overlapped with the forward

    def __post_init__(self):
        for name in ("tp", "pp", "dp", "cp", "ep", "virtual_stages"):
            if getattr(self, name) < 1:
                raise LlmConfigError(f"parallel.{name}", f"expected an integer >= 1, got {getattr(self, name)}")
        if self.zero not in ZERO_STAGES:
            raise LlmConfigError("parallel.zero", f"expected one of 0, 1, 2, 3, got {self.zero}")
        if self.recompute not in RECOMPUTE:
            raise LlmConfigError("parallel.recompute", f"expected one of {', '.join(RECOMPUTE)}, got {self.recompute!r}")
        if self.sequence_parallel and self.tp == 1:
            raise LlmConfigError("parallel.sequence_parallel", "sequence parallelism needs tp > 1")
        if self.tp_comm_overlap and not self.sequence_parallel:
            raise LlmConfigError("parallel.tp_comm_overlap", "TP communication overlap needs sequence parallelism (as Megatron asserts)",
                                 hint="set sequence_parallel: true")
        if self.overlap_param_gather and self.zero not in (1, 2):
            raise LlmConfigError("parallel.overlap_param_gather", f"needs the distributed optimizer (zero 1 or 2), got zero {self.zero}")
        if self.virtual_stages > 1 and self.pp == 1:
            raise LlmConfigError("parallel.virtual_stages", "interleaved stages need pp > 1")
        if self.zero == 3 and self.pp > 1:
            raise LlmConfigError("parallel.zero", "ZeRO-3 / FSDP with pipeline parallelism is not modelled",
                                 hint="use zero 0, 1 or 2 with pp > 1")

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp * self.cp


@dataclass(frozen=True)
class BatchSpec:
    global_batch: int     # sequences per optimizer step
    micro_batch: int      # sequences per micro-batch per model replica
    precision: str = "bf16"

    def __post_init__(self):
        for name in ("global_batch", "micro_batch"):
            if getattr(self, name) < 1:
                raise LlmConfigError(name, f"expected an integer >= 1, got {getattr(self, name)}")
        if self.precision not in PRECISIONS:
            raise LlmConfigError("precision", f"expected one of {', '.join(PRECISIONS)}, got {self.precision!r}")

    def micro_batches(self, dp: int) -> int:
        return self.global_batch // (self.micro_batch * dp)


def layer_split(layers: int, pp: int, virtual_stages: int = 1) -> tuple[int, ...]:
    """Layers of each virtual stage (k = chunk * pp + stage). Even when pp x v divides the layers; otherwise
    every chunk gets ceil(layers / (pp v)) and the deficit is taken one layer at a time from the first and
    last virtual stages inwards (they also carry the embedding and the LM head), as the Llama 3 paper did
    for 126 layers on 16 stages (7 + 14 x 8 + 7)."""
    chunks = pp * virtual_stages
    per = -(-layers // chunks)
    counts = [per] * chunks
    deficit, lo, hi = per * chunks - layers, 0, chunks - 1
    while deficit > 0:
        counts[lo] -= 1
        deficit -= 1
        lo += 1
        if deficit > 0:
            counts[hi] -= 1
            deficit -= 1
            hi -= 1
    return tuple(counts)


def check(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, gpus: int | None = None) -> None:
    """Every cross-check between model, parallelism, batch and GPU count; the first failure raises."""
    t = par.tp
    if model.heads % t:
        raise LlmConfigError("parallel.tp", f"tp {t} does not divide heads ({model.heads})")
    if model.kv_heads % t and t % model.kv_heads:
        raise LlmConfigError("parallel.tp", f"tp {t} and kv_heads {model.kv_heads}: neither divides the other")
    ffn = model.expert_ffn if model.moe else model.ffn
    if ffn % t:
        raise LlmConfigError("parallel.tp", f"tp {t} does not divide the {'expert_ffn' if model.moe else 'ffn'} ({ffn})")
    if model.vocab % t:
        raise LlmConfigError("parallel.tp", f"tp {t} does not divide vocab ({model.vocab})",
                             hint="pad the vocabulary to a multiple of tp")
    chunks = par.pp * par.virtual_stages
    if chunks > model.layers:
        what = f"pp {par.pp} x virtual_stages {par.virtual_stages}" if par.virtual_stages > 1 else f"pp {par.pp}"
        raise LlmConfigError("parallel.pp", f"{what} = {chunks} model chunks for {model.layers} layers: a chunk needs >= 1 layer")
    if model.seq % (2 * par.cp) and par.cp > 1:
        raise LlmConfigError("parallel.cp", f"2 x cp ({2 * par.cp}) does not divide seq ({model.seq}) (load-balanced ring attention)")
    if par.ep > 1:
        if not model.moe:
            raise LlmConfigError("parallel.ep", "expert parallelism needs a mixture of experts (model.experts)")
        if model.experts % par.ep:
            raise LlmConfigError("parallel.ep", f"ep {par.ep} does not divide experts ({model.experts})")
        if par.dp % par.ep:
            raise LlmConfigError("parallel.ep", f"ep {par.ep} does not divide dp ({par.dp}) (experts are spread over data-parallel ranks)")
    if gpus is not None and par.gpus != gpus:
        raise LlmConfigError("parallel.dp", f"dp x tp x pp x cp = {par.dp} x {par.tp} x {par.pp} x {par.cp} = {par.gpus}, "
                             f"but the machine has {gpus} GPUs")
    per_step = batch.micro_batch * par.dp
    if batch.global_batch % per_step:
        raise LlmConfigError("global_batch", f"{batch.global_batch} is not a multiple of micro_batch x dp = {per_step}")
    m = batch.micro_batches(par.dp)
    if par.virtual_stages > 1 and m % par.pp:
        raise LlmConfigError("global_batch", f"interleaved 1F1B needs micro-batches ({m}) divisible by pp ({par.pp})")


@dataclass(frozen=True)
class FrameworkSpec:
    """How the training code runs the model: what it stores and moves besides the model's own math.

    megatron: fused QKV GEMM, bf16 weights and residual stream, fp32 main_grad buffers that persist (every micro-batch's
      weight gradients added into them: grad_accumulate_bytes), fp32 master
      weights and Adam moments (2 + 4 + 12 bytes per parameter), fused kernels, Transformer Engine layers (under fp8:
      GEMM inputs saved in fp8, cached fp8 weights; llm/memory.py). A recipe's own gradient-buffer and optimizer dtypes
      and fp8 weights are memory-only fields set with dataclasses.replace (a published file's `simcluster.memory`).
    torch-amp (simcluster.runner.llm_step): fp32 weights under bf16 autocast, separate q / k / v Linears, fp32
      residual stream (embedding and weights are fp32), gradients created in each backward and freed by
      zero_grad(set_to_none=True), fused AdamW with fp32 moments (4 + 4 + 8 bytes per parameter), bf16 weight
      copies autocast makes in the forward and the backward keeps, eager (unfused) rotary, SwiGLU and loss.
      Its loss peaks at the start of the backward with 12 bytes per logit alive: log_softmax's saved fp32 output,
      the fp32 gradient nll_loss hands it and the fp32 gradient it returns (the forward's bf16 logits and fp32
      copy, 2 + 4 + 4 with log_softmax's output, are fewer).
    megatron-unfused-attention: megatron with the attention core of Megatron-LM before flash attention (scores
      Q K^T and the context P V as batched GEMMs, s x s scores, probabilities and dropout mask in HBM).
    megatron-unfused-loss: megatron with Megatron-Core's unfused vocab-parallel cross-entropy (no
      --cross-entropy-loss-fusion): .float() cast (2 + 4 bytes per logit), max (4), subtract (4 + 4), exp in place (8),
      sum (4), divide in place (8) = 38 bytes forward; the gradient's multiply in place (8) and the cast back to bf16
      (4 + 2) = 14 backward (megatron/core/tensor_parallel/cross_entropy.py at core_r0.8.0 L27-113; the same kernels
      at 285068c8, megatron/model/gpt_model.py L38 calling it on output.float()).
    megatron-2023-sync: Megatron-LM of early 2023 (commit 285068c8): the unfused attention core (flash attention
      off by default), the data-parallel gradient reduction after the whole backward and the parameter all_gather
      after the optimizer step (neither overlapped), pipeline sends that block the sender, the unfused loss.
    """

    name: str
    fused_qkv: bool = True
    param_bytes: float = 2.0
    grad_bytes: float = 4.0
    state_bytes: float = 12.0
    persistent_grads: bool = True
    weight_copy_bytes: float = 0.0    # per parameter, held from the forward to the backward (autocast's bf16 copies)
    tp_vocab_split: bool = True       # embedding, LM head and logits split over tp (Megatron); False: replicated (memory only)
    ddp_bucket_bytes: float = 0.0     # per parameter, torch DDP's reducer buckets (gradient_as_bucket_view off): dp > 1, no ZeRO
    residual_bytes: int = 2           # element size of the residual stream
    adam_bytes: float = 30.0          # optimizer-step traffic per updated parameter (read + write)
    cast_bytes: float = 0.0           # per parameter per micro-batch: weight casts and gradient up-casts
    logit_bytes: float = 6.0          # bytes per logit at the loss's peak (Megatron: bf16 logits + fp32 copy; eager: 12, below)
    eager: bool = False               # unfused elementwise kernels and the extra tensors eager autograd saves
    host_kernel_s: float = 0.0        # host time to issue one kernel (eager; measured, llm/host.py); 0 = never host-bound
    host_step_s: float = 0.0          # fixed host time per step (optimizer, loss, Python)
    bucket_params: int = 0            # gradient bucket (parameters); 0 = Megatron's max(40M, 1M dp)
    attention: str = "flash"          # 'flash' (fused, no s x s tensor) | 'unfused' (scores materialized, pre-2023 Megatron)
    grad_reduce_after_backward: bool = False   # DP gradient reduction after the whole backward, parameter gather after the
                                               # optimizer (Megatron-LM before --overlap-grad-reduce); False: overlapped
    blocking_p2p: bool = False        # pipeline sends block the sender's compute stream (batch_isend_irecv + wait + synchronize)
    loss_fwd_bytes: float = 6.0       # cross-entropy bytes per logit, forward (fused: bf16 logits read, fp32 softmax written)
    loss_bwd_bytes: float = 12.0      # and backward (eager frameworks: their own kernel list, ops.head_forward)
    grad_accumulate_bytes: float = 10.0   # per weight element per micro-batch: the weight gradient added into the fp32
                                          # main_grad (bf16 read, fp32 read + write; ops.grad_accumulate); 0 = none
    # memory only (llm/memory.py; the step's DP traffic stays at param_bytes / grad_bytes, so step times do not depend on them)
    grad_buffer_bytes: float = 4.0    # the gradient buffer's element: Megatron's fp32 main_grad for bf16 (2 with grad_reduce_in_fp32 off)
    transformer_engine: bool = True   # TE layers: under fp8 the GEMM inputs are saved in 1 byte and each linear weight's fp8 copy and
                                      # transpose are cached across micro-batches (llm/memory.py)
    fp8_params: bool = False          # under fp8, linear weights stored in fp8 (Megatron --fp8-param-gather, NeMo fp8_params): 1 byte
                                      # + its cached transpose = the 2 of bf16, and no separate fp8 weight cache
    master_remainders: bool = False   # Apex DistributedFusedAdam's store_param_remainders: the fp32 master weight kept as the bf16
                                      # weight + a 16-bit remainder (state_bytes - 2); NeMo keeps a full fp32 master with fp8_params


MEGATRON = FrameworkSpec("megatron")
TORCH_AMP = FrameworkSpec("torch-amp", fused_qkv=False, param_bytes=4.0, grad_bytes=4.0, state_bytes=8.0, persistent_grads=False,
                          weight_copy_bytes=2.0, residual_bytes=4, adam_bytes=28.0, cast_bytes=12.0, logit_bytes=12.0, eager=True,
                          grad_accumulate_bytes=0.0,   # autocast's gradient up-casts are in cast_bytes
                          bucket_params=25 * 2**20 // 4, transformer_engine=False)   # DDP's bucket_cap_mb = 25 of fp32 gradients
# Megatron-LM before flash attention (2021-2022: Narayanan et al. 2021, Korthikanti et al. 2022): the attention core as
# two batched GEMMs over the materialized s x s scores, a fused scale-mask-softmax and attention dropout.
MEGATRON_UNFUSED = FrameworkSpec("megatron-unfused-attention", attention="unfused", transformer_engine=False)
# Megatron-LM at commit 285068c8 (2023-01-11, MegaScale's baseline): megatron/training.py train_step reduces the gradients
# after forward_backward_func returns (L415-425) and gathers the distributed optimizer's parameters after optimizer.step
# (L440); megatron/p2p_communication.py waits on every batch_isend_irecv request and calls torch.cuda.synchronize()
# (L227-231); --use-flash-attn is off unless given (megatron/arguments.py L655), so the attention core is unfused.
UNFUSED_LOSS = {"loss_fwd_bytes": 38.0, "loss_bwd_bytes": 14.0}    # Megatron-Core's vocab-parallel cross-entropy, unfused
MEGATRON_UNFUSED_LOSS = FrameworkSpec("megatron-unfused-loss", **UNFUSED_LOSS)
MEGATRON_2023_SYNC = FrameworkSpec("megatron-2023-sync", attention="unfused", grad_reduce_after_backward=True, blocking_p2p=True,
                                   transformer_engine=False, **UNFUSED_LOSS)
FRAMEWORKS = {f.name: f for f in (MEGATRON, TORCH_AMP, MEGATRON_UNFUSED, MEGATRON_UNFUSED_LOSS, MEGATRON_2023_SYNC)}


def check_framework(par: ParallelSpec, framework: FrameworkSpec) -> None:
    """A parallel setting the framework's code does not have is refused, not ignored."""
    if par.overlap_param_gather and framework.grad_reduce_after_backward:
        raise LlmConfigError("parallel.overlap_param_gather", f"framework {framework.name} gathers the parameters after the "
                             "optimizer step (its code has no --overlap-param-gather)", hint="set it false or null")
