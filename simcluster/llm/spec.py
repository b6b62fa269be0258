"""What is trained and how it is split: TransformerSpec, ParallelSpec, BatchSpec and their checks.

A Llama-style decoder (or GPT-style with mlp: gelu): RMSNorm, grouped-query attention with rotary embeddings, SwiGLU MLP (or a
mixture of SwiGLU experts with top-k routing), untied or tied input embedding and LM head.
Parameter count per layer (h hidden, d head size = h / heads unless attn_head_dim, g kv heads, f ffn):
  attention  h * (heads * d) + 2 * h * (g * d) + (heads * d) * h      (Q, K, V, O; no biases; QK-norm: + 2 d)
  MLA        h r_q + r_q + r_q a (d_nope + d_rope) + h (r_kv + d_rope) + r_kv + r_kv a (d_nope + d_v) + a d_v h
  MLP        3 * h * f  (SwiGLU: gate, up, down; GPT's GeLU MLP: 2 * h * f, up and down)
  MoE        E * 3 * h * f_e + 3 * h * f_s + h * E                    (routed experts, shared expert(s), router)
  norms      2 * h
plus the embedding V * h, the LM head V * h (unless tied) and the final norm h; the first dense_layers layers have the
dense MLP; each MTP module is one more layer, two norms and a 2h x h projection.
Every check raises LlmConfigError whose `key` names the offending setting (e.g. "parallel.tp").
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from simcluster.errors import SimclusterError
from simcluster.job_documents import MODEL_MAX  # the declaration's bounds, kept by every spec however built

RECOMPUTE = ("none", "selective", "full", "op")   # op: torchtitan's op-level selective checkpointing (framework torch; llm/eager_ac.py)
# Megatron-Core's recompute_modules (selective granularity; default core_attn). Output-discarding: layernorm, moe_act,
# mla_up_proj (the module's output is freed after its consumer used it, recomputed in the backward); the others keep
# only their input (normal checkpointing) and run their forward again, communication included.
RECOMPUTE_MODULES = ("core_attn", "layernorm", "mla_up_proj", "mlp", "moe", "moe_act", "shared_experts")
MLPS = ("swiglu", "gelu")
# how a MoE layer's tokens reach their experts' ranks: alltoall (Megatron's alltoall dispatcher: each of a token's top_k
# copies is its own message) or deepep (DeepEP's / HybridEP's node-deduplicated dispatch, Megatron's `flex` dispatcher:
# one copy per remote node over the NIC, then NVLink inside that node; llm/comm.py)
MOE_DISPATCHERS = ("alltoall", "deepep")
# a published file's MoE switches (reference/llm_specs.spec_of): the overlaps default off; capacity padding read only where stated
MOE_SWITCHES, MOE_STATED = ("moe_shared_expert_overlap", "moe_a2a_overlap", "moe_pad_to_capacity"), ("moe_pad_to_capacity",)
PP_SCHEDULES = ("1f1b", "gpipe")   # pipeline schedules: (interleaved) 1F1B, or GPipe (all forwards, then all backwards)
PRECISIONS = ("bf16", "fp8")
FP8_SCALINGS = ("delayed", "current")
ZERO_STAGES = (0, 1, 2, 3)
GRAD_SYNCS = ("micro_batch", "step")   # parallel.grad_sync: DP gradients reduced after every micro-batch, or once a step (llm/grad_sync.py)


class LlmConfigError(SimclusterError):
    """A model, parallelism or batch setting that cannot run; `key` is the dotted setting to blame."""

    def __init__(self, key: str, message: str, hint: str | None = None):
        self.key = key
        super().__init__(f"{key}: {message}", hint=hint)


# bounds far beyond any model trained (Llama 3 405B: 126 layers, hidden 16,384, vocab 128,256) that keep per-layer
# lists, bucket lists and the pipeline DES small enough to build


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
    attn_head_dim: int = 0    # attention head size when heads x head size != hidden (Qwen3: 128); 0 = hidden / heads
    qk_norm: bool = False     # RMSNorm on every query and key head (Qwen3), memory-bound
    rotary: bool = True       # rotary position embeddings on q and k; False: learned positions (MPT, GPT-2), no rotary ops
    q_lora_rank: int = 0      # multi-head latent attention (DeepSeek-V2/V3, on when kv_lora_rank > 0): query down-projection rank
    kv_lora_rank: int = 0     # the compressed K/V latent's width
    qk_rope_dim: int = 0      # the rotary part of each query / key head (one shared rotary key per token)
    v_head_dim: int = 0       # value head size under MLA (the no-rope query/key head size is attn_head_dim)
    shared_expert_ffn: int = 0  # width of the always-on shared expert(s) beside the routed ones (DeepSeek-V3: 1 x 2048)
    dense_layers: int = 0     # the first k layers run a dense MLP of width `ffn` instead of the experts (DeepSeek-V3: 3)
    mtp_layers: int = 0       # multi-token prediction depth: each adds one layer, a 2h -> h projection, two norms, a loss
    expert_groups: int = 0    # group-limited routing (Megatron's moe_router_num_groups; DeepSeek-V3: 8): experts in equal groups,
    group_topk: int = 0       # a token picks its top_k experts inside its group_topk best groups (DeepSeek-V3: 4); 0 = no limit
    window: int = 0           # sliding-window attention: a query attends to its `window` latest keys (GPT-OSS: 128); 0 = full causal
    full_attention_every: int = 0   # with window: every N-th layer attends fully (Megatron's window_attn_skip_freq; GPT-OSS 2,
                                    # Gemma 3 6); 0 = every layer windowed

    @property
    def mla(self) -> bool:
        return self.kv_lora_rank > 0

    def __post_init__(self):
        if self.mlp not in MLPS:
            raise LlmConfigError("model.mlp", f"expected one of {', '.join(MLPS)}, got {self.mlp!r}")
        for name in ("layers", "hidden", "heads", "kv_heads", "vocab", "seq"):
            if not 1 <= getattr(self, name) <= MODEL_MAX[name]:
                raise LlmConfigError(f"model.{name}", f"expected an integer from 1 to {MODEL_MAX[name]:,}, got {getattr(self, name)}")
        if self.hidden % self.heads and not self.attn_head_dim:
            raise LlmConfigError("model.heads", f"{self.heads} heads do not divide hidden {self.hidden}", hint="set attn_head_dim")
        for name in ("attn_head_dim", "q_lora_rank", "kv_lora_rank", "qk_rope_dim", "v_head_dim", "shared_expert_ffn", "dense_layers",
                     "mtp_layers", "expert_groups", "group_topk", "window", "full_attention_every"):
            if getattr(self, name) < 0:
                raise LlmConfigError(f"model.{name}", f"expected an integer >= 0, got {getattr(self, name)}")
        if self.mla and not (self.qk_rope_dim and self.v_head_dim and self.attn_head_dim):
            raise LlmConfigError("model.kv_lora_rank", "multi-head latent attention needs qk_rope_dim, v_head_dim and attn_head_dim (the no-rope head size)")
        if self.dense_layers >= self.layers or (self.dense_layers and not self.experts):
            raise LlmConfigError("model.dense_layers", f"expected 0 <= dense_layers < layers ({self.layers}) on a mixture of experts")
        if self.dense_layers and self.ffn < 1:
            raise LlmConfigError("model.ffn", "dense layers need ffn >= 1")
        if self.heads % self.kv_heads:
            raise LlmConfigError("model.kv_heads", f"{self.kv_heads} kv heads do not divide {self.heads} heads")
        if self.moe:
            if not 1 <= self.top_k <= self.experts:
                raise LlmConfigError("model.top_k", f"expected 1 <= top_k <= experts ({self.experts}), got {self.top_k}")
            if self.expert_ffn < 1:
                raise LlmConfigError("model.expert_ffn", "a mixture of experts needs expert_ffn >= 1")
        elif self.ffn < 1:
            raise LlmConfigError("model.ffn", f"expected an integer >= 1, got {self.ffn}")
        if self.expert_groups or self.group_topk:
            self._check_groups()
        if self.full_attention_every and not self.window:
            raise LlmConfigError("model.full_attention_every", "needs a sliding window (model.window)")

    def _check_groups(self) -> None:
        g, m = self.expert_groups, self.group_topk
        if not self.moe or g < 1 or self.experts % g:
            raise LlmConfigError("model.expert_groups", f"expected a number of groups dividing experts ({self.experts}), got {g}")
        if not 1 <= m <= g:
            raise LlmConfigError("model.group_topk", f"expected 1 <= group_topk <= expert_groups ({g}), got {m}")
        if self.top_k > m * self.experts // g:
            raise LlmConfigError("model.group_topk", f"top_k {self.top_k} experts do not fit in {m} groups of {self.experts // g}")

    @property
    def moe(self) -> bool:
        return self.experts > 0

    @property
    def window_share(self) -> float:
        """The share of layers whose attention is a sliding window shorter than the sequence."""
        if not self.window or self.window >= self.seq:
            return 0.0
        return 1.0 - 1.0 / self.full_attention_every if self.full_attention_every else 1.0

    @property
    def window_keys(self) -> float:
        """Mean keys a query of a windowed layer attends to: W - W (W - 1) / (2 s) (the first W - 1 queries see fewer)."""
        w = min(self.window, self.seq)
        return w - w * (w - 1) / (2 * self.seq)

    @property
    def head_dim(self) -> int:
        """Query / key head size (under MLA: the no-rope part plus the rotary part)."""
        return (self.attn_head_dim or self.hidden // self.heads) + self.qk_rope_dim

    @property
    def value_dim(self) -> int:
        return self.v_head_dim or self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim

    def attention_params(self) -> int:
        """Q, K, V, O (no biases); MLA: q down (h r_q), q norm, q up (r_q a d_qk), kv down (h (r_kv + d_rope)), kv norm,
        kv up (r_kv a (d_nope + d_v)), out (a d_v h); QK-norm: two head-size weights."""
        h, a = self.hidden, self.heads
        if self.mla:
            nope = self.attn_head_dim
            q = h * self.q_lora_rank + self.q_lora_rank + self.q_lora_rank * a * self.head_dim if self.q_lora_rank else h * a * self.head_dim
            kv = h * (self.kv_lora_rank + self.qk_rope_dim) + self.kv_lora_rank + self.kv_lora_rank * a * (nope + self.v_head_dim)
            return q + kv + a * self.v_head_dim * h
        return 2 * h * a * self.head_dim + 2 * h * self.kv_dim + (2 * self.head_dim if self.qk_norm else 0)

    @property
    def mlp_matrices(self) -> int:
        return 3 if self.mlp == "swiglu" else 2

    def mlp_params(self) -> int:
        """One MoE layer's MLP: routed experts, shared expert(s) and router (plus its expert bias: DeepSeek-V3's
        aux-loss-free balancing keeps one per expert, counted here); a dense model's (or dense layer's) MLP."""
        if self.moe:
            shared = self.mlp_matrices * self.hidden * self.shared_expert_ffn
            return self.experts * self.mlp_matrices * self.hidden * self.expert_ffn + shared + self.hidden * self.experts
        return self.dense_mlp_params()

    def dense_mlp_params(self) -> int:
        return self.mlp_matrices * self.hidden * self.ffn

    def layer_params(self) -> int:
        """A (MoE) layer: attention, MLP, two norms."""
        return self.attention_params() + self.mlp_params() + 2 * self.hidden

    def dense_layer_params(self) -> int:
        return self.attention_params() + self.dense_mlp_params() + 2 * self.hidden

    @property
    def moe_layers(self) -> int:
        return self.layers - self.dense_layers if self.moe else 0

    def embedding_params(self) -> int:
        return self.vocab * self.hidden

    def mtp_params(self) -> int:
        """Each MTP module: a layer, two RMSNorms and the 2h -> h projection (embedding and head shared with the model)."""
        return self.mtp_layers * (self.layer_params() + 2 * self.hidden + 2 * self.hidden * self.hidden)

    def parameter_count(self, with_mtp: bool = True) -> int:
        head = 0 if self.tied_embeddings else self.vocab * self.hidden
        moe = self.moe_layers if self.moe else self.layers
        layers = moe * self.layer_params() + (self.layers - moe) * self.dense_layer_params()
        return layers + self.embedding_params() + head + self.hidden + (self.mtp_params() if with_mtp else 0)

    def dense_layer(self) -> TransformerSpec:
        """One of a MoE model's first dense_layers layers as a model of its own (the MLP of width ffn, no experts)."""
        return replace(self, experts=0, top_k=0, expert_ffn=0, shared_expert_ffn=0, dense_layers=0, mtp_layers=0, expert_groups=0, group_topk=0)

    def active_parameter_count(self, with_mtp: bool = True) -> int:
        """Parameters one token passes through (a MoE token sees top_k experts, not all)."""
        if not self.moe:
            return self.parameter_count(with_mtp)
        inactive = (self.experts - self.top_k) * self.mlp_matrices * self.hidden * self.expert_ffn
        return self.parameter_count(with_mtp) - (self.moe_layers + (self.mtp_layers if with_mtp else 0)) * inactive


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
    recompute_modules: tuple[str, ...] = ()   # with recompute 'selective': Megatron's module list (empty: core_attn)
    tp_comm_overlap: bool = False       # Megatron --tp-comm-overlap: TE userbuffers pipeline TP collectives with GEMMs (llm/overlap.py)
    overlap_param_gather: bool = False  # Megatron --overlap-param-gather: ZeRO-1/2 parameter all_gather overlapped with the forward
    expert_tp: int = 0            # Megatron --expert-tensor-parallel-size: 0 = tp (its default) or 1 (experts whole, spread over tp x cp x dp)
    pipeline_layout: tuple[int, ...] = ()   # layers of each virtual stage in model order (pp x virtual_stages entries; Megatron's
                                  # num_layers_in_first / last_pipeline_stage, pipeline_model_parallel_layout); () = spec.layer_split
    moe_dispatcher: str = "alltoall"        # MOE_DISPATCHERS
    moe_shared_expert_overlap: bool = False  # Megatron moe_shared_expert_overlap: the shared expert beside the dispatch / combine
    moe_a2a_overlap: bool = False  # Megatron overlap_moe_expert_parallel_comm: one micro-batch's EP calls beside another's compute
    moe_pad_to_capacity: bool = False  # Megatron moe_pad_expert_input_to_capacity (drop and pad): no dispatcher sync (llm/moe_sync)
    pp_schedule: str = "1f1b"     # PP_SCHEDULES; gpipe: torch.distributed.pipelining's ScheduleGPipe (framework torch only)
    recompute_every: int = 1      # with recompute 'full': every N-th block checkpointed (torchtitan's layer AC; framework torch)
    dp_shard: int = 0             # HSDP (zero 3): the dp ranks split into shard groups of dp_shard consecutive ranks, replicated
                                  # across dp / dp_shard groups (FSDP1 HYBRID_SHARD, FSDP2's 2-D mesh; llm/hsdp.py); 0 = dp
    grad_sync: str = ""           # GRAD_SYNCS, or '' = the default (zero 2 and 3, torch DDP at pp 1: every micro-batch; else once a step): llm/grad_sync.py

    def __post_init__(self):
        for name in ("tp", "pp", "dp", "cp", "ep", "virtual_stages"):
            if getattr(self, name) < 1:
                raise LlmConfigError(f"parallel.{name}", f"expected an integer >= 1, got {getattr(self, name)}")
        if self.zero not in ZERO_STAGES:
            raise LlmConfigError("parallel.zero", f"expected one of 0, 1, 2, 3, got {self.zero}")
        if self.recompute not in RECOMPUTE:
            raise LlmConfigError("parallel.recompute", f"expected one of {', '.join(RECOMPUTE)}, got {self.recompute!r}")
        bad = [m for m in self.recompute_modules if m not in RECOMPUTE_MODULES]
        if bad:
            raise LlmConfigError("parallel.recompute_modules", f"expected modules among {', '.join(RECOMPUTE_MODULES)}, got {bad[0]!r}")
        if self.recompute_modules and self.recompute != "selective":
            raise LlmConfigError("parallel.recompute_modules", f"a module list needs recompute: selective, got recompute: {self.recompute}",
                                 hint="set recompute: selective (Megatron's --recompute-granularity selective)")
        if self.recompute_every < 1 or (self.recompute_every > 1 and self.recompute != "full"):
            raise LlmConfigError("parallel.recompute_every", f"expected an integer >= 1 with recompute: full, got "
                                 f"{self.recompute_every} with recompute: {self.recompute}")
        if self.sequence_parallel and self.tp == 1:
            raise LlmConfigError("parallel.sequence_parallel", "sequence parallelism needs tp > 1")
        if self.tp_comm_overlap and not self.sequence_parallel:
            raise LlmConfigError("parallel.tp_comm_overlap", "TP communication overlap needs sequence parallelism (as Megatron asserts)",
                                 hint="set sequence_parallel: true")
        if self.expert_tp not in (0, 1, self.tp):
            raise LlmConfigError("parallel.expert_tp", f"expected 1 or tp ({self.tp}), got {self.expert_tp} (other expert TP sizes are not modelled)")
        if self.overlap_param_gather and self.zero not in (1, 2):
            raise LlmConfigError("parallel.overlap_param_gather", f"needs the distributed optimizer (zero 1 or 2), got zero {self.zero}")
        if self.virtual_stages > 1 and self.pp == 1:
            raise LlmConfigError("parallel.virtual_stages", "interleaved stages need pp > 1")
        if self.pipeline_layout and (len(self.pipeline_layout) != self.pp * self.virtual_stages or min(self.pipeline_layout) < 0):
            raise LlmConfigError("parallel.pipeline_layout", f"expected {self.pp * self.virtual_stages} layer counts >= 0 (pp x virtual_stages, "
                                 f"model order), got {list(self.pipeline_layout)}")
        if self.moe_dispatcher not in MOE_DISPATCHERS:
            raise LlmConfigError("parallel.moe_dispatcher", f"expected one of {', '.join(MOE_DISPATCHERS)}, got {self.moe_dispatcher!r}")
        if self.moe_shared_expert_overlap and self.moe_dispatcher != "alltoall":
            raise LlmConfigError("parallel.moe_shared_expert_overlap", "needs moe_dispatcher: alltoall (Megatron does not run it with DeepEP)")
        if self.moe_pad_to_capacity and self.moe_dispatcher != "alltoall":   # d98e8a64 transformer_config.py L1754-1761 refuses DeepEP
            raise LlmConfigError("parallel.moe_pad_to_capacity", "needs moe_dispatcher: alltoall (Megatron-Core refuses padding with DeepEP)")
        if self.pp_schedule not in PP_SCHEDULES:
            raise LlmConfigError("parallel.pp_schedule", f"expected one of {', '.join(PP_SCHEDULES)}, got {self.pp_schedule!r}")
        if self.pp_schedule == "gpipe" and self.virtual_stages > 1:
            raise LlmConfigError("parallel.pp_schedule", "GPipe runs one model chunk per stage, got virtual_stages "
                                 f"{self.virtual_stages}", hint="pp_schedule: 1f1b (interleaved) or virtual_stages: 1")
        if self.zero == 3 and self.pp > 1:
            raise LlmConfigError("parallel.zero", "ZeRO-3 / FSDP with pipeline parallelism is not modelled",
                                 hint="use zero 0, 1 or 2 with pp > 1")
        if self.dp_shard:
            self._check_shard()
        if self.grad_sync and self.grad_sync not in GRAD_SYNCS:
            raise LlmConfigError("parallel.grad_sync", f"expected one of {', '.join(GRAD_SYNCS)}, got {self.grad_sync!r}")

    def _check_shard(self) -> None:
        s = self.dp_shard
        if s < 0 or s > self.dp or self.dp % s:
            raise LlmConfigError("parallel.dp_shard", f"expected a divisor of dp ({self.dp}), got {s}",
                                 hint="the GPUs of a node (HSDP: shard inside a node), or dp (plain FULL_SHARD)")
        if s < self.dp and self.zero != 3:
            raise LlmConfigError("parallel.dp_shard", f"HSDP shards parameters, gradients and optimizer state: it needs zero 3, "
                                 f"got zero {self.zero}", hint="zero: 3, or remove dp_shard")
        if s < self.dp and (self.cp > 1 or self.ep > 1):
            key = "parallel.cp" if self.cp > 1 else "parallel.ep"
            raise LlmConfigError(key, "HSDP (dp_shard < dp) with context or expert parallelism is not modelled",
                                 hint="dp_shard: dp (plain FULL_SHARD), or cp: 1 and ep: 1")

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp * self.cp

    @property
    def shard(self) -> int:
        """Data-parallel ranks that shard the dense weights' parameters, gradients and optimizer state between them:
        dp_shard under HSDP, dp otherwise (ZeRO-1/2/3 over the whole data-parallel group)."""
        return self.dp_shard or self.dp

    def layer_split(self, layers: int) -> tuple[int, ...]:
        """Layers of each virtual stage (k = chunk x pp + stage, model order): the pipeline_layout, else spec.layer_split."""
        return self.pipeline_layout or layer_split(layers, self.pp, self.virtual_stages)

    def recomputes(self, module: str) -> bool:
        """Whether the backward recomputes this module of the layer (RECOMPUTE_MODULES): every one under full
        recompute, the listed ones (default core_attn) under selective, none otherwise."""
        if self.recompute == "full":
            return True
        return self.recompute == "selective" and module in (self.recompute_modules or ("core_attn",))

    def recomputes_mlp_block(self, model: TransformerSpec) -> bool:
        """Whether the layer's MLP block (the MoE block of a MoE layer) is checkpointed: its forward, TP and EP calls
        included, runs again in the backward."""
        return self.recomputes("moe" if model.moe else "mlp")

    @property
    def etp(self) -> int:
        """Tensor parallelism of the experts (1 or tp)."""
        return self.expert_tp or self.tp

    @property
    def ep_span(self) -> int:
        """Ranks of one pipeline stage the experts spread over: dp x cp (expert TP = tp) or dp x cp x tp (expert TP = 1).
        Megatron's expert grid (etp x ep x edp x pp) has no context-parallel dimension: the CP ranks, which hold the
        same weights, are folded into ep and the expert data-parallel group."""
        return self.dp * self.cp * (self.tp // self.etp)

    @property
    def expert_dp(self) -> int:
        return max(1, self.ep_span // self.ep)


@dataclass(frozen=True)
class BatchSpec:
    global_batch: int     # sequences per optimizer step
    micro_batch: int      # sequences per micro-batch per model replica
    precision: str = "bf16"
    fp8_scaling: str = "delayed"   # FP8's scaling recipe: Transformer Engine's "delayed" (amax history, all-reduced:
                                   # llm/scaleout.amax_syncs) or "current" (each tensor's own amax as it is cast)

    def __post_init__(self):
        for name in ("global_batch", "micro_batch"):
            if getattr(self, name) < 1:
                raise LlmConfigError(name, f"expected an integer >= 1, got {getattr(self, name)}")
        if self.precision not in PRECISIONS:
            raise LlmConfigError("precision", f"expected one of {', '.join(PRECISIONS)}, got {self.precision!r}")
        if self.fp8_scaling not in FP8_SCALINGS:
            raise LlmConfigError("fp8_scaling", f"expected one of {', '.join(FP8_SCALINGS)}, got {self.fp8_scaling!r}")

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
