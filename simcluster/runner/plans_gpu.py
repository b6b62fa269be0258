"""What `simcluster collect` runs for the GPU tools: gpu-micro (the GPU card's micro-benchmarks) and
llm-step (Llama-shaped training steps, the held-out set for the LLM step model).

llm-step runs one process per preset and mode, each timing every --llm-shapes SEQ:MICRO_BATCH in turn;
modes other than `single` run under torchrun over all the host's GPUs (`--gpus`), NVLink multicast off.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from simcluster.errors import SimclusterError
from simcluster.runner.collect import Step
from simcluster.runner.llm_step import MODES, PRESETS, parse_shapes

GPU_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"}


def _env() -> dict[str, str]:
    """Runs start in their run folder: the package root goes first on PYTHONPATH so `-m simcluster.runner...` resolves."""
    root = str(Path(__file__).resolve().parents[2])
    return {**GPU_ENV, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}


def gpu_micro_steps(options) -> list[Step]:
    argv = [sys.executable, "-m", "simcluster.runner.gpu_micro"] + (["--quick"] if options.gpu_micro_quick else [])
    sections = getattr(options, "gpu_micro_sections", "")
    if sections:
        if not all(s.replace("-", "").replace("8", "").isalpha() for s in sections.split(",")):
            raise SimclusterError(f"--gpu-micro-sections: {sections[:80]!r} is not a comma-separated list of section names")
        argv += ["--sections", sections]
    return [Step("gpu-micro", "gpu-micro", argv, _env(), options.timeout_s,
                 meta={"quick": options.gpu_micro_quick, "sections": sections or "default"})]


def llm_steps(options, gpus: int) -> list[Step]:
    bad = [p for p in options.llm_presets if p not in PRESETS]
    if bad:
        raise SimclusterError(f"--llm-presets: unknown preset {bad[0]!r}", hint=f"one of {', '.join(PRESETS)}")
    bad = [m for m in options.llm_modes if m not in MODES]
    if bad:
        raise SimclusterError(f"--llm-modes: unknown mode {bad[0]!r}", hint=f"one of {', '.join(MODES)}")
    try:
        parse_shapes(options.llm_shapes)
    except SystemExit as exc:
        raise SimclusterError(str(exc)) from None
    layers = tuple(getattr(options, "llm_layers", ()) or ())
    if any(n < 1 for n in layers):
        raise SimclusterError(f"--llm-layers: layer counts must be >= 1, got {', '.join(map(str, layers))}")
    compiles = tuple(getattr(options, "llm_compile", (False,)))
    if True in compiles and (True in getattr(options, "llm_checkpointing", (False,)) or any(m.startswith("pp") for m in options.llm_modes)):
        raise SimclusterError("--llm-compile: not with --llm-checkpointing on/both or a pp mode (llm-step --compile runs "
                              "neither)", hint="collect those in a separate bundle")
    # (checkpointing, compile) per run: each checkpointing setting, then each compile setting (never both on)
    variants = [(c, False) for c in getattr(options, "llm_checkpointing", (False,))] + [(False, True) for c in compiles if c]
    variants = [v for v in variants if v[0] or v[1] or False in compiles]
    steps = []
    for mode in options.llm_modes:
        world = 1 if mode == "single" else gpus
        if world < 2 and mode != "single":
            raise SimclusterError(f"--llm-modes {mode}: needs 2 or more GPUs, this host has {gpus}")
        launcher = ([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(world)]
                    if mode != "single" else [sys.executable])
        for preset in options.llm_presets:
            for n in layers or (None,):
                for ckpt, comp in variants:
                    argv = [*launcher, "-m", "simcluster.runner.llm_step", "--preset", preset, "--mode", mode,
                            "--shapes", options.llm_shapes, "--steps", str(options.llm_steps)] + (["--clocks"] if options.llm_clocks else [])
                    argv += (["--layers", str(n)] if n else []) + (["--activation-checkpointing"] if ckpt else [])
                    argv += ["--compile"] if comp else []
                    run_id = (f"{preset}{f'-L{n}' if n else ''}-{mode}{world if world > 1 else ''}{'-ckpt' if ckpt else ''}"
                              f"{'-compile' if comp else ''}")
                    steps.append(Step("llm-step", run_id, argv, _env(), options.timeout_s,
                                      meta={"preset": preset, "mode": mode, "world_size": world, "shapes": options.llm_shapes,
                                            "layers": n, "activation_checkpointing": ckpt, "compile": comp}))
    return steps
