"""llm-step --compile (issue 44): torch.compile per decoder layer, as torchtitan compiles its Llama blocks
(torchtitan/models/llama3/infra/parallelize.py apply_compile: each TransformerBlock replaced by torch.compile(block)),
in Inductor's default mode (no CUDA graphs: mode "default", not "reduce-overhead"), one static graph per shape
(dynamic=False: a second shape in a process recompiles instead of switching to a dynamic-shape graph). The embedding,
final norm, LM head, loss and optimizer stay eager. The first warm-up step of each shape holds the compilation (the
forward's graph and, at its first backward, the backward's); the runner times the warm-up steps one by one so the
compile time is on record, and times the steps after them as in eager. torch is passed in, never imported here.
"""

from __future__ import annotations

import statistics

SETTINGS = {"scope": "each decoder layer (torch.compile(layer)); embedding, final norm, head, loss, optimizer eager",
            "backend": "inductor", "mode": "default (no CUDA graphs)", "dynamic": False, "fullgraph": False}


def check_args(mode: str, ac_mode: str) -> None:
    """What --compile does not run with, refused before torch is imported; `ac_mode` is llm_ac.resolve's (none, full,
    every:N, op)."""
    if mode.startswith("pp"):
        raise SystemExit(f"--compile with --mode {mode}: the pipeline's stages are not compiled by this runner "
                         "(single, ddp, fsdp, tp and the 2-D meshes are)")
    if ac_mode != "none":
        raise SystemExit(f"--compile with --ac-mode {ac_mode} (or --activation-checkpointing): not run by this runner "
                         "(compile each block or checkpoint it, not both)")


def compile_layers(torch, decoder) -> int:
    """Replace every decoder layer by its compiled module (before any parallel wrapper, as torchtitan does); the
    number of layers compiled. The layers share one code object: where dynamo guards each layer apart (no inlining of
    nn modules) it compiles once per layer, so its recompile limit is raised above the layer count, or the layers past
    the limit would silently run eager (the record's unique_graphs says which happened)."""
    config = torch._dynamo.config
    for name in ("recompile_limit", "cache_size_limit"):   # the limit's name since torch 2.7, and before
        if hasattr(config, name):
            setattr(config, name, max(getattr(config, name), len(decoder.layers) + 8))
    for i, layer in enumerate(decoder.layers):
        decoder.layers[i] = torch.compile(layer, dynamic=SETTINGS["dynamic"], fullgraph=SETTINGS["fullgraph"])
    return len(decoder.layers)


def describe(torch) -> dict:
    """The manifest's `compile` entry: what was compiled and how, with torch's and Triton's versions."""
    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    return {**SETTINGS, "torch": torch.__version__, "triton": triton_version}


def warmup_record(warmup_times: list[float], timed: list[float], torch) -> dict:
    """A compiled shape's compile record: each warm-up step's wall seconds, the compile time (the first warm-up
    step less the median timed step) and dynamo's graph and graph-break counters (absent where torch has none)."""
    out = {"warmup_step_times_s": warmup_times}
    if warmup_times and timed:
        out["compile_s"] = warmup_times[0] - statistics.median(timed)
    try:
        counters = torch._dynamo.utils.counters
        out["dynamo"] = {"unique_graphs": int(counters["stats"]["unique_graphs"]),
                         "graph_breaks": int(sum(counters["graph_break"].values()))}
    except (AttributeError, KeyError, TypeError):
        pass
    return out
