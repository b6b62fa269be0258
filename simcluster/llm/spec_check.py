"""The cross-checks between a transformer, its parallel split, its batch and the machine's GPU count (llm/spec.py's
types), and between those and the training code (llm/framework.FrameworkSpec: a setting its code does not have is
refused, not ignored): the first failure is an LlmConfigError naming the scenario key (the job reader turns it into
file:line)."""

from __future__ import annotations

from simcluster.llm import grad_sync
from simcluster.llm.framework import FrameworkSpec
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


def check_model_framework(model: TransformerSpec, framework: FrameworkSpec) -> None:
    """A model feature the framework's ops do not have is refused, not ignored: the eager decoder (the llm-step runner's)
    has no experts and no sliding window; Megatron's unfused attention core computes the full s x s scores."""
    if framework.eager and (model.window_share or model.moe):
        key, what = ("model.window", "sliding-window attention") if model.window_share else ("model.experts", "mixture of experts")
        raise LlmConfigError(key, f"framework {framework.name} (the llm-step runner's decoder) has no {what}",
                             hint="use a Megatron framework")
    if framework.torch_cp and model.mla:   # torch_cp is set only with cp > 1 (llm/eager.torch_framework)
        raise LlmConfigError("parallel.cp", "framework torch: context parallelism with multi-head latent attention is not "
                             "modelled (llm/torch_cp.py sizes K and V with one head size; MLA's v_head_dim differs)",
                             hint="cp: 1, or framework: megatron")
    if framework.attention == "unfused" and model.window_share:
        raise LlmConfigError("model.window", f"framework {framework.name} runs the unfused attention core over the full "
                             "s x s scores: a sliding window is not modelled there", hint="use framework megatron (flash attention)")


def check_framework(par: ParallelSpec, framework: FrameworkSpec, precision: str | None = None) -> None:
    """A parallel setting the framework's code does not have is refused, not ignored. Context parallelism in an eager
    framework other than torch's (torchtitan-fsdp2, composer-fsdp, fms-fsdp) would be priced by Megatron's ring model
    (ops._attention_core), not its code; llm/torch_cp.py prices torch's context_parallel with DDP over dp x cp, and
    torchtitan's FSDP2 shards over dp x cp (its gathers and reduce-scatters beside the ring, not examined): refused."""
    if par.cp > 1 and framework.eager and not framework.torch_cp:
        raise LlmConfigError("parallel.cp", f"framework {framework.name}: context parallelism is not modelled for it "
                             "(Megatron's ring would price it, not its code)",
                             hint="framework: torch prices torch's context_parallel (DDP over dp x cp, llm/torch_cp.py)")
    if par.pp_schedule == "gpipe" and not framework.eager:
        raise LlmConfigError("parallel.pp_schedule", f"framework {framework.name} runs (interleaved) 1F1B, not GPipe "
                             "(torch.distributed.pipelining's ScheduleGPipe)", hint="pp_schedule: 1f1b, or framework: torch")
    if not framework.eager and (par.recompute == "op" or par.recompute_every > 1):
        key = "parallel.recompute" if par.recompute == "op" else "parallel.recompute_every"
        raise LlmConfigError(key, f"framework {framework.name}: op-level and every-N-th-block checkpointing are eager "
                             "PyTorch's (torch.utils.checkpoint, torchtitan's policies)", hint="framework: torch, or "
                             "recompute: selective with recompute_modules")
    if (par.recompute == "op" or par.recompute_every > 1) and (par.tp > 1 or par.pp > 1):
        key = "parallel.recompute" if par.recompute == "op" else "parallel.recompute_every"
        raise LlmConfigError(key, "op-level and every-N-th-block checkpointing are modelled on one GPU or data parallel "
                             "only (no tp, no pp)", hint="recompute: full")
    if framework.moe_host is not None and (par.moe_dispatcher != "alltoall" or par.moe_a2a_overlap):
        key = "parallel.moe_dispatcher" if par.moe_dispatcher != "alltoall" else "parallel.moe_a2a_overlap"
        raise LlmConfigError(key, f"framework {framework.name} prices the host around the alltoall dispatcher's sync "
                             "only (its MoE layer as the local spec runs it, no A2A overlap)",
                             hint="moe_dispatcher: alltoall and moe_a2a_overlap: false, or framework: megatron")
    grad_sync.check(par, framework.eager, framework.name)
    if framework.name.startswith("hf-"):
        _check_hf(par, framework, precision)
    if par.shard < par.dp and not framework.hybrid_shard:
        raise LlmConfigError("parallel.dp_shard", f"framework {framework.name}: HSDP (shard inside a group, replicate across) "
                             "is modelled for the FSDP trainers only (DeepSpeed's ZeRO++ hpZ and Megatron's partial distributed "
                             "optimizer are different mechanisms)", hint="framework torchtitan-fsdp2, fms-fsdp, composer-fsdp or hf-fsdp1, "
                             "or dp_shard: dp")
    if par.shard < par.dp and par.tp > 1 and framework.name != "torchtitan-fsdp2":   # FSDP1's groups: the node's GPUs
        raise LlmConfigError("parallel.dp_shard", f"framework {framework.name}: HSDP with tp > 1 is modelled for torchtitan-fsdp2 "
                             "only (its 2-D mesh beside TP; fms-fsdp's and Composer's HYBRID_SHARD groups are a node's GPUs, "
                             "which TP groups would split)",
                             hint="tp: 1, or framework: torchtitan-fsdp2")
    if par.overlap_param_gather and framework.grad_reduce_after_backward:
        raise LlmConfigError("parallel.overlap_param_gather", f"framework {framework.name} gathers the parameters after the "
                             "optimizer step (its code has no --overlap-param-gather)", hint="set it false or null")


def _check_hf(par: ParallelSpec, framework: FrameworkSpec, precision: str | None) -> None:
    """The Hugging Face Trainer's DeepSpeed and FSDP1 integrations (framework.HF_DEEPSPEED, HF_FSDP1) shard over data
    parallelism only; DeepSpeed runs ZeRO 1, 2 or 3 and reduces every micro-batch under 2 and 3 (its engine's no_sync
    refuses gradient partitioning); accelerate's FSDP1 is SHARD_GRAD_OP (zero 2) or FULL_SHARD / HYBRID_SHARD (zero 3).
    bf16 only: transformers' Llama has no fp8 GEMM path without accelerate's TE / MS-AMP integration, which the specs do
    not model (cold review C55 item 6)."""
    if precision is not None and precision != "bf16":
        raise LlmConfigError("precision", f"framework {framework.name}: the Hugging Face Trainer frameworks are modelled in "
                             f"bf16 only (no fp8 GEMM path priced), got precision {precision}", hint="precision: bf16")
    for key, value in (("tp", par.tp), ("pp", par.pp), ("cp", par.cp), ("ep", par.ep)):
        if value > 1:
            raise LlmConfigError(f"parallel.{key}", f"framework {framework.name}: the Hugging Face Trainer's DeepSpeed / FSDP "
                                 f"runs data parallelism only, got {key} {value}", hint=f"{key}: 1, or a Megatron framework")
    deepspeed = framework.name.startswith("hf-deepspeed")
    stages = (1, 2, 3) if deepspeed else (2, 3)
    if par.zero not in stages:
        raise LlmConfigError("parallel.zero", f"framework {framework.name} runs zero {', '.join(map(str, stages))}, got {par.zero}",
                             hint="DeepSpeed ZeRO stage 1-3" if deepspeed else "zero 3 (FULL_SHARD / HYBRID_SHARD) or 2 (SHARD_GRAD_OP)")
    if deepspeed and par.zero >= 2 and par.grad_sync == "step":
        raise LlmConfigError("parallel.grad_sync", f"framework {framework.name}: DeepSpeed ZeRO {par.zero} reduces every "
                             "micro-batch (its engine's no_sync refuses gradient partitioning)", hint="remove grad_sync")
