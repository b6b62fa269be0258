"""The scenario job `kind: llm_training`: model, parallelism, batch and precision, read strictly.

    - kind: llm_training
      model: {layers: 80, hidden: 8192, ffn: 28672, heads: 64, kv_heads: 8, vocab: 128256, seq: 8192}
      parallel: {tp: 8, pp: 4, dp: 32, zero: 1, virtual_stages: 5, recompute: none, sequence_parallel: true,
                 tp_comm_overlap: false, overlap_param_gather: false}
                 # recompute: selective takes Megatron's recompute_modules: [core_attn (default), layernorm, mlp, moe,
                 # moe_act, shared_experts, mla_up_proj]; framework torch: recompute: op (torchtitan's op-level
                 # selective checkpointing) or full with recompute_every: N (every N-th block; llm/eager_ac.py)
                 # optional: pipeline_layout: [layers of each virtual stage, model order]; pp_schedule: 1f1b | gpipe
                 # (gpipe: framework torch only); MoE: moe_dispatcher: alltoall |
                 # deepep, moe_shared_expert_overlap, moe_a2a_overlap (model: expert_groups, group_topk: routing limit),
                 # moe_pad_to_capacity (drop and pad as Megatron-Core >= 0.11 runs it: no dispatcher sync; alltoall, ep > 1);
                 # zero 3: dp_shard: N (HSDP: shard groups of N ranks, replicated across dp / N; the FSDP frameworks
                 # only: llm/hsdp.py); grad_sync: micro_batch | step (DP gradients reduced after every micro-batch,
                 # or once a step: FSDP2's set_requires_gradient_sync(False) / DDP no_sync; eager frameworks: llm/grad_sync.py)
      global_batch: 1024
      micro_batch: 1
      precision: bf16
      train_tokens: 15T          # optional; with reliability: (llm/reliability.py) the days to train
      framework: megatron        # optional: megatron (default) or another name of framework.FRAMEWORKS, or eager PyTorch:
                                 # {name: torch, host: FOLDER} (llm/eager.py; host: hidden-128 decoder runs per mode),
                                 # compile: true (each block under torch.compile, one GPU: llm/compiled.py)
                                 # rope_fusion: true | false (MLA's rotary, Megatron-Core's apply_rope_fusion: llm/mla_layout.py;
                                 # default the framework's: fused under Megatron, unfused under the eager frameworks),
                                 # moe_graphs: true | false (MoE router and preprocess in CUDA graphs: llm/moe_graphs.py)
                                 # moe_router_fusion: true | false (Megatron-Core's fused router; false: its unfused
                                 # TopKRouter, priced from one measurement, llm/moe_router_unfused.py; default true)
The machine names the GPU card (machine.gpu.card); dp x tp x pp x cp must equal its GPU count. Every
inconsistency is the reader's one-line error at the offending key (file:line).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from simcluster.job_documents import LLM_TRAINING, MODEL_VARIANTS, Framework
from simcluster.llm import eager, eager_ac, hf_hooks, moe_router_term
from simcluster.llm.comm import check_dispatch
from simcluster.llm.compiled import check_compiled
from simcluster.llm.framework import FRAMEWORKS, FrameworkSpec
from simcluster.llm.reliability import Reliability, parse_failure_rate, read_reliability
from simcluster.llm.spec import (
    FP8_SCALINGS,
    MOE_DISPATCHERS,
    PP_SCHEDULES,
    PRECISIONS,
    RECOMPUTE,
    BatchSpec,
    LlmConfigError,
    ParallelSpec,
    TransformerSpec,
)
from simcluster.llm.spec_check import check, check_framework, check_model_framework
from simcluster.units import parse_count

FRAMEWORK_NAMES = (*(n for n in FRAMEWORKS if n != "torch-amp"), "torch")   # torch-amp: torch's base, without its wrappers
MOE_FLAGS = ("moe_shared_expert_overlap", "moe_a2a_overlap", "moe_pad_to_capacity")


@dataclass(frozen=True)
class LlmJob:
    model: TransformerSpec
    parallel: ParallelSpec
    batch: BatchSpec
    kind: str = "llm_training"
    train_tokens: float | None = None
    reliability: Reliability | None = None
    framework: str = "megatron"                          # framework.FRAMEWORKS' name, or "torch" (llm/eager.py)
    host_costs: tuple = ()                               # torch, hf-*: (mode, (s per kernel, s per step, shapes)) per mode fitted
    compiled: bool = False                               # torch: {compile: true}, each block under torch.compile
    rope_fusion: bool | None = None                      # framework.rope_fusion (MLA); None: the framework's default
    moe_graphs: bool | None = None                       # framework.moe_graphs (MoE, Transformer Engine); None: captured
    moe_router_fusion: bool | None = None                # framework.moe_router_fusion (MoE, megatron / -te-fa2); None: fused

    def framework_spec(self):
        """The FrameworkSpec the step model runs this job with."""
        fw = _framework_spec(self.framework, self.model, self.parallel, self.batch, dict(self.host_costs), self.compiled)
        fw = fw if self.rope_fusion is None else replace(fw, rope_fusion=self.rope_fusion)
        fw = fw if self.moe_graphs is None else replace(fw, moe_graphs=self.moe_graphs)
        return fw if self.moe_router_fusion is None else replace(fw, moe_router_fusion=self.moe_router_fusion)


def _framework_spec(name: str, model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, hosts: dict,
                    compiled: bool) -> FrameworkSpec:
    """The named framework with its host costs where `hosts` has them: torch's from its layout's mode (llm/eager.py), a
    Hugging Face framework's hooks on the `single` fit (llm/hf_hooks.with_hooks); any other, FRAMEWORKS' own."""
    if name == "torch":
        return eager.torch_framework(par, hosts, compiled)
    if hosts and name in hf_hooks.HOOK_S:
        return hf_hooks.with_hooks(FRAMEWORKS[name], model, par, batch, hosts)
    return FRAMEWORKS[name]


def read_llm_job(r, job: dict, key: str, machine) -> LlmJob:
    """Read one llm_training job with the scenario reader `r` (fail / mapping / integer / choice)."""
    j = r.declared(LLM_TRAINING, job, key, recompute=RECOMPUTE, moe_dispatcher=MOE_DISPATCHERS, pp_schedule=PP_SCHEDULES,
                   precision=PRECISIONS, fp8_scaling=FP8_SCALINGS, framework=FRAMEWORK_NAMES,
                   failure_rate=parse_failure_rate)
    m, p = j.model, j.parallel
    ints = {name: getattr(m, name) for name in ("layers", "hidden", "heads", "vocab", "seq")}
    ints["kv_heads"] = m.kv_heads or m.heads
    moe = {name: getattr(m, name) for name in ("experts", "top_k", "expert_ffn", "qk_norm", "rotary") + MODEL_VARIANTS}
    degrees = {name: getattr(p, name) for name in ("tp", "pp", "dp", "cp", "ep", "virtual_stages", "expert_tp", "dp_shard")}
    flags = {name: getattr(p, name) for name in ("moe_dispatcher", "pp_schedule", "sequence_parallel", "tp_comm_overlap",
                                                  "overlap_param_gather") + MOE_FLAGS}
    flags["pipeline_layout"] = tuple(p.pipeline_layout)
    precision, gb, mb = j.precision, j.global_batch, j.micro_batch
    if getattr(machine, "gpu_card", None) is None:
        r.fail("machine", "an llm_training job needs machine.gpu: {card: ...} (a GPU card, models/gpu/)")
    try:
        model = TransformerSpec(ffn=m.ffn or 0, tied_embeddings=m.tied_embeddings, mlp=m.mlp, dropout=m.dropout, **ints, **moe)
        par = ParallelSpec(zero=p.zero, recompute=p.recompute, recompute_modules=tuple(p.recompute_modules),
                           recompute_every=p.recompute_every, grad_sync=p.grad_sync or "", **flags, **degrees)
        batch = BatchSpec(gb, mb, precision, j.fp8_scaling)
        check(model, par, batch, machine.gpus_per_node * machine.nodes)
    except LlmConfigError as exc:
        dotted = f"{key}.{exc.key}" if not exc.key.startswith("machine") else exc.key
        r.fail(dotted, exc.message.split(": ", 1)[1], hint=exc.hint)
    framework, hosts = _framework(r, j, job, key, par, precision)
    compiled = isinstance(j.framework, Framework) and bool(j.framework.compile)
    try:   # what the framework's ops cannot run, refused at the job's key
        fw = _framework_spec(framework, model, par, batch, hosts, compiled)
        if fw.compiled:
            check_compiled(model, par, fw)
        check_model_framework(model, fw)
        check_framework(par, fw)
        eager_ac.check_op(model, par)
        check_dispatch(model, par, machine.domain_gpus)
    except LlmConfigError as exc:
        r.fail(f"{key}.{exc.key}", exc.message.split(": ", 1)[1], hint=exc.hint)
    rope_fusion = j.framework.rope_fusion if isinstance(j.framework, Framework) else None
    if rope_fusion is not None and not model.mla:
        r.fail(f"{key}.framework.rope_fusion", "prices multi-head latent attention's rotary only (model.kv_lora_rank); "
               "this model has none", hint="remove it")
    if rope_fusion and fw.eager:
        r.fail(f"{key}.framework.rope_fusion", f"framework {fw.name} rotates in eager torch (unfused); Megatron-Core's "
               "fused MLA rotary is not its code", hint="rope_fusion: false, or a Megatron framework")
    moe_graphs = j.framework.moe_graphs if isinstance(j.framework, Framework) else None
    if moe_graphs is not None and not (model.moe and fw.transformer_engine and fw.moe_host is None):
        r.fail(f"{key}.framework.moe_graphs", "prices Megatron-Core's MoE router and preprocess under Transformer Engine "
               "(llm/moe_graphs.py); this model or framework has none", hint="remove it")
    if moe_graphs is False and par.moe_a2a_overlap:
        r.fail(f"{key}.framework.moe_graphs", "changes nothing under parallel.moe_a2a_overlap (the MoE host term is off "
               "there, llm/moe_sync.py)", hint="remove it, or moe_a2a_overlap: false")
    fusion = j.framework.moe_router_fusion if isinstance(j.framework, Framework) else None
    if fusion is not None and not (model.moe and moe_router_term.applies(fw)):
        r.fail(f"{key}.framework.moe_router_fusion", "prices Megatron-Core's MoE router on the frameworks "
               f"{', '.join(moe_router_term.ADOPTED)} (llm/moe_router_unfused.py); this model or framework has none",
               hint="remove it")
    rel = None
    if "reliability" in job:
        from simcluster.llm.goodput import checkpoint_plan

        rel = read_reliability(r, j.reliability, job["reliability"], f"{key}.reliability")
        checkpoint_plan(model, rel, machine.gpus_per_node * machine.nodes, machine.gpus_per_node)   # refusals known before the step
    return LlmJob(model, par, batch, train_tokens=None if j.train_tokens is None else parse_count(j.train_tokens),
                  reliability=rel, framework=framework,
                  host_costs=tuple(sorted(hosts.items())), compiled=compiled, rope_fusion=rope_fusion, moe_graphs=moe_graphs,
                  moe_router_fusion=fusion)


def _framework(r, j, job: dict, key: str, par: ParallelSpec, precision: str) -> tuple[str, dict]:
    """(framework name, host costs per mode) of the job's optional `framework:` (a name, or {name, host})."""
    if j.framework is None:
        return "megatron", {}
    fk = f"{key}.framework"
    doc = job["framework"] if isinstance(job["framework"], dict) else {}
    name = j.framework if isinstance(j.framework, str) else j.framework.name
    if name != "torch":
        if doc.get("compile"):
            r.fail(f"{fk}.compile", f"framework {name}: torch.compile is modelled for framework torch", hint="name: torch")
        if "host" in doc and name not in hf_hooks.HOOK_S:
            r.fail(f"{fk}.host", f"framework {name} is never host-bound in the model (its host cost is 0); host costs are "
                   f"measured for framework torch and {', '.join(sorted(hf_hooks.HOOK_S))}", hint="name: torch, or remove host")
        try:
            check_framework(par, FRAMEWORKS[name], precision)
        except LlmConfigError as exc:
            r.fail(f"{key}.{exc.key}", exc.message.split(": ", 1)[1], hint=exc.hint)
        if "host" not in doc:
            return name, {}
        if not hf_hooks.measured_at(name, par.zero):
            r.fail(f"{key}.parallel.zero", f"framework {name} with framework.host prices DeepSpeed's ZeRO-3 hooks, measured "
                   f"at ZeRO-3 only; at zero {par.zero} its hooks are others, unmeasured", hint="zero: 3, or remove host")
        return name, _host_fits(r, doc, fk, hf_hooks.HOST_MODE)
    try:
        eager.mode_of(par)
        mode = eager.host_mode(par)
    except LlmConfigError as exc:
        r.fail(f"{key}.{exc.key}", exc.message.split(": ", 1)[1], hint=exc.hint)
    if precision != "bf16":
        r.fail(f"{key}.precision", f"framework torch runs fp32 weights under bf16 autocast; got precision {precision}",
               hint="precision: bf16")
    if "host" not in doc:
        return name, {}
    return name, _host_fits(r, doc, fk, "compile" if doc.get("compile") else mode)


def _host_fits(r, doc: dict, fk: str, mode: str) -> dict:
    """The host fits of framework.host's folder (eager.fit_modes), refused at the key where the folder cannot be fitted
    or has no runs of `mode` (nor of the modes eager.fitted_mode falls back to)."""
    folder = r.existing(doc, fk, "host", "a folder of llm-step runs MODE-L<layers>.json (calibration/h200x2-llm-host-2026-11-23)")
    if not folder.is_dir():
        r.fail(f"{fk}.host", f"{doc['host']!r} is not a folder", hint="a folder of llm-step runs MODE-L<layers>.json")
    try:
        hosts = eager.fit_modes(folder)
    except (ValueError, KeyError, TypeError) as exc:
        r.fail(f"{fk}.host", f"cannot fit the host cost: {exc}")
    mode = mode if mode == "compile" else eager.fitted_mode(mode, hosts)   # no runs of that mode: its nearest mode's cost
    if mode not in hosts:
        chain = [mode]                       # the mode, then the fallbacks fitted_mode would have taken (op -> ckpt -> single)
        while chain[-1] in eager.FALLBACK:
            chain.append(eager.FALLBACK[chain[-1]])
        r.fail(f"{fk}.host", f"no {' / '.join(chain)} runs at two or more layer counts in {doc['host']!r} (files "
               f"{', '.join(f'{m}-L<layers>.json' for m in chain)}, or a collect bundle's llm-step/ runs of that mode)")
    return hosts
