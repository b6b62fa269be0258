"""Published LLM training runs (calibration/published/llm-*.yaml) against the LLM model:
`simcluster validate --published llm [FOLDER | FILE]`.

Each row is predicted from the architecture, parallelism and batch the source prints; what the source leaves out
(null) is filled from the file's `simcluster.assumptions` (printed with every row): parallelism and batch keys by name,
model keys per model name from `models` (a public recipe's or paper's dimensions, `from` naming it) or ffn from
`ffn_per_hidden` (an integer; GPT-3's ffn = 4 hidden). A row whose model or batch cannot be filled has no prediction,
with the reason, and so has a row in `simcluster.runs_not_compared` (what the model cannot express). The machine is the
file's `simcluster.machine` (GPU card, NIC card and `nics_per_node` of it, default 8: one per GPU, NVLink collective
card), the file's system.gpus_per_node GPUs per node (8 where not printed) on a non-blocking rail-optimized fabric: the
sources' own fabrics differ (Llama 3: 1:7 oversubscribed aggregation layer; Selene: three-level fat tree).

Compared quantity: the source's own throughput. Where it gives tokens/s or the iteration time, those (no FLOP
convention involved); otherwise its TFLOP/s per GPU, recomputed from the predicted step time with the source's FLOP
count (`simcluster.flops`): narayanan-eq3 = Narayanan et al. 2021 eq. 3 (96 B s l h^2 (1 + s/6h + V/16lh),
recompute pass included), megatron = the model-FLOP count 72 B s l h^2 (1 + s/6h + V/12lh) generalised to GQA /
SwiGLU (llm/predict.py). The training code is the file's `simcluster.framework` (default megatron; sources from
before flash attention run on megatron-unfused-attention), with the recipe's memory settings of `simcluster.memory`
and `memory_by_model` (gradient-buffer and optimizer dtypes, fp8 weights; memory only, each citing its recipe) and its
kernel choices of `simcluster.recipe` and `recipe_by_model` (rope_fusion: Megatron-Core's apply_rope_fusion, MLA only).
+ = predicted faster (a step time's error sign is flipped).
"""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass, replace
from pathlib import Path

from simcluster.errors import SimclusterError
from simcluster.llm.spec import FP8_SCALINGS, GRAD_SYNCS, MLPS, MOE_DISPATCHERS, MOE_STATED, MOE_SWITCHES, RECOMPUTE, RECOMPUTE_MODULES
from simcluster.published import Published, checked, flag, one_of, published_files, read_published, text
from simcluster.reference import source_gpu
from simcluster.reference.llm_frameworks import FileFrameworks, file_frameworks, framework_name, row_label
from simcluster.results import ReferenceRow, ReferenceValidation
from simcluster.strict import count, field, known_keys
from simcluster.trust.regime import published_family

TARGET = 0.10
MODEL_KEYS = ("layers", "hidden", "heads", "vocab", "seq", "ffn")
MACHINE_KEYS = {"gpu_card", "nic_card", "nvlink_card", "nics_per_node"}
NODE_GPUS = 8          # GPUs per node where a file does not print system.gpus_per_node (machine_for, spec_of)
SHARDINGS = ("FSDP", "HSDP")   # a row's printed FSDP sharding: FULL_SHARD over the DP ranks, or HYBRID_SHARD (shard inside
#                               a node, replicate across; parallel.dp_shard = the node's GPUs)
def module_list(value) -> tuple[str, ...]:
    """A `parse` for a row's recompute_modules: a list of Megatron's module names (spec.RECOMPUTE_MODULES)."""
    if not isinstance(value, (list, tuple)) or not all(v in RECOMPUTE_MODULES for v in value):
        raise ValueError(f"expected a list of {', '.join(RECOMPUTE_MODULES)}")
    return tuple(value)


def layer_counts(value) -> tuple[int, ...]:
    """A `parse` for a row's pipeline_layout: layers per virtual stage, model order (integers >= 0)."""
    if not isinstance(value, (list, tuple)) or not value or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value):
        raise ValueError("expected a list of layer counts >= 0, one per virtual stage")
    return tuple(value)


# torchtitan's activation-checkpointing labels as its docs/performance.md prints them (1ea476e9f) -> (recompute, every N-th
# block): 'selective layer' is selective_ac_option 2 (a full checkpoint of every second block), 'selective op' its op
# policy (SDPA and every other mm saved; llm/eager_ac.py)
TORCHTITAN_AC = {"selective layer": ("full", 2), "selective op": ("op", 1)}
# the keys a file's `assumptions` may fill (parallel and batch keys by name), each with its type
FILL_PARSERS = {"global_batch": count, "zero": one_of((0, 1, 2, 3)), "virtual_stages": count, "micro_batch": count, "sequence_parallel": flag,
                "recompute": one_of(RECOMPUTE), "recompute_modules": module_list, "ffn_per_hidden": lambda v: count(v, 64),
                "expert_tp": count, "moe_dispatcher": one_of(MOE_DISPATCHERS),
                "moe_shared_expert_overlap": flag, "moe_a2a_overlap": flag, "moe_pad_to_capacity": flag, "grad_sync": one_of(GRAD_SYNCS),
                "precision": lambda v: precision_of(v) and str(v)}   # a table with no precision column: read from its
#   footnotes / configs, shown as assumed in the row's detail (cold review A47 item 6)
# the MoE / attention variants of llm/spec.TransformerSpec (head size, MLA ranks, shared experts, dense first layers, MTP)
MODEL_VARIANTS = ("attn_head_dim", "q_lora_rank", "kv_lora_rank", "qk_rope_dim", "v_head_dim", "shared_expert_ffn", "dense_layers",
                  "mtp_layers", "expert_groups", "group_topk", "window", "full_attention_every")
MODEL_PARSERS = {**{k: count for k in MODEL_KEYS + ("kv_heads", "experts", "top_k", "expert_ffn") + MODEL_VARIANTS}, "mlp": one_of(MLPS),
                 "tied_embeddings": flag, "dropout": flag, "qk_norm": flag, "rotary": flag, "from": text}
# a file's `simcluster.memory` / `memory_by_model[NAME]`: the recipe's memory settings (llm/framework.FrameworkSpec), `from` citing them
MEMORY_PARSERS = {"grad_buffer_bytes": one_of((2, 4)), "state_bytes": one_of((4, 12)), "master_remainders": flag,
                  "fp8_params": flag, "from": text}
# a file's `simcluster.recipe` / `recipe_by_model[NAME]`: the recipe's kernel choices the framework's default does not state
# (llm/framework.FrameworkSpec; rope_fusion: Megatron-Core's apply_rope_fusion; moe_graphs: llm/moe_graphs.py;
# moe_router_fusion: false = Megatron-Core's unfused router, llm/moe_router_unfused.py), `from` citing them
# fp8_scaling: Transformer Engine's FP8 recipe where the row prints plain "FP8" but the recipe scales per tensor
# ("current": Megatron-Bridge's fp8_cs presets), carried to the batch (llm/spec.BatchSpec), not the framework
RECIPE_PARSERS = {"rope_fusion": flag, "moe_graphs": flag, "moe_router_fusion": flag, "fp8_scaling": one_of(FP8_SCALINGS), "from": text}
# a row's printed precision -> the model's GEMM precision: per-tensor-scaled FP8 (Transformer Engine's delayed or current
# scaling) runs as fp8; block-scaled formats (MXFP8, NVFP4) and anything else are refused, not read as bf16
PRECISIONS = {"bf16": "bf16", "mixed 16-bit": "bf16", "fp8": "fp8", "fp8-cs": "fp8"}
FP8_SCALING = {"fp8-cs": "current"}   # the scaling recipe a printed precision names (default delayed: TE's default recipe)


@dataclass(frozen=True)
class LlmUsage:
    """A file's `simcluster` block as the LLM comparison reads it, every key and value checked."""

    gpu_card: Path
    nic_card: Path
    nvlink_card: Path
    nics_per_node: int                # default 8: one NIC per GPU
    assumptions: dict                 # FILL_PARSERS key -> value, and `models`: name -> {MODEL_PARSERS key -> value}
    gpus_per_node: int = NODE_GPUS    # the file's system.gpus_per_node where printed (KempnerForge's 4; session 47), else 8
    frameworks: FileFrameworks | None = None   # the file's framework keys, checked once (None: framework_of checks them)


def llm_usage(ref: Published) -> LlmUsage:
    """The machine and assumptions of a published LLM file; a bad key or value is one line naming it."""
    where = f"{ref.path}: simcluster.machine"
    machine = known_keys(field(ref.usage, "machine", f"{ref.path}: simcluster"), MACHINE_KEYS, where)
    cards = [(ref.path.parent / checked(machine, k, where, text)).resolve() for k in ("gpu_card", "nic_card", "nvlink_card")]
    nics = 8 if machine.get("nics_per_node") is None else checked(machine, "nics_per_node", where, lambda v: count(v, 64))
    where = f"{ref.path}: simcluster.assumptions"
    raw = known_keys(ref.usage.get("assumptions") or {}, set(FILL_PARSERS) | {"models", "from"}, where)
    assumptions = {k: checked(raw, k, where, parse) for k, parse in FILL_PARSERS.items() if raw.get(k) is not None}
    if raw.get("from") is not None:       # the recipe or config the fills above come from (Session 19 rules)
        assumptions["from"] = checked(raw, "from", where, text)
    models = raw.get("models") or {}
    if not isinstance(models, dict):
        raise SimclusterError("key 'models': expected a mapping of model name -> model keys", where=where)
    for name, fills in models.items():
        at = f"{where}.models[{str(name)[:40]!r}]"
        known_keys(fills, MODEL_PARSERS, at)
        models[name] = {k: checked(fills, k, at, MODEL_PARSERS[k]) for k in fills if fills[k] is not None}
    frameworks = file_frameworks(ref)
    for run in ref.runs:
        memory_options(ref, run)
        memory_options(ref, run, "recipe", RECIPE_PARSERS)
    names = {r["model"].get("name") for r in ref.runs if isinstance(r.get("model"), dict)}
    for key in ("memory_by_model", "recipe_by_model"):
        for name in ref.usage.get(key) or {}:
            if name not in names:
                raise SimclusterError("no run's model.name is this name", where=f"{ref.path}: simcluster.{key}[{str(name)[:40]!r}]")
    per_node = ref.system.get("gpus_per_node")
    per_node = NODE_GPUS if per_node is None else checked(ref.system, "gpus_per_node", f"{ref.path}: system", lambda v: count(v, 64))
    for i, run in enumerate(ref.runs):   # a run over a node must fill whole nodes (machine_for builds gpus // per_node)
        gpus = run.get("gpus") if isinstance(run, dict) else None
        if isinstance(gpus, int) and gpus > per_node and gpus % per_node:
            raise SimclusterError(f"{gpus} GPUs is not a whole number of nodes of system.gpus_per_node = {per_node}: expected "
                                  "a multiple of it (or at most one node)", where=f"{ref.path}: runs[{i}].gpus")
    return LlmUsage(*cards, nics, {**assumptions, "models": models}, per_node, frameworks)


def machine_for(usage: LlmUsage, gpus: int):
    from simcluster.scenario_machine import FabricConfig, Machine, NicSpec

    per_node = usage.gpus_per_node
    nodes = max(1, gpus // per_node)
    fabric = FabricConfig("rail-optimized", 64, 32, 1.0, 1, 100e-9, 600e-9, "cut-through")
    return Machine(usage.nvlink_card, min(per_node, gpus), nodes, NicSpec(usage.nic_card, usage.nics_per_node, 1) if nodes > 1 else None,
                   fabric if nodes > 1 else None, 112.0, gpu_card=usage.gpu_card)


def spec_of(run: dict, assumed: dict, node_gpus: int = NODE_GPUS) -> tuple[tuple | None, str, list[str]]:
    """(TransformerSpec, ParallelSpec, BatchSpec) of a row, or None and what the source does not give; and the
    assumptions used for its nulls. `assumed` is LlmUsage.assumptions; a row value of the wrong type is one line
    naming its key. node_gpus: the machine's GPUs per node (HSDP's default shard group)."""
    from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec

    p, b = checked(run, "parallel", "", dict_of), checked(run, "batch", "", dict_of)
    used: list[str] = []
    m = filled_model(checked(run, "model", "", dict_of), assumed, used)
    for key in MODEL_KEYS:
        if m.get(key) is None:
            return None, f"model.{key} not given", used
    m.update({k: checked(m, k, "model", MODEL_PARSERS[k]) for k in MODEL_PARSERS if k != "from" and m.get(k) is not None})
    if b.get("global_batch") is None and "global_batch" not in assumed:
        return None, "global batch not given", used
    if p.get("tp") is None or p.get("pp") is None:
        return None, "tp / pp not given", used

    def pick(section: dict, name: str, key: str, fallback):
        if section.get(key) is not None:
            return checked(section, key, name, FILL_PARSERS[key])
        value = assumed.get(key, fallback)
        used.append(f"{key}={value}")
        return value

    mlp = m.get("mlp") or ("gelu" if "GPT" in str(m.get("name", "")).upper() and m["ffn"] == 4 * m["hidden"] else "swiglu")
    tied = m["tied_embeddings"] if m.get("tied_embeddings") is not None else mlp == "gelu"
    moe = {k: m[k] for k in ("experts", "top_k", "expert_ffn", "qk_norm", "rotary") + MODEL_VARIANTS if m.get(k) is not None}
    model = TransformerSpec(m["layers"], m["hidden"], m["ffn"], m["heads"], m.get("kv_heads") or m["heads"], m["vocab"],
                            m["seq"], tied_embeddings=tied, mlp=mlp, dropout=m.get("dropout", False), **moe)
    tp, pp = checked(p, "tp", "parallel", count), checked(p, "pp", "parallel", count)
    dp, cp, ep = (1 if p.get(k) is None else checked(p, k, "parallel", count) for k in ("dp", "cp", "ep"))
    printed = p.get("recompute")
    recompute, every = TORCHTITAN_AC[printed] if printed in TORCHTITAN_AC else (pick(p, "parallel", "recompute", "none"), 1)
    listed = p.get("recompute_modules") is not None or "recompute_modules" in assumed
    modules = pick(p, "parallel", "recompute_modules", ()) if recompute == "selective" and listed else ()
    v = pick(p, "parallel", "virtual_stages", 1) if pp > 1 else 1
    zero = pick(p, "parallel", "zero", 0)
    sp = pick(p, "parallel", "sequence_parallel", tp > 1) and tp > 1
    # overlaps as the source states them (null: off); TP overlap needs sequence parallelism (TP 1: nothing to overlap)
    flags = {k: checked(p, k, "parallel", flag) for k in ("tp_comm_overlap", "overlap_param_gather") if p.get(k) is not None}
    flags["tp_comm_overlap"] = flags.get("tp_comm_overlap", False) and sp
    if ep > 1 and tp > 1:     # Megatron's expert TP (default tp); a recipe's expert_tensor_parallel_size 1 comes from the assumptions
        flags["expert_tp"] = pick(p, "parallel", "expert_tp", 0)
    if p.get("pipeline_layout") is not None:
        flags["pipeline_layout"] = checked(p, "pipeline_layout", "parallel", layer_counts)
    if ep > 1:                # the recipe's MoE dispatcher and overlaps (defaults: Megatron's alltoall, no overlap)
        flags["moe_dispatcher"] = pick(p, "parallel", "moe_dispatcher", "alltoall")
        flags.update({k: pick(p, "parallel", k, False) for k in MOE_SWITCHES if k not in MOE_STATED or k in assumed or p.get(k) is not None})
    if p.get("grad_sync") is not None or ("grad_sync" in assumed and dp * cp > 1):   # the trainer's no-sync accumulation
        flags["grad_sync"] = pick(p, "parallel", "grad_sync", "")   # (llm/grad_sync.py); a file's assumption means nothing
        #   on one data-parallel rank (KempnerForge's 1-GPU row 0, session 46): not applied there; a row's own is checked
    if p.get("sharding") is not None and checked(p, "sharding", "parallel", one_of(SHARDINGS)) == "HSDP":
        flags["dp_shard"] = min(max(1, node_gpus // tp), dp)   # HYBRID_SHARD's default groups: the node's GPUs, which
        # hold node_gpus / tp data-parallel ranks under TP (llm/hsdp.py)
    par = ParallelSpec(tp, pp, dp, cp, ep, zero, v, recompute, sp, recompute_modules=tuple(modules), recompute_every=every, **flags)
    printed = b.get("precision")
    if printed is None and "precision" in assumed:
        printed = assumed["precision"]
        used.append(f"precision={printed}")
    precision = checked({"precision": printed}, "precision", "batch", precision_of) if printed is not None else "bf16"
    scaling = FP8_SCALING.get(str(printed).lower(), "delayed")
    batch = BatchSpec(pick(b, "batch", "global_batch", None), pick(b, "batch", "micro_batch", 1), precision, scaling)
    return (model, par, batch), "", used


def precision_of(value) -> str:
    """A `parse` for a row's printed precision (PRECISIONS); a format the model has no GEMMs for is refused."""
    if str(value).lower() not in PRECISIONS:
        raise ValueError(f"expected one of {', '.join(PRECISIONS)} (block-scaled MXFP8 / NVFP4 are not modelled)")
    return PRECISIONS[str(value).lower()]


def dict_of(value) -> dict:
    if not isinstance(value, dict):
        raise ValueError("expected a mapping")
    return value


def filled_model(model: dict, assumed: dict, used: list[str]) -> dict:
    """The row's model with its nulls filled from `assumptions.models[name]` (keys of the model, `mlp`,
    `tied_embeddings`; `from` names the recipe or paper) and `assumptions.ffn_per_hidden` (an integer); what was
    filled goes to `used`."""
    fills = (assumed.get("models") or {}).get(model.get("name")) or {}
    filled = dict(model)
    keys = [k for k, v in fills.items() if k != "from" and filled.get(k) is None]
    filled.update({k: fills[k] for k in keys})
    if keys:
        used.append(f"model {'/'.join(keys)} from {fills.get('from', '?')}")
    per_hidden = assumed.get("ffn_per_hidden")
    if filled.get("ffn") is None and per_hidden and filled.get("hidden"):
        filled["ffn"] = per_hidden * checked(filled, "hidden", "model", count)
        used.append(f"ffn={per_hidden}h")
    return filled


def framework_of(ref: Published, run: dict | None = None, index: int | None = None, frameworks: FileFrameworks | None = None):
    """The training code the source ran (`simcluster.framework`, default megatron): e.g. megatron-unfused-attention
    for Megatron-LM before flash attention (llm/spec.py); `simcluster.framework_by_model` names another one for the
    runs of one model (a recipe's own setting, e.g. its loss fusion), `framework_by_run` one for a run (over both), by
    the run's `index` in ref.runs (predict_run passes it; a caller without it passes one of ref.runs itself: a copy of
    a run of a file with framework_by_run is refused rather than priced with the wrong framework, cold review B47 item 10)."""
    from simcluster.llm.framework import FRAMEWORKS

    framework = FRAMEWORKS[framework_name(ref, run, index, frameworks)]   # the file's keys as checked once (llm_usage)
    recipe = {k: v for k, v in memory_options(ref, run, "recipe", RECIPE_PARSERS).items() if k != "fp8_scaling"}
    return replace(framework, **memory_options(ref, run), **recipe)


def memory_options(ref: Published, run: dict | None = None, key: str = "memory", parsers: dict = MEMORY_PARSERS) -> dict:
    """The FrameworkSpec fields a file's recipe sets (`simcluster.memory`, then `memory_by_model[model name]` over it;
    the same for `recipe`), each key checked; `from` (the recipe and commit that state them) is required and not returned."""
    options = {}
    model = (run or {}).get("model")
    name = model.get("name") if isinstance(model, dict) else None
    by_model = ref.usage.get(f"{key}_by_model") or {}
    if not isinstance(by_model, dict):
        raise SimclusterError(f"simcluster.{key}_by_model: expected a mapping of model name -> {key} settings", where=str(ref.path))
    for where, block in ((f"{ref.path}: simcluster.{key}", ref.usage.get(key)),
                         (f"{ref.path}: simcluster.{key}_by_model[{str(name)[:40]!r}]", by_model.get(name))):
        if block is None:
            continue
        known_keys(block, parsers, where)
        checked(block, "from", where, text)
        options.update({k: checked(block, k, where, parsers[k]) for k in block if k != "from"})
    return options


def narayanan_flops(model, batch) -> float:
    """Narayanan et al. 2021 eq. 3 (4 passes: recompute included)."""
    B, s, L, h, V = batch.global_batch, model.seq, model.layers, model.hidden, model.vocab
    return 96 * B * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h))


def _measured(meas: dict, key: str) -> float:
    """A published measurement: a finite number > 0 (1e-300 or a negative one would make the error infinite)."""
    value = meas[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 1e-9 <= value <= 1e18:
        raise SimclusterError(f"measured.{key}: expected a number > 0, got {value!r}"[:160])
    return float(value)


def _compared(ref: Published, run: dict, model, batch, result) -> tuple[str, float, float, float]:
    """(metric, measured, predicted, error) in SI units; + = predicted faster."""
    from simcluster.llm.predict import model_flops_per_step

    meas = run["measured"]
    if not isinstance(meas, dict):
        raise SimclusterError(f"measured: expected a mapping, got {type(meas).__name__}")
    if meas.get("tokens_per_s"):
        tokens = _measured(meas, "tokens_per_s")
        return "tokens_per_s", tokens, result.tokens_per_s, result.tokens_per_s / tokens - 1
    if meas.get("step_time_s"):
        step = _measured(meas, "step_time_s")
        return "step_time_s", step, result.step_time_s, 1 - result.step_time_s / step
    if meas.get("tflops_per_gpu"):
        eq3 = ref.usage.get("flops") == "narayanan-eq3"
        flops = narayanan_flops(model, batch) if eq3 else model_flops_per_step(model, batch, "megatron")
        predicted = flops / result.step_time_s / run["gpus"]
        measured = _measured(meas, "tflops_per_gpu") * 1e12
        return "flops_per_gpu_per_s" + (" (eq. 3)" if eq3 else ""), measured, predicted, predicted / measured - 1
    raise SimclusterError("no throughput measured")


# a published row as `validate --published llm` predicts it (predict_run): spec, assumptions used, GPU card, answer, _compared's
RunPrediction = namedtuple("RunPrediction", "model par batch used gpu framework result metric measured predicted error")


def predict_run(ref: Published, usage: LlmUsage, i: int, run: dict) -> RunPrediction | str:
    """Row `i` of a published file predicted (the one path: _row and studies take it), or why it is not compared (the
    file's runs_not_compared, or what its spec lacks)."""
    from simcluster.cards import load_collective
    from simcluster.hardware.gpu import load_gpu
    from simcluster.llm.predict import network_for, predict_llm
    from simcluster.machine_models import build_cluster

    not_compared = (ref.usage.get("runs_not_compared") or {}).get(i)
    if not_compared:
        return str(not_compared)
    spec, missing, used = spec_of(run, usage.assumptions, usage.gpus_per_node)
    if spec is None:
        return missing
    model, par, batch = spec
    scaling = memory_options(ref, run, "recipe", RECIPE_PARSERS).get("fp8_scaling")   # the recipe's, over the printed name's
    batch = replace(batch, fp8_scaling=scaling) if scaling else batch
    gpus = checked(run, "gpus", "", count)
    machine = machine_for(usage, gpus)
    intra = load_collective(machine.card)[0]
    net = network_for(machine, intra, build_cluster(machine, intra) if machine.domains > 1 else None)
    framework, gpu = framework_of(ref, run, i, usage.frameworks), load_gpu(machine.gpu_card)[0]
    result = predict_llm(model, par, batch, gpu, net, gpus, "megatron", trace=False, framework=framework)
    return RunPrediction(model, par, batch, used, gpu, framework, result, *_compared(ref, run, model, batch, result))


def printed_family(ref: Published, usage: LlmUsage, i: int, run: dict) -> str:
    """A row not compared: its issue-44 family from what its file prints; '' where not given, an error where malformed."""
    try:
        m, p = filled_model(dict(run.get("model") or {}), usage.assumptions, []), run.get("parallel") or {}
        zero = p.get("zero") if p.get("zero") is not None else usage.assumptions.get("zero", 0)
        precision = (run.get("batch") or {}).get("precision") or usage.assumptions.get("precision", "")
        fp8 = "fp8" in str(precision).lower()   # moe: experts printed, or EP > 1
        return published_family(framework_of(ref, run, i, usage.frameworks).name, bool(m.get("experts") or (p.get("ep") or 1) > 1),
                                int(m.get("seq") or 0), int(zero or 0), "fp8" if fp8 else "bf16")
    except SimclusterError:
        return ""
    except (AttributeError, KeyError, TypeError, ValueError) as e:
        raise SimclusterError(f"{ref.path}: runs[{i}]: no family from its model / parallel / batch: {e!r}") from None


def _row(ref: Published, usage: LlmUsage, i: int, run: dict) -> ReferenceRow:
    name = run["model"].get("name") if isinstance(run.get("model"), dict) else None
    config = f"{name}, {run.get('gpus')} x {str(run.get('device') or ref.system.get('gpu', '')).split(' (')[0]}"   # a row's own
    p = predict_run(ref, usage, i, run)
    if isinstance(p, str):
        fam = printed_family(ref, usage, i, run)
        return ReferenceRow(ref.name, i, config, "", None, None, None, unavailable=p, family=fam,
                            **row_label(ref, run, i, fam, usage.frameworks))
    par, result = p.par, p.result
    config += f", t{par.tp} p{par.pp} d{par.dp} c{par.cp} v{par.virtual_stages} z{par.zero} {par.recompute}"
    config += f" every {par.recompute_every}" if par.recompute_every > 1 else ""
    config += f" HSDP shard {par.shard}" if par.shard < par.dp else ""
    config += f" ({'+'.join(par.recompute_modules)})" if par.recompute_modules else ""
    detail = ("assumed " + ", ".join(p.used) if p.used else "") + ("" if result.fits else
                                                                    f" (predicted OOM: {result.memory_per_gpu_GiB['total']:.1f} GiB)")
    regime = result.regime   # the answer's own regime (trust/regime.llm_regime_of, host-bound flag included)
    fam = published_family(p.framework.name, bool(p.model.experts), p.model.seq, par.zero, p.batch.precision)
    return ReferenceRow(ref.name, i, config, p.metric, p.measured, p.predicted, p.error, detail=detail.strip(),
                        regime=regime.key, scale=regime.scale, gpu=regime.gpu or source_gpu(ref), family=fam,
                        source_group=ref.shared_group,
                        **row_label(ref, run, i, fam, usage.frameworks))


def validate_published_llm(path: str | Path | None = None) -> ReferenceValidation:
    """Every llm-*.yaml of a folder (default calibration/published), or one file, against the LLM model."""
    rows, sources, skipped = [], {}, []
    for file in published_files(path, "llm-"):
        ref = read_published(file, "published-llm-run")
        usage = llm_usage(ref)
        sources[ref.name] = ref.summary_why()
        failed: dict[str, list[int]] = {}       # one line per distinct problem of a file, naming its runs
        for i, run in enumerate(ref.runs):
            try:
                rows.append(_row(ref, usage, i, run))
            except SimclusterError as exc:
                failed.setdefault(exc.one_line(), []).append(i)
            except (KeyError, TypeError, ValueError, ArithmeticError) as exc:   # int(.inf): OverflowError
                failed.setdefault(f"cannot read the run ({type(exc).__name__}: {exc})", []).append(i)
        for message, runs in failed.items():
            which = "every run" if len(runs) == len(ref.runs) > 1 else f"runs[{', '.join(map(str, runs))}]"
            skipped.append(f"{ref.path}: {which}: {message}")
    return ReferenceValidation("published llm", TARGET, rows, sources, skipped)
