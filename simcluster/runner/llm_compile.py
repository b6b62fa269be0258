"""llm-step --compile (issue 44): torch.compile per decoder layer, as torchtitan compiles its Llama blocks
(torchtitan/models/llama3/infra/parallelize.py apply_compile: each TransformerBlock replaced by torch.compile(block)),
in Inductor's default mode (no CUDA graphs: mode "default", not "reduce-overhead"), one static graph per shape
(--compile-scope layer, the default); --compile-scope model compiles the whole model after its parallel wrapper, as
KempnerForge compiles its FSDP2 model (session 46); --ac-mode full checkpoints each block around the compiled code,
(dynamic=False: a second shape in a process recompiles instead of switching to a dynamic-shape graph). The embedding,
final norm, LM head, loss and optimizer stay eager. The first warm-up step of each shape holds the compilation (the
forward's graph and, at its first backward, the backward's); the runner times the warm-up steps one by one so the
compile time is on record, and times the steps after them as in eager. torch is passed in, never imported here.
"""

from __future__ import annotations

import statistics

SCOPES = {"layer": "each decoder layer (torch.compile(layer), before any parallel wrapper; torchtitan's); embedding, "
                   "final norm, head, loss, optimizer eager; under --ac-mode full torch.utils.checkpoint runs around each "
                   "compiled layer (its recomputation runs the compiled forward graph again)",
          "model": "the whole model (torch.compile(model) after the parallel wrapper, as KempnerForge's trainer: each "
                   "layer in checkpoint_wrapper (NO_REENTRANT) under --ac-mode full, FSDP2's fully_shard per layer, then "
                   "the model compiled, the checkpoint inside the compiled code); dynamo breaks the graph at FSDP2's hooks "
                   "(skip_fsdp_hooks: unique_graphs and graph_breaks per shape say where); the optimizer eager"}
SETTINGS = {"backend": "inductor", "mode": "default (no CUDA graphs)", "dynamic": False, "fullgraph": False}


def add_arguments(ap) -> None:
    """llm-step's --compile and --compile-scope."""
    ap.add_argument("--compile", action="store_true", help="torch.compile each decoder layer (Inductor, default mode, no "
                    "CUDA graphs; llm_compile.py): warm-up steps timed one by one, compile time recorded per shape")
    ap.add_argument("--compile-scope", choices=tuple(SCOPES), default="layer", help="with --compile: each decoder layer "
                    "before the parallel wrapper (layer), or the whole model after it (model; single, fsdp)")


def before_wrapper(torch, decoder, scope: str, ac_mode: str) -> None:
    """What --compile does to the decoder before its parallel wrapper: scope layer, every layer compiled
    (compile_layers); scope model with --ac-mode full, every layer checkpoint-wrapped (wrap_checkpoint)."""
    if scope == "layer":
        compile_layers(torch, decoder)
    elif ac_mode == "full":
        wrap_checkpoint(torch, decoder)


def check_args(mode: str, ac_mode: str, scope: str = "layer", compiling: bool = True) -> None:
    """What --compile does not run with, refused before torch is imported; `ac_mode` is llm_ac.resolve's (none, full,
    every:N, op); `scope` --compile-scope's (layer, model); `compiling` whether --compile was given: without it a scope
    other than the default is refused (the run would be eager, its document naming no scope: cold review B46 item 11)."""
    if not compiling:
        if scope != "layer":
            raise SystemExit(f"--compile-scope {scope} without --compile: the scope applies to a compiled run only "
                             "(add --compile, or drop --compile-scope)")
        return
    if mode.startswith("pp"):
        raise SystemExit(f"--compile with --mode {mode}: the pipeline's stages are not compiled by this runner "
                         "(single, ddp, fsdp, tp and the 2-D meshes are)")
    if ac_mode not in ("none", "full"):
        raise SystemExit(f"--compile with --ac-mode {ac_mode}: not run by this runner (none or full: every block "
                         "checkpointed around its compiled graph)")
    if scope == "model" and mode not in ("single", "fsdp"):
        raise SystemExit(f"--compile-scope model with --mode {mode}: run for single and fsdp only")


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


def wrap_checkpoint(torch, decoder) -> None:
    """--compile-scope model with --ac-mode full: each decoder layer replaced by checkpoint_wrapper(layer) (non-reentrant,
    llm_ac.PRESERVE_RNG_STATE), before the parallel wrapper, as KempnerForge's apply_ac (kempnerforge/distributed/
    parallel.py at 01b461a): FSDP2 then shards the wrappers, so its hooks run outside the checkpoint and dynamo traces
    the checkpoint into each block's graph; the decoder's own checkpointing (llm_ac.run_block) is switched off."""
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointImpl, checkpoint_wrapper

    from simcluster.runner.llm_ac import PRESERVE_RNG_STATE

    for i, layer in enumerate(decoder.layers):
        decoder.layers[i] = checkpoint_wrapper(layer, checkpoint_impl=CheckpointImpl.NO_REENTRANT,
                                               preserve_rng_state=PRESERVE_RNG_STATE)
    decoder.checkpoint = "none"


def compile_model(torch, model, layers: int):
    """torch.compile of the whole (already wrapped) model, in SETTINGS' mode; dynamo's recompile limit raised above the
    layer count as compile_layers does (each layer's frame between FSDP2's graph breaks is its own compile)."""
    config = torch._dynamo.config
    for name in ("recompile_limit", "cache_size_limit"):
        if hasattr(config, name):
            setattr(config, name, max(getattr(config, name), layers + 8))
    return torch.compile(model, dynamic=SETTINGS["dynamic"], fullgraph=SETTINGS["fullgraph"])


def describe(torch, scope: str = "layer") -> dict:
    """The manifest's `compile` entry: what was compiled (scope, SCOPES' words) and how, with torch's and Triton's
    versions."""
    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    return {"scope": SCOPES[scope], "scope_flag": scope, **SETTINGS, "torch": torch.__version__, "triton": triton_version}


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
