"""Published LLM training runs (calibration/published/llm-*.yaml) against the LLM model:
`simcluster validate --published llm [FOLDER | FILE]`.

Each row is predicted from the architecture, parallelism and batch the source prints (reference/llm_specs.py); what the
source leaves out (null) is filled from the file's `simcluster.assumptions` (printed with every row): parallelism and batch keys by name,
model keys per model name from `models` (a public recipe's or paper's dimensions, `from` naming it) or ffn from
`ffn_per_hidden` (an integer; GPT-3's ffn = 4 hidden). A row whose model or batch cannot be filled has no prediction,
with the reason, and so has a row in `simcluster.runs_not_compared` (what the model cannot express). The machine is the
file's `simcluster.machine` (GPU card, NIC card and `nics_per_node` of it, default 8: one per GPU, NVLink collective
card; `nics_assumed` where the source does not state its NICs: rows across nodes print "assumed NICs"), the file's
system.gpus_per_node GPUs per node (8 where not printed) on a non-blocking rail-optimized fabric: the sources' own fabrics
differ (Llama 3: 1:7 oversubscribed aggregation layer; Selene: three-level fat tree).

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
from simcluster.llm.spec import FP8_SCALINGS
from simcluster.published import Published, checked, flag, one_of, published_files, read_published, text
from simcluster.reference import source_gpu
from simcluster.reference.llm_frameworks import FileFrameworks, file_frameworks, framework_name, row_label
from simcluster.reference.llm_specs import FILL_PARSERS, MODEL_PARSERS, NODE_GPUS, filled_model, spec_of
from simcluster.results import ReferenceRow, ReferenceValidation
from simcluster.strict import count, field, known_keys
from simcluster.trust.regime import published_family

TARGET = 0.10
MACHINE_KEYS = {"gpu_card", "nic_card", "nvlink_card", "nics_per_node", "nics_assumed"}   # nics_assumed: what the source leaves out

# a file's `simcluster.memory` / `memory_by_model[NAME]`: the recipe's memory settings (llm/framework.FrameworkSpec), `from` citing them
MEMORY_PARSERS = {"grad_buffer_bytes": one_of((2, 4)), "state_bytes": one_of((4, 12)), "master_remainders": flag,
                  "fp8_params": flag, "from": text}
# a file's `simcluster.recipe` / `recipe_by_model[NAME]`: the recipe's kernel choices the framework's default does not state
# (llm/framework.FrameworkSpec; rope_fusion: Megatron-Core's apply_rope_fusion; moe_graphs: llm/moe_graphs.py;
# moe_router_fusion: false = Megatron-Core's unfused router, llm/moe_router_unfused.py), `from` citing them
# fp8_scaling: Transformer Engine's FP8 recipe where the row prints plain "FP8" but the recipe scales per tensor
# ("current": Megatron-Bridge's fp8_cs presets), carried to the batch (llm/spec.BatchSpec), not the framework
RECIPE_PARSERS = {"rope_fusion": flag, "moe_graphs": flag, "moe_router_fusion": flag, "fp8_scaling": one_of(FP8_SCALINGS), "from": text}


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
    nics_assumed: str = ""            # simcluster.machine.nics_assumed: the NICs the source does not state (rows across nodes say so)


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
    assumed = "" if machine.get("nics_assumed") is None else checked(machine, "nics_assumed", f"{ref.path}: simcluster.machine", text)
    return LlmUsage(*cards, nics, {**assumptions, "models": models}, per_node, frameworks, assumed)


def machine_for(usage: LlmUsage, gpus: int):
    from simcluster.scenario_machine import FabricConfig, Machine, NicSpec

    per_node = usage.gpus_per_node
    nodes = max(1, gpus // per_node)
    fabric = FabricConfig("rail-optimized", 64, 32, 1.0, 1, 100e-9, 600e-9, "cut-through")
    return Machine(usage.nvlink_card, min(per_node, gpus), nodes, NicSpec(usage.nic_card, usage.nics_per_node, 1) if nodes > 1 else None,
                   fabric if nodes > 1 else None, 112.0, gpu_card=usage.gpu_card)


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
    used = list(p.used) + (["NICs"] if usage.nics_assumed and int(run["gpus"]) > usage.gpus_per_node else [])   # rows across nodes
    detail = ("assumed " + ", ".join(used) if used else "") + ("" if result.fits else
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
