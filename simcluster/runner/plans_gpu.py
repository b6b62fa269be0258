"""What `simcluster collect` runs for the GPU tools: gpu-micro (the GPU card's micro-benchmarks) and
llm-step (Llama-shaped training steps, the held-out set for the LLM step model).

llm-step runs one process per preset and mode, each timing every --llm-shapes SEQ:MICRO_BATCH in turn;
modes other than `single` run under torchrun over all the host's GPUs (`--gpus`), NVLink multicast off.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from simcluster.errors import SimclusterError
from simcluster.runner.collect import Step
from simcluster.runner.llm_ac import parse_mode
from simcluster.runner.llm_decoder import PRESETS
from simcluster.runner.llm_step import MODES, parse_shapes

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
    compiles, acs = tuple(getattr(options, "llm_compile", (False,))), _ac_modes(options)
    if True in compiles and (any(a != "none" for a in acs) or any(m.startswith("pp") for m in options.llm_modes)):
        raise SimclusterError("--llm-compile: not with checkpointing (--llm-checkpointing on/both, --llm-ac-modes other "
                              "than none) or a pp mode (llm-step --compile runs neither)", hint="collect those in a separate bundle")
    # (checkpointing mode, compile) per run: each checkpointing mode, then each compile setting (never both on)
    variants = [(ac, False) for ac in acs] + [("none", True) for c in compiles if c]
    variants = [v for v in variants if v[0] != "none" or v[1] or False in compiles]
    steps = []
    for mode in options.llm_modes:
        world = 1 if mode == "single" else gpus
        if world < 2 and mode != "single":
            raise SimclusterError(f"--llm-modes {mode}: needs 2 or more GPUs, this host has {gpus}")
        launcher = ([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(world)]
                    if mode != "single" else [sys.executable])
        for preset in options.llm_presets:
            for n in layers or (None,):
                for ac, comp in variants:
                    argv = [*launcher, "-m", "simcluster.runner.llm_step", "--preset", preset, "--mode", mode,
                            "--shapes", options.llm_shapes, "--steps", str(options.llm_steps)] + (["--clocks"] if options.llm_clocks else [])
                    argv += (["--layers", str(n)] if n else []) + _ac_argv(ac) + (["--compile"] if comp else [])
                    run_id = (f"{preset}{f'-L{n}' if n else ''}-{mode}{world if world > 1 else ''}{_ac_suffix(ac)}"
                              f"{'-compile' if comp else ''}")
                    steps.append(Step("llm-step", run_id, argv, _env(), options.timeout_s,
                                      meta={"preset": preset, "mode": mode, "world_size": world, "shapes": options.llm_shapes,
                                            "layers": n, "activation_checkpointing": ac != "none", "ac_mode": ac,
                                            "compile": comp}))
    return steps


def _ac_modes(options) -> tuple[str, ...]:
    """The llm-step runs' checkpointing modes: --llm-ac-modes (each checked), else --llm-checkpointing's off / on."""
    if not getattr(options, "llm_ac_modes", ()):
        return tuple("full" if ckpt else "none" for ckpt in getattr(options, "llm_checkpointing", (False,)))
    try:
        return tuple(parse_mode(m) for m in options.llm_ac_modes)
    except argparse.ArgumentTypeError as exc:
        raise SimclusterError(f"--llm-ac-modes: {exc}") from None


def _ac_argv(ac: str) -> list[str]:
    return [] if ac == "none" else ["--activation-checkpointing"] if ac == "full" else ["--ac-mode", ac]


def _ac_suffix(ac: str) -> str:
    return "" if ac == "none" else "-ckpt" if ac == "full" else "-ac-" + ac.replace(":", "")
