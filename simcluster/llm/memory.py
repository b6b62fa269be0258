"""Per-GPU memory of a training step: parameters, gradients, optimizer state, activations, logits, overhead.

Parameters on a stage's GPU (P): its layers' dense weights / t, expert weights / (t ep), plus the embedding
/ t on the first stage and the LM head / t on the last. Mixed-precision Adam (Megatron's defaults):
  parameters  P * 2 (bf16)                    / dp with ZeRO-3
  gradients   P * 4 (fp32 main_grad buffers)  / dp with ZeRO-2 and 3
  optimizer   P * 12 (fp32 master, m and v)   / dp with ZeRO-1, 2 and 3
(expert weights shard over dp / ep instead of dp). 18 bytes per parameter unsharded.

Activations stashed per layer per micro-batch (bytes), after Korthikanti et al. 2022 ("Reducing Activation
Recomputation in Large Transformer Models", eq. 1-2: s b h (34 + 5 a s / h) for GPT with dropout and
GeLU 4h MLP), adapted to a Llama layer (s' = s / cp, kv = g d, f = ffn, all bf16 unless stated):
  RMSNorm inputs 2 x 2 s'bh; QKV input 2 s'bh; Q 2 s'bh, K and V 2 x 2 s'b kv; flash attention output
  2 s'bh and its fp32 logsumexp 4 a s'b (no s^2 term: flash recomputes the scores); MLP input 2 s'bh;
  SwiGLU gate, up and product 3 x 2 s'bf  ->  s'b (12 h + 4 kv + 6 f) + 4 a s'b
  with TP: the sharded tensors (Q, K, V, O, lse, gate, up, product) / t; norm, QKV and MLP inputs (8 s'bh)
  / t only with sequence parallelism (K, V stay whole when t > g: kv heads are replicated)
  MoE: the MLP term becomes 2 s'bh + k (4 s'bh + 6 s'b f_e / t) (dispatched and combined tokens per expert pick)
  selective recompute: the attention core is recomputed; with flash attention its only stash beyond the
    tensors above is the logsumexp, so it saves 4 a s'b / t
  full recompute: only each layer's input, 2 s'bh (/ t with sequence parallelism)
Micro-batches in flight at the first stage: 1F1B holds pp of them (pp - 1 warm-up forwards + one);
interleaved (v chunks) holds 2 (pp - 1) + (v - 1) pp + 1 chunk-micro-batches of layers / (pp v) layers each
(Megatron's warm-up count), never more than m v. The last stage also holds the logits of one micro-batch,
s'b V / t in bf16 plus their fp32 copy for the loss (6 bytes each).
Framework overhead (CUDA context, cuBLAS workspaces, NCCL buffers): a fixed OVERHEAD_BYTES, outside what
torch.cuda.max_memory_allocated reports; `fits` compares allocated + overhead with the card's capacity.
"""

from __future__ import annotations

from dataclasses import dataclass

from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec, layer_split

GiB = 2.0**30
OVERHEAD_BYTES = 1.5 * GiB   # CUDA context ~0.5 GiB + cuBLAS/NCCL workspaces + allocator slack (an estimate, not measured)


@dataclass(frozen=True)
class OptimizerBytes:
    param: float = 2.0       # bytes per parameter for the weights the forward reads
    grad: float = 4.0        # gradient buffers
    state: float = 12.0      # optimizer state (fp32 master + two Adam moments)


MEGATRON_ADAM = OptimizerBytes()


@dataclass(frozen=True)
class StageParams:
    dense: float      # parameters sharded over dp for ZeRO
    expert: float     # expert parameters (sharded over dp / ep)

    @property
    def total(self) -> float:
        return self.dense + self.expert


def stage_layers(model: TransformerSpec, par: ParallelSpec, stage: int) -> int:
    split = layer_split(model.layers, par.pp, par.virtual_stages)
    return sum(split[c * par.pp + stage] for c in range(par.virtual_stages))


def stage_params(model: TransformerSpec, par: ParallelSpec, first: bool, last: bool) -> StageParams:
    """Parameters held by one GPU of a pipeline stage (all its virtual chunks)."""
    layers = stage_layers(model, par, 0 if first else par.pp - 1)
    h, t = model.hidden, par.tp
    dense_layer = model.attention_params() / t + 2 * h
    expert_layer = 0.0
    if model.moe:
        expert_layer = model.experts * 3 * h * model.expert_ffn / (t * par.ep)
        dense_layer += h * model.experts
    else:
        dense_layer += model.mlp_params() / t
    dense = layers * dense_layer
    if first:
        dense += model.embedding_params() / t
    if last:
        dense += (0 if model.tied_embeddings and first else model.vocab * h / t) + h
    return StageParams(dense, layers * expert_layer)


def layer_activation_bytes(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec) -> float:
    s, b, h, t = model.seq / par.cp, batch.micro_batch, model.hidden, par.tp
    sp = t if par.sequence_parallel else 1
    kv = max(1, model.kv_heads // t) * model.head_dim   # per-GPU K/V width
    if par.recompute == "full":
        return 2 * s * b * h / sp
    lse = 4 * model.heads / t * s * b
    attn = 4 * s * b * h / sp + s * b * (4 * h / t + 4 * kv) + lse   # norm1 in, qkv in | Q, O, K, V | lse
    if model.moe:
        mlp = 2 * s * b * h / sp + 2 * s * b * h / sp + model.top_k * (4 * s * b * h / sp + 6 * s * b * model.expert_ffn / t)
    else:
        mlp = 2 * s * b * h / sp + 2 * s * b * h / sp + 6 * s * b * model.ffn / t   # norm2 in, mlp in, gate/up/product
    if par.recompute == "selective":
        attn -= lse
    return attn + mlp


def in_flight(par: ParallelSpec, micro_batches: int) -> tuple[int, float]:
    """(chunk-micro-batches stashed at the first stage, layers per chunk fraction of the stage)."""
    v = par.virtual_stages
    if par.pp == 1:
        return 1, 1.0
    if v == 1:
        return min(par.pp, micro_batches), 1.0
    warm = 2 * (par.pp - 1) + (v - 1) * par.pp
    return min(micro_batches * v, warm + 1), 1.0 / v


@dataclass(frozen=True)
class MemoryBreakdown:
    parameters: float
    gradients: float
    optimizer: float
    activations: float
    logits: float
    overhead: float
    capacity: float
    stage: str

    @property
    def allocated(self) -> float:
        """What torch.cuda.max_memory_allocated would report (no context, no workspaces)."""
        return self.parameters + self.gradients + self.optimizer + self.activations + self.logits

    @property
    def total(self) -> float:
        return self.allocated + self.overhead

    @property
    def fits(self) -> bool:
        return self.total <= self.capacity

    def to_gib(self) -> dict:
        out = {k: getattr(self, k) / GiB for k in ("parameters", "gradients", "optimizer", "activations", "logits", "overhead")}
        return {**out, "allocated": self.allocated / GiB, "total": self.total / GiB, "capacity": self.capacity / GiB,
                "stage": self.stage}


def _stage_memory(model, par, batch, capacity, first, last, opt: OptimizerBytes, stage: str) -> MemoryBreakdown:
    p = stage_params(model, par, first, last)
    dp, edp = par.dp, max(1, par.dp // par.ep)
    shard = lambda n, on: n / dp if on else n  # noqa: E731
    eshard = lambda n, on: n / edp if on else n  # noqa: E731
    z = par.zero
    params = opt.param * (shard(p.dense, z >= 3) + eshard(p.expert, z >= 3))
    grads = opt.grad * (shard(p.dense, z >= 2) + eshard(p.expert, z >= 2))
    state = opt.state * (shard(p.dense, z >= 1) + eshard(p.expert, z >= 1))
    m = batch.micro_batches(par.dp)
    chunks, frac = in_flight(par, m) if first else (1, 1.0 / par.virtual_stages)
    layers = stage_layers(model, par, 0 if first else par.pp - 1) * frac
    acts = chunks * layers * layer_activation_bytes(model, par, batch)
    if first:
        acts += chunks * 2 * model.seq / par.cp * batch.micro_batch * model.hidden / (par.tp if par.sequence_parallel else 1)
    logits = 6 * model.seq / par.cp * batch.micro_batch * model.vocab / par.tp if last else 0.0
    if last and not first:  # the last stage stashes one micro-batch per chunk in 1F1B steady state
        acts = layers * layer_activation_bytes(model, par, batch)
    return MemoryBreakdown(params, grads, state, acts, logits, OVERHEAD_BYTES, capacity, stage)


def memory_per_gpu(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, capacity_bytes: float,
                   opt: OptimizerBytes = MEGATRON_ADAM) -> MemoryBreakdown:
    """The fuller of the first and the last pipeline stage (the same GPU when pp = 1)."""
    if par.pp == 1:
        return _stage_memory(model, par, batch, capacity_bytes, True, True, opt, "only")
    first = _stage_memory(model, par, batch, capacity_bytes, True, False, opt, "first")
    last = _stage_memory(model, par, batch, capacity_bytes, False, True, opt, "last")
    return max(first, last, key=lambda mb: mb.total)
