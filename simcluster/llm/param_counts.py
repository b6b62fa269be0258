"""Parameters held by one GPU (counts, not bytes): a layer's and a pipeline stage's, split into the dense weights
(sharded over dp for ZeRO) and the expert weights (over dp / ep). Per GPU: a layer's dense weights / t, its expert
weights / (t ep); a stage adds the embedding / t on the first stage and the LM head / t on the last (memory.py turns
them into bytes; work.py prices their collectives)."""

from __future__ import annotations

from dataclasses import dataclass

from simcluster.llm.spec import ParallelSpec, TransformerSpec


@dataclass(frozen=True)
class StageParams:
    dense: float      # parameters sharded over dp for ZeRO
    expert: float     # expert parameters (sharded over dp / ep)

    @property
    def total(self) -> float:
        return self.dense + self.expert


def stage_layers(model: TransformerSpec, par: ParallelSpec, stage: int) -> int:
    split = par.layer_split(model.layers)
    return sum(split[c * par.pp + stage] for c in range(par.virtual_stages))


def layer_params(model: TransformerSpec, par: ParallelSpec) -> StageParams:
    """One layer's parameters on one GPU: dense weights / t, expert weights / (t ep)."""
    h, t = model.hidden, par.tp
    dense = model.attention_params() / t + 2 * h
    if model.moe:
        shared = model.mlp_matrices * h * model.shared_expert_ffn / t
        return StageParams(dense + shared + h * model.experts, model.experts * model.mlp_matrices * h * model.expert_ffn / (par.etp * par.ep))
    return StageParams(dense + model.mlp_params() / t, 0.0)


def layer_linear_params(model: TransformerSpec, par: ParallelSpec) -> float:
    """One layer's weights in Transformer Engine linear layers on one GPU (QKV, out-projection, MLP or expert matrices;
    not the norms, the router, the embedding or the LM head)."""
    t = par.tp
    if model.moe:
        shared = model.mlp_matrices * model.hidden * model.shared_expert_ffn
        return (model.attention_params() + shared) / t + model.experts * model.mlp_matrices * model.hidden * model.expert_ffn / (par.etp * par.ep)
    return (model.attention_params() + model.mlp_params()) / t


def chunk_dense_layers(model: TransformerSpec, par: ParallelSpec, vs: int) -> int:
    """How many of a MoE model's first dense_layers (dense MLP) lie in virtual stage vs (model order)."""
    split = par.layer_split(model.layers)
    start = sum(split[:vs])
    return max(0, min(model.dense_layers, start + split[vs]) - start)


def stage_dense_layers(model: TransformerSpec, par: ParallelSpec, stage: int) -> int:
    """The dense layers in all of this stage's chunks."""
    return sum(chunk_dense_layers(model, par, c * par.pp + stage) for c in range(par.virtual_stages))


def stage_params(model: TransformerSpec, par: ParallelSpec, stage: int, vocab_split: int | None = None) -> StageParams:
    """Parameters held by one GPU of pipeline stage `stage` (all its virtual chunks, the layers of par.layer_split); the
    embedding and LM head are split over vocab_split ranks (the tensor-parallel ranks unless the framework replicates
    them: FrameworkSpec.tp_vocab_split). A MoE model's dense first layers hold the dense MLP. The last stage also holds
    the MTP modules, each a (MoE) layer, two norms and a 2h x h projection / t, and (pp > 1) its own copy of the
    embedding (Megatron builds one on every stage that runs MTP)."""
    vs = par.tp if vocab_split is None else vocab_split
    first, last = stage == 0, stage == par.pp - 1
    layers = stage_layers(model, par, stage)
    dense_layers = stage_dense_layers(model, par, stage) if model.dense_layers else 0
    one = layer_params(model, par)
    dense = (layers - dense_layers) * one.dense + (dense_layers * layer_params(model.dense_layer(), par).dense if dense_layers else 0.0)
    expert_layers = layers - dense_layers
    if first:
        dense += model.embedding_params() / vs
    if last:   # the LM head and the final norm; the MTP modules
        dense += (0 if model.tied_embeddings and first else model.vocab * model.hidden / vs) + model.hidden
        if model.mtp_layers:
            dense += model.mtp_layers * (one.dense + 2 * model.hidden + 2 * model.hidden * model.hidden / par.tp)
            dense += 0 if first else model.embedding_params() / vs
            expert_layers += model.mtp_layers
    return StageParams(dense, expert_layers * one.expert)
