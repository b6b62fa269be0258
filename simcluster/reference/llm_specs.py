"""A published LLM row's model, parallel split and batch (llm/spec.py's TransformerSpec, ParallelSpec, BatchSpec) as
reference/llm.py predicts it: `spec_of`, each null the source leaves filled from its file's `simcluster.assumptions`
(parallel and batch keys by name, FILL_PARSERS; model keys per model name, MODEL_PARSERS, or ffn from `ffn_per_hidden`:
`filled_model`), each value checked by its key's parse; the assumptions used are returned to be printed with the row.
A row whose model or batch cannot be filled has no spec, with the reason.
"""

from __future__ import annotations

from simcluster.llm.spec import (
    GRAD_SYNCS,
    MLPS,
    MOE_DISPATCHERS,
    MOE_STATED,
    MOE_SWITCHES,
    RECOMPUTE,
    RECOMPUTE_MODULES,
    BatchSpec,
    ParallelSpec,
    TransformerSpec,
)
from simcluster.published import checked, flag, one_of, text
from simcluster.strict import count

MODEL_KEYS = ("layers", "hidden", "heads", "vocab", "seq", "ffn")
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
# a row's printed precision -> the model's GEMM precision: per-tensor-scaled FP8 (Transformer Engine's delayed or current
# scaling) runs as fp8; block-scaled formats (MXFP8, NVFP4) and anything else are refused, not read as bf16
PRECISIONS = {"bf16": "bf16", "mixed 16-bit": "bf16", "fp8": "fp8", "fp8-cs": "fp8"}
FP8_SCALING = {"fp8-cs": "current"}   # the scaling recipe a printed precision names (default delayed: TE's default recipe)


def spec_of(run: dict, assumed: dict, node_gpus: int = NODE_GPUS) -> tuple[tuple | None, str, list[str]]:
    """(TransformerSpec, ParallelSpec, BatchSpec) of a row, or None and what the source does not give; and the
    assumptions used for its nulls. `assumed` is LlmUsage.assumptions; a row value of the wrong type is one line
    naming its key. node_gpus: the machine's GPUs per node (HSDP's default shard group)."""
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
