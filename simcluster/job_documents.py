"""The scenario's job kinds, declared once (simcluster.schema, pydantic v2): each job's fields with their types, units,
ranges, defaults and the cross-field rules inside the job. The job readers (scenario_jobs.py, llm/job.py) read a job
through its declaration (ScenarioReader.declared) and take the typed fields from it; what they still check is the job
against the machine it runs on and the models' own rules (a parallel layout the model cannot split), which no document
alone can say. A job's undeclared key is refused (a typo would be ignored); an error is one line FILE:LINE: KEY.

    kind               declaration         reader
    collective_sweep   SWEEP               scenario_jobs._sweep
    qperf              QPERF               scenario_jobs._qperf
    concurrent         CONCURRENT          scenario_jobs._concurrent
    training           TRAINING            scenario_jobs._training
    llm_training       LLM_TRAINING        llm/job.read_llm_job (its reliability: block, Reliability: llm/reliability.py)

Vocabularies that belong to a model (collective algorithms, recompute modes, precisions) are Choice fields: the reader
gives the names at validation, so the declaration does not import the model.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Union

from pydantic import AfterValidator, Discriminator, Tag, field_validator, model_validator

from simcluster import units
from simcluster.documents import MAX_GPUS, MAX_NODES
from simcluster.errors import SimclusterError
from simcluster.schema import Choice, Count, Flag, ListOf, Number, OneOf, Parsed, Quantity, Section, Text

MAX_INTEGER = 2**40        # any other count: a bound that keeps arithmetic finite
MAX_TRANSFORMER = 2**24     # any other transformer dimension (an expert count, a LoRA rank, a layer of a layout)
MODEL_MAX = {"layers": 16_384, "hidden": 2**20, "heads": 2**16, "kv_heads": 2**16, "vocab": 2**24, "seq": 2**24}

SizeArg = Quantity(units.parse_size_arg, 0.0, float(units.MAX_QUANTITY), above=False, what="size")   # '8', '128M', '16GiB'
Time = Quantity(units.parse_time, 0.0, 86400.0 * 365, above=False, what="time")
CardPath = Text(4096)


def node_ids(spec) -> tuple[int, ...]:
    """A node group: '0-7' (a range), '0-15/2' (a stride), or a list of node ids; >= 2 distinct ids >= 0 (ValueError)."""
    if isinstance(spec, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in spec):
        ids = list(spec)
    elif isinstance(spec, str) and re.fullmatch(r"\d{1,7}-\d{1,7}(/\d{1,7})?", spec.strip()):
        span, _, step = spec.strip().partition("/")
        lo, hi = (int(x) for x in span.split("-"))
        if step and int(step) < 1:
            raise ValueError(f"the stride in {spec!r} must be >= 1")
        ids = list(range(lo, min(hi, MAX_NODES) + 1, int(step or 1)))
    else:
        raise ValueError("expected a node range like '0-7', '0-15/2' or a list of node ids")
    if len(ids) < 2 or len(set(ids)) != len(ids) or min(ids) < 0 or max(ids) >= MAX_NODES:
        raise ValueError(f"a job needs >= 2 distinct nodes from 0 to {MAX_NODES - 1:,}")
    return tuple(ids)


def _node_group(spec):
    node_ids(spec)
    return spec


NodeGroup = Annotated[Any, AfterValidator(_node_group)]


class Sweep(Section):
    kind: Text(64)
    op: Text(64)
    ranks: Count(1, MAX_GPUS) = None           # default: every GPU of the machine
    min_size: SizeArg = 8
    max_size: SizeArg = "128M"
    factor: Count(2, 2**20) = 2
    engine: OneOf("analytic", "des") = "analytic"
    algorithm: Choice("algorithm") = "auto"
    card: CardPath = None                      # this sweep's own collective card (one node)
    measured: Text(4096) = None                # a trace bundle or nccl-tests log to print beside the prediction

    @model_validator(mode="after")
    def _sizes_ordered(self):
        if units.parse_size_arg(self.min_size) > units.parse_size_arg(self.max_size):
            raise ValueError("min_size: min_size is larger than max_size")
        return self


SWEEP = Sweep

QPERF_TESTS = ("tcp_bw", "tcp_lat", "rc_bw", "rc_lat")


class Qperf(Section):
    kind: Text(64)
    tests: ListOf(OneOf(*QPERF_TESTS), min_len=1, max_len=len(QPERF_TESTS) * 16)
    streams: Count(1, 4096) = 1


QPERF = Qperf


class Concurrent(Section):
    kind: Text(64)
    op: Text(64)
    size: SizeArg
    groups: ListOf(NodeGroup, min_len=1, max_len=MAX_NODES // 2)
    algorithm: Choice("algorithm") = "auto"


CONCURRENT = Concurrent


class Storage(Section):
    workload: CardPath
    nvme: CardPath
    drives: Count(1, 4096) = 1
    io_size: SizeArg = "4MiB"


class Training(Section):
    kind: Text(64)
    workload: CardPath
    ddp: CardPath = None
    dataset_samples: Count(1, MAX_INTEGER) = None
    epochs: Number(1e-6, 1e9) = 1
    loader_cpu_per_sample: Time = "0s"        # host core-seconds to decode one sample
    storage_stall: Time = "0s"                # a fixed input-pipeline wait per step
    storage: Storage = None                   # or: the loader simulated on local NVMe drives


TRAINING = Training


def _count(value):
    try:
        units.parse_count(value)
    except SimclusterError as exc:
        raise ValueError(exc.message) from None
    return value


_Optional = Count(0, MAX_TRANSFORMER)


class Model(Section):
    layers: Count(1, MODEL_MAX["layers"])
    hidden: Count(1, MODEL_MAX["hidden"])
    heads: Count(1, MODEL_MAX["heads"])
    vocab: Count(1, MODEL_MAX["vocab"])
    seq: Count(1, MODEL_MAX["seq"])
    ffn: _Optional = None                # required for a dense model; 0 allowed with experts
    kv_heads: Count(1, MODEL_MAX["kv_heads"]) = None          # default: heads
    experts: _Optional = 0
    top_k: _Optional = 0
    expert_ffn: _Optional = 0
    attn_head_dim: _Optional = 0
    q_lora_rank: _Optional = 0
    kv_lora_rank: _Optional = 0
    qk_rope_dim: _Optional = 0
    v_head_dim: _Optional = 0
    shared_expert_ffn: _Optional = 0
    dense_layers: _Optional = 0
    mtp_layers: _Optional = 0
    expert_groups: _Optional = 0
    group_topk: _Optional = 0
    window: _Optional = 0
    full_attention_every: _Optional = 0
    tied_embeddings: Flag = False
    mlp: OneOf("swiglu", "gelu") = "swiglu"
    dropout: Flag = False
    qk_norm: Flag = False
    rotary: Flag = True

    @model_validator(mode="after")
    def _ffn(self):
        if self.ffn is None and not self.experts:
            raise ValueError("ffn: missing (a dense model needs its MLP width; a MoE model sets experts)")
        if self.ffn == 0 and not self.experts:
            raise ValueError("ffn: expected an integer from 1 (a dense model has an MLP), got 0")
        return self


MODEL_VARIANTS = ("attn_head_dim", "q_lora_rank", "kv_lora_rank", "qk_rope_dim", "v_head_dim", "shared_expert_ffn",
                  "dense_layers", "mtp_layers", "expert_groups", "group_topk", "window", "full_attention_every")
_Degree = Count(1, MAX_GPUS)


class Parallel(Section):
    tp: _Degree = 1
    pp: _Degree = 1
    dp: _Degree = 1
    cp: _Degree = 1
    ep: _Degree = 1
    virtual_stages: Count(1, MAX_TRANSFORMER) = 1
    expert_tp: Count(0, MAX_GPUS) = 0
    dp_shard: Count(0, MAX_GPUS) = 0          # HSDP (zero 3): shard group size, dividing dp; 0 = dp (llm/hsdp.py)
    grad_sync: OneOf("micro_batch", "step") = None   # DP gradients reduced every micro-batch or once a step (llm/grad_sync.py)
    zero: Number(0, 3, integer=True) = 0
    recompute: Choice("recompute") = "none"
    recompute_modules: ListOf(Text(64), max_len=64) = ()
    recompute_every: Count(1, MAX_TRANSFORMER) = 1
    pipeline_layout: ListOf(Count(0, MAX_TRANSFORMER), max_len=MAX_TRANSFORMER) = ()
    moe_dispatcher: Choice("moe_dispatcher") = "alltoall"
    pp_schedule: Choice("pp_schedule") = "1f1b"
    sequence_parallel: Flag = False
    tp_comm_overlap: Flag = False
    overlap_param_gather: Flag = False
    moe_shared_expert_overlap: Flag = False
    moe_a2a_overlap: Flag = False
    moe_pad_to_capacity: Flag = False        # Megatron-Core >= 0.11's moe_pad_expert_input_to_capacity: no dispatcher sync (llm/moe_sync)


class Framework(Section):
    name: Choice("framework")
    host: Text(4096) = None                  # torch: a folder of llm-step runs
    compile: Flag = False                    # torch: each decoder block under torch.compile (llm/compiled.py)
    rope_fusion: Flag = None                 # MLA's rotary: Megatron-Core's apply_rope_fusion (llm/mla_layout.py); null: the framework's
    moe_graphs: Flag = None                  # MoE router and dispatcher preprocess in CUDA graphs (llm/moe_graphs.py); null: captured
    moe_router_fusion: Flag = None           # Megatron-Core's fused MoE router; false: its unfused one (llm/moe_router_unfused.py); null: fused


Rate = Quantity(units.parse_bandwidth, 0.0, 1e18, above=True, what="rate", si=True)   # bytes/s, > 0


def _interval(value):
    if value == "auto":
        return None
    try:
        seconds = units.parse_time(value)
    except SimclusterError as exc:
        raise ValueError(exc.message) from None
    if not 0 < seconds <= 86400.0 * 365:
        raise ValueError("expected auto or a positive time")
    return seconds


class PublishedRate(Section):
    published: Text(4096)                  # a calibration/published/reliability-*.yaml file
    run: Count(0, 10**6) = 0


class FileSystem(Section):
    filesystem: Rate                       # a shared file system's aggregate write rate


class LocalDrives(Section):
    nvme: CardPath                         # an nvme card (its write_bandwidth)
    drives: Count(1, 64)
    replica: Rate                          # the shared file system a checkpoint is copied on to

    @model_validator(mode="before")
    @classmethod
    def _replica(cls, value):
        if isinstance(value, dict) and "replica" not in value:
            raise ValueError("replica: a checkpoint on local NVMe is lost with its node, and most interruptions are "
                             "hardware (324 of Llama 3's 419: GPU, host, network): name the shared file system it is "
                             "copied on to (replica: RATE, e.g. 1TB/s)")
        return value


def _by_key(tags: dict[str, str], default: str):
    """A union read by which key a mapping has (its Tag names start 'tag:', left out of an error's key)."""
    return Discriminator(lambda v: next((tag for key, tag in tags.items() if isinstance(v, dict) and key in v), default))


class Checkpoint(Section):
    storage: Annotated[Union[Annotated[FileSystem, Tag("tag:fs")], Annotated[LocalDrives, Tag("tag:nvme")]],  # noqa: UP007
                       _by_key({"filesystem": "tag:fs"}, "tag:nvme")]
    interval: Annotated[Any, AfterValidator(_interval)] = None        # seconds; 'auto' or absent: None (Young/Daly)
    async_copy: Rate = None                # GPU -> host copy rate: an asynchronous checkpoint

    @field_validator("storage", mode="before")
    @classmethod
    def _one_place(cls, value):
        if not isinstance(value, dict) or len({"nvme", "filesystem"} & set(value)) != 1:
            raise ValueError("expected {nvme: CARD, drives: N, replica: RATE} (local drives per node) or "
                             "{filesystem: RATE} (a shared file system)")
        return value


class Reliability(Section):
    failure_rate: Annotated[Union[Annotated[Parsed("failure_rate"), Tag("tag:text")],  # noqa: UP007
                                  Annotated[PublishedRate, Tag("tag:published")]],
                            Discriminator(lambda v: "tag:published" if isinstance(v, dict) else "tag:text")]
    restart: Quantity(units.parse_time, 0.0, 86400.0 * 365, above=False, what="time", si=True)
    checkpoint: Checkpoint


class LlmTraining(Section):
    kind: Text(64)
    model: Model
    parallel: Parallel
    global_batch: Count(1, MAX_INTEGER)
    micro_batch: Count(1, MAX_INTEGER)
    precision: Choice("precision") = "bf16"
    fp8_scaling: Choice("fp8_scaling") = "delayed"   # Transformer Engine's FP8 recipe: delayed (amax history) or current
    train_tokens: Annotated[Any, AfterValidator(_count)] = None     # '15T', 1.5e12
    reliability: Reliability = None          # llm/reliability.py builds the model's Reliability from it
    framework: Annotated[Union[Annotated[Choice("framework"), Tag("str")], Annotated[Framework, Tag("dict")]],  # noqa: UP007
                         Discriminator(lambda v: "dict" if isinstance(v, dict) else "str")] = None

    @model_validator(mode="after")
    def _tokens_need_reliability(self):
        if self.train_tokens is not None and self.reliability is None:
            raise ValueError("train_tokens: days to train need a reliability: block (every large run is interrupted); "
                             "without one, the printed tokens/s is the whole answer")
        return self


LLM_TRAINING = LlmTraining
