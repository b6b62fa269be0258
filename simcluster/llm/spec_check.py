"""The cross-checks between a transformer, its parallel split, its batch and the machine's GPU count (llm/spec.py's
types): the first failure is an LlmConfigError naming the scenario key (the job reader turns it into file:line)."""

from __future__ import annotations

from simcluster.llm.spec import BatchSpec, LlmConfigError, ParallelSpec, TransformerSpec


def check(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, gpus: int | None = None) -> None:
    """Every cross-check between model, parallelism, batch and GPU count; the first failure raises."""
    t = par.tp
    if model.heads % t:
        raise LlmConfigError("parallel.tp", f"tp {t} does not divide heads ({model.heads})")
    if model.kv_heads % t and t % model.kv_heads:
        raise LlmConfigError("parallel.tp", f"tp {t} and kv_heads {model.kv_heads}: neither divides the other")
    ffn = model.expert_ffn if model.moe else model.ffn
    if model.shared_expert_ffn % t or (model.dense_layers and model.ffn % t):
        raise LlmConfigError("parallel.tp", f"tp {t} does not divide the shared expert or dense ffn")
    split = par.etp if model.moe else t
    if ffn % split:
        raise LlmConfigError("parallel.tp", f"tp {split} does not divide the {'expert_ffn' if model.moe else 'ffn'} ({ffn})")
    if model.vocab % t:
        raise LlmConfigError("parallel.tp", f"tp {t} does not divide vocab ({model.vocab})",
                             hint="pad the vocabulary to a multiple of tp")
    chunks = par.pp * par.virtual_stages
    if par.pipeline_layout and sum(par.pipeline_layout) != model.layers:
        raise LlmConfigError("parallel.pipeline_layout", f"the layout holds {sum(par.pipeline_layout)} layers, the model {model.layers}")
    if chunks > model.layers and not par.pipeline_layout:
        what = f"pp {par.pp} x virtual_stages {par.virtual_stages}" if par.virtual_stages > 1 else f"pp {par.pp}"
        raise LlmConfigError("parallel.pp", f"{what} = {chunks} model chunks for {model.layers} layers: a chunk needs >= 1 layer")
    if model.window_share and par.cp > 1:
        raise LlmConfigError("parallel.cp", "context parallelism with sliding-window attention is not modelled")
    if model.seq % (2 * par.cp) and par.cp > 1:
        raise LlmConfigError("parallel.cp", f"2 x cp ({2 * par.cp}) does not divide seq ({model.seq}) (load-balanced ring attention)")
    if (par.moe_shared_expert_overlap and not model.shared_expert_ffn) or (par.moe_a2a_overlap and par.ep == 1):
        key = "moe_shared_expert_overlap" if par.moe_shared_expert_overlap and not model.shared_expert_ffn else "moe_a2a_overlap"
        raise LlmConfigError(f"parallel.{key}", "needs " + ("a shared expert (model.shared_expert_ffn)" if key.endswith("expert_overlap")
                                                          else "expert parallelism (parallel.ep > 1)"))
    if par.moe_pad_to_capacity and (par.ep == 1 or not model.moe):
        raise LlmConfigError("parallel.moe_pad_to_capacity", "needs a mixture of experts with expert parallelism (model.experts, "
                             "parallel.ep > 1): the dispatcher sync it removes is the EP alltoall's")
    if par.ep > 1:
        if not model.moe:
            raise LlmConfigError("parallel.ep", "expert parallelism needs a mixture of experts (model.experts)")
        if model.experts % par.ep:
            raise LlmConfigError("parallel.ep", f"ep {par.ep} does not divide experts ({model.experts})")
        if par.ep_span % par.ep:
            over = "dp x cp" if par.etp == par.tp else "dp x cp x tp (expert_tp 1)"
            raise LlmConfigError("parallel.ep", f"ep {par.ep} does not divide {over} ({par.ep_span}) (experts are spread over those ranks)",
                                 hint=None if par.etp == 1 else "Megatron's expert_tp 1 spreads the experts over dp x cp x tp")
    if gpus is not None and par.gpus != gpus:
        raise LlmConfigError("parallel.dp", f"dp x tp x pp x cp = {par.dp} x {par.tp} x {par.pp} x {par.cp} = {par.gpus}, "
                             f"but the machine has {gpus} GPUs")
    per_step = batch.micro_batch * par.dp
    if batch.global_batch % per_step:
        raise LlmConfigError("global_batch", f"{batch.global_batch} is not a multiple of micro_batch x dp = {per_step}")
    m = batch.micro_batches(par.dp)
    if par.virtual_stages > 1 and m % par.pp:
        raise LlmConfigError("global_batch", f"interleaved 1F1B needs micro-batches ({m}) divisible by pp ({par.pp})")
