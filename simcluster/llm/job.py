"""The scenario job `kind: llm_training`: model, parallelism, batch and precision, read strictly.

    - kind: llm_training
      model: {layers: 80, hidden: 8192, ffn: 28672, heads: 64, kv_heads: 8, vocab: 128256, seq: 8192}
      parallel: {tp: 8, pp: 4, dp: 32, zero: 1, virtual_stages: 5, recompute: none, sequence_parallel: true,
                 tp_comm_overlap: false, overlap_param_gather: false}
                 # recompute: selective takes Megatron's recompute_modules: [core_attn (default), layernorm, mlp, moe,
                 # moe_act, shared_experts, mla_up_proj]
                 # optional: pipeline_layout: [layers of each virtual stage, model order]; pp_schedule: 1f1b | gpipe
                 # (gpipe: framework torch only); MoE: moe_dispatcher: alltoall |
                 # deepep, moe_shared_expert_overlap, moe_a2a_overlap (model: expert_groups, group_topk: routing limit)
      global_batch: 1024
      micro_batch: 1
      precision: bf16
      train_tokens: 15T          # optional; with reliability: (llm/reliability.py) the days to train
      framework: megatron        # optional: megatron (default) or another name of framework.FRAMEWORKS, or eager PyTorch:
                                 # {name: torch, host: FOLDER} (llm/eager.py; host: hidden-128 decoder runs per mode)
The machine names the GPU card (machine.gpu.card); dp x tp x pp x cp must equal its GPU count. Every
inconsistency is the reader's one-line error at the offending key (file:line).
"""

from __future__ import annotations

from dataclasses import dataclass

from simcluster.llm import eager
from simcluster.llm.comm import check_dispatch
from simcluster.llm.framework import FRAMEWORKS, check_framework, check_model_framework
from simcluster.llm.reliability import Reliability, read_reliability
from simcluster.llm.spec import (
    MOE_DISPATCHERS,
    PP_SCHEDULES,
    PRECISIONS,
    RECOMPUTE,
    RECOMPUTE_MODULES,
    BatchSpec,
    LlmConfigError,
    ParallelSpec,
    TransformerSpec,
)
from simcluster.llm.spec_check import check

MODEL_VARIANTS = ("attn_head_dim", "q_lora_rank", "kv_lora_rank", "qk_rope_dim", "v_head_dim", "shared_expert_ffn", "dense_layers", "mtp_layers",
                  "expert_groups", "group_topk", "window", "full_attention_every")
MODEL_KEYS = ({"layers", "hidden", "heads", "vocab", "seq"}, {"ffn", "kv_heads", "experts", "top_k", "expert_ffn", "tied_embeddings", "mlp", "dropout",
                                                              "qk_norm", "rotary", *MODEL_VARIANTS})
PARALLEL_KEYS = {"tp", "pp", "dp", "cp", "ep", "zero", "virtual_stages", "recompute", "recompute_modules", "sequence_parallel", "tp_comm_overlap",
                 "overlap_param_gather", "expert_tp", "pipeline_layout", "moe_dispatcher", "moe_shared_expert_overlap", "moe_a2a_overlap",
                 "pp_schedule"}
MOE_FLAGS = ("moe_shared_expert_overlap", "moe_a2a_overlap")


@dataclass(frozen=True)
class LlmJob:
    model: TransformerSpec
    parallel: ParallelSpec
    batch: BatchSpec
    kind: str = "llm_training"
    train_tokens: float | None = None
    reliability: Reliability | None = None
    framework: str = "megatron"                          # framework.FRAMEWORKS' name, or "torch" (llm/eager.py)
    host_costs: tuple = ()                               # torch: (mode, (s per kernel, s per step, shapes)) per mode fitted

    def framework_spec(self):
        """The FrameworkSpec the step model runs this job with."""
        if self.framework == "torch":
            return eager.torch_framework(self.parallel, dict(self.host_costs))
        return FRAMEWORKS[self.framework]


def read_llm_job(r, job: dict, key: str, machine) -> LlmJob:
    """Read one llm_training job with the scenario reader `r` (fail / mapping / integer / choice)."""
    r.mapping(job, key, {"kind", "model", "parallel", "global_batch", "micro_batch"}, {"precision", "train_tokens", "reliability", "framework"})
    mk = f"{key}.model"
    m = r.mapping(job["model"], mk, *MODEL_KEYS)
    ints = {name: r.integer(m, mk, name) for name in ("layers", "hidden", "heads", "vocab", "seq")}
    ints["kv_heads"] = r.integer(m, mk, "kv_heads", default=ints["heads"])
    moe = {name: r.integer(m, mk, name, minimum=0, default=0) for name in ("experts", "top_k", "expert_ffn") + MODEL_VARIANTS}
    ffn = r.integer(m, mk, "ffn", minimum=0 if moe["experts"] else 1, default=0 if moe["experts"] else None)
    for name, default in (("qk_norm", False), ("rotary", True)):
        moe[name] = m.get(name, default)
        if not isinstance(moe[name], bool):
            r.fail(f"{mk}.{name}", f"expected true or false, got {moe[name]!r}")
    tied = m.get("tied_embeddings", False)
    if not isinstance(tied, bool):
        r.fail(f"{mk}.tied_embeddings", f"expected true or false, got {tied!r}")
    mlp = r.choice(m, mk, "mlp", ("swiglu", "gelu"), "swiglu")
    dropout = m.get("dropout", False)
    if not isinstance(dropout, bool):
        r.fail(f"{mk}.dropout", f"expected true or false, got {dropout!r}")
    pk = f"{key}.parallel"
    p = r.mapping(job["parallel"], pk, set(), PARALLEL_KEYS)
    degrees = {name: r.integer(p, pk, name, default=1) for name in ("tp", "pp", "dp", "cp", "ep", "virtual_stages")}
    degrees["expert_tp"] = r.integer(p, pk, "expert_tp", minimum=0, default=0)
    zero = p.get("zero", 0)
    if zero not in (0, 1, 2, 3) or isinstance(zero, bool):
        r.fail(f"{pk}.zero", f"expected 0, 1, 2 or 3, got {zero!r}")
    recompute = r.choice(p, pk, "recompute", RECOMPUTE, "none")
    modules = p.get("recompute_modules", [])
    if not isinstance(modules, list) or not all(isinstance(m, str) for m in modules):
        r.fail(f"{pk}.recompute_modules", f"expected a list of module names ({', '.join(RECOMPUTE_MODULES)}), got {modules!r}")
    flags: dict = {}
    layout = p.get("pipeline_layout", [])
    if not isinstance(layout, list) or not all(isinstance(n, int) and not isinstance(n, bool) for n in layout):
        r.fail(f"{pk}.pipeline_layout", f"expected a list of layer counts (one per virtual stage), got {layout!r}")
    flags["pipeline_layout"] = tuple(layout)
    flags["moe_dispatcher"] = r.choice(p, pk, "moe_dispatcher", MOE_DISPATCHERS, "alltoall")
    flags["pp_schedule"] = r.choice(p, pk, "pp_schedule", PP_SCHEDULES, "1f1b")
    for name in ("sequence_parallel", "tp_comm_overlap", "overlap_param_gather") + MOE_FLAGS:
        flags[name] = p.get(name, False)
        if not isinstance(flags[name], bool):
            r.fail(f"{pk}.{name}", f"expected true or false, got {flags[name]!r}")
    precision = r.choice(job, key, "precision", PRECISIONS, "bf16")
    gb, mb = r.integer(job, key, "global_batch"), r.integer(job, key, "micro_batch")
    if getattr(machine, "gpu_card", None) is None:
        r.fail("machine", "an llm_training job needs machine.gpu: {card: ...} (a GPU card, models/gpu/)")
    try:
        model = TransformerSpec(ffn=ffn, tied_embeddings=tied, mlp=mlp, dropout=dropout, **ints, **moe)
        par = ParallelSpec(zero=zero, recompute=recompute, recompute_modules=tuple(modules), **flags, **degrees)
        batch = BatchSpec(gb, mb, precision)
        check(model, par, batch, machine.gpus_per_node * machine.nodes)
    except LlmConfigError as exc:
        dotted = f"{key}.{exc.key}" if not exc.key.startswith("machine") else exc.key
        r.fail(dotted, exc.message.split(": ", 1)[1], hint=exc.hint)
    framework, hosts = _framework(r, job, key, par, precision)
    try:   # what the framework's ops cannot run, refused at the job's key
        fw = eager.torch_framework(par, hosts) if framework == "torch" else FRAMEWORKS[framework]
        check_model_framework(model, fw)
        check_framework(par, fw)
        check_dispatch(model, par, machine.domain_gpus)
    except LlmConfigError as exc:
        r.fail(f"{key}.{exc.key}", exc.message.split(": ", 1)[1], hint=exc.hint)
    rel = None
    if "reliability" in job:
        from simcluster.llm.goodput import checkpoint_plan

        rel = read_reliability(r, job["reliability"], f"{key}.reliability")
        checkpoint_plan(model, rel, machine.gpus_per_node * machine.nodes, machine.gpus_per_node)   # refusals known before the step
    elif "train_tokens" in job:
        r.fail(f"{key}.train_tokens", "days to train need a reliability: block (every large run is interrupted); without "
               "one, the printed tokens/s is the whole answer", hint="add reliability: (llm/reliability.py) or remove train_tokens")
    return LlmJob(model, par, batch, train_tokens=_tokens(r, job, key), reliability=rel, framework=framework,
                  host_costs=tuple(sorted(hosts.items())))


def _framework(r, job: dict, key: str, par: ParallelSpec, precision: str) -> tuple[str, dict]:
    """(framework name, host costs per mode) of the job's optional `framework:` (a name, or {name, host})."""
    if "framework" not in job:
        return "megatron", {}
    fk = f"{key}.framework"
    names = (*(n for n in FRAMEWORKS if n != "torch-amp"), "torch")   # torch-amp is torch's base, without its wrappers
    if isinstance(job["framework"], str):
        doc, name = {}, job["framework"]
        if name not in names:
            r.fail(fk, f"expected one of {', '.join(names)}, got {name!r}")
    else:
        doc = r.mapping(job["framework"], fk, {"name"}, {"host"})
        name = r.choice(doc, fk, "name", names)
    if name != "torch":
        if "host" in doc:
            r.fail(f"{fk}.host", f"framework {name} is never host-bound in the model (its host cost is 0); host costs are "
                   "measured for framework torch", hint="name: torch, or remove host")
        try:
            check_framework(par, FRAMEWORKS[name])
        except LlmConfigError as exc:
            r.fail(f"{key}.{exc.key}", exc.message.split(": ", 1)[1], hint=exc.hint)
        return name, {}
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
    folder = r.existing(doc, fk, "host", "a folder of llm-step runs MODE-L<layers>.json (calibration/h200x2-llm-host-2026-11-23)")
    if not folder.is_dir():
        r.fail(f"{fk}.host", f"{doc['host']!r} is not a folder", hint="a folder of llm-step runs MODE-L<layers>.json")
    try:
        hosts = eager.fit_modes(folder)
    except (ValueError, KeyError, TypeError) as exc:
        r.fail(f"{fk}.host", f"cannot fit the host cost: {exc}")
    if mode in eager.FALLBACK and mode not in hosts:   # no runs of that mode: its nearest mode's cost (eager.torch_framework)
        mode = eager.FALLBACK[mode]
    if mode not in hosts:
        r.fail(f"{fk}.host", f"no {mode} runs at two or more layer counts in {doc['host']!r} (files {mode}-L<layers>.json)")
    return name, hosts


def _tokens(r, job: dict, key: str) -> float | None:
    from simcluster.cost import parse_count

    if "train_tokens" not in job:
        return None
    try:
        return parse_count(job["train_tokens"])
    except ValueError as exc:
        r.fail(f"{key}.train_tokens", str(exc))
