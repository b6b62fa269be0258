"""Eager PyTorch training (the `llm-step` runner's code, simcluster/runner/llm_step.py) as a framework of the step model:
fp32 weights under bf16 autocast and torch AdamW (framework.TORCH_AMP), with the parallel wrapper the parallel block implies:
  dp > 1, zero 0   torch DDP: its reducer's fp32 bucket copy of the gradients (ddp_bucket_bytes 4; memory and the
                   step's bucket copies, work._ddp_bucket_copies_s); its bucket all_reduces and the backward they
                   overlap slow each other by the GPU card's measured comm_overlap (comm_interference, work._beside:
                   measured for all_reduce beside GEMMs over NVLink; the socket transport is not measured, and
                   validation/llm_two_gpu.py turns it off there)
  dp > 1, zero 3   FSDP2 (fully_shard per layer, MixedPrecisionPolicy bf16 parameters / fp32 reduce): parameters
                   gathered in bf16, the fp32 shard kept as optimizer state, no autocast weight copies; its
                   all_gathers / reduce_scatters beside the compute priced with the same comm_overlap (session 22:
                   all_reduce's terms taken for them, not measured for them)
  tp > 1           DTensor tensor parallelism of the decoder layers (no sequence parallelism); the embedding, final
                   norm and LM head replicated (tp_vocab_split False); each column-parallel linear (q, k, v, gate,
                   up) all-reduces its fp32 input gradient: 5 fp32 all_reduces per layer backward (tp_bwd_allreduces,
                   tp_bwd_bytes; a profiled 2-GPU 0.5B step shows 16 x 5 fp32 and 16 x 2 bf16 all_reduces of T h)
and the host cost of issuing each kernel in that mode (host.py), fitted on a folder of hidden-128 decoders run in
each mode on the machine (MODE-L<layers>.json, llm-step documents: calibration/h200x2-llm-host-2026-11-23 and its
device_run.sh). Only what the runner measures is accepted: pipeline, context and expert parallelism, ZeRO-1/2 and tp
together with dp are refused at their key.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from simcluster import strict
from simcluster.llm import host
from simcluster.llm.framework import TORCH_AMP, FrameworkSpec
from simcluster.llm.spec import BatchSpec, LlmConfigError, ParallelSpec, TransformerSpec

MODES = ("single", "ddp", "fsdp", "tp")


def mode_of(par: ParallelSpec) -> str:
    """The runner's mode a parallel setting is (LlmConfigError at the key for one it has no mode for)."""
    for name in ("pp", "cp", "ep", "virtual_stages"):
        if getattr(par, name) != 1:
            raise LlmConfigError(f"parallel.{name}", f"framework torch runs no {name} (the llm-step runner's modes are "
                                 "single, ddp, fsdp and tp)", hint="use framework: megatron")
    if par.recompute != "none":
        raise LlmConfigError("parallel.recompute", f"framework torch recomputes nothing (the llm-step runner keeps every "
                             f"activation), got recompute: {par.recompute}", hint="use recompute: none or framework: megatron")
    if par.tp > 1 and par.dp > 1:
        raise LlmConfigError("parallel.tp", f"framework torch: tp {par.tp} with dp {par.dp} was never measured (the "
                             "runner's tp mode is tensor parallelism alone)", hint="tp or dp, not both")
    if par.zero in (1, 2):
        raise LlmConfigError("parallel.zero", f"framework torch has DDP (zero 0) and FSDP2 (zero 3), not ZeRO-{par.zero}")
    if par.tp > 1:
        return "tp"
    if par.dp > 1:
        return "fsdp" if par.zero == 3 else "ddp"
    return "single"


def torch_framework(par: ParallelSpec, hosts: dict[str, tuple[float, float, int]] | None = None) -> FrameworkSpec:
    """TORCH_AMP with the wrapper of the parallel setting (module docstring) and, where `hosts` has the mode
    (fit_modes), its host seconds per kernel and per step."""
    mode = mode_of(par)
    fw = TORCH_AMP
    if hosts and mode in hosts:
        fw = replace(fw, host_kernel_s=hosts[mode][0], host_step_s=hosts[mode][1])
    if mode == "ddp":
        return replace(fw, name="torch-ddp", ddp_bucket_bytes=4.0, comm_interference=True)
    if mode == "fsdp":
        return replace(fw, name="torch-fsdp2", param_bytes=2.0, state_bytes=10.0, weight_copy_bytes=0.0, comm_interference=True)
    if mode == "tp":
        return replace(fw, name="torch-dtensor-tp", tp_vocab_split=False, tp_bwd_allreduces=5, tp_bwd_bytes=4)
    return fw


def _parallel(mode: str) -> tuple[ParallelSpec, int]:
    return {"single": (ParallelSpec(), 1), "ddp": (ParallelSpec(dp=2), 2), "fsdp": (ParallelSpec(dp=2, zero=3), 2),
            "tp": (ParallelSpec(tp=2), 1)}[mode]


def _document(path: Path) -> dict:
    text = path.read_text()
    start = text.find("{")
    try:
        doc = strict.loads_json(text[start:]) if start >= 0 else None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not an llm-step JSON document ({exc.msg})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("model"), dict) or not isinstance(doc.get("shapes"), list):
        raise ValueError(f"{path}: not an llm-step JSON document (no model or shapes)")
    return doc


def fit_modes(folder: Path) -> dict[str, tuple[float, float, int]]:
    """Each mode's (host seconds per kernel, host seconds per step, timed shapes) from the folder's MODE-L<n>.json
    runs (hidden-128 decoders: GPU work negligible, so the step is the host): host.fit_host over the layer counts,
    with the model's kernels per layer of that mode. A mode with fewer than two layer counts is left out; a file that
    is not an llm-step document is a ValueError naming it."""
    out = {}
    for mode in MODES:
        par, dp = _parallel(mode)
        points, kernels = [], None
        for path in sorted(folder.glob(f"{mode}-L*.json")):
            doc = _document(path)
            m = doc["model"]
            for shape in doc["shapes"]:
                if shape.get("status") != "ok":
                    continue
                tiny = TransformerSpec(m["layers"], m["hidden"], m["ffn"], m["heads"], m["kv_heads"], m["vocab"], shape["seq"],
                                       tied_embeddings=bool(m["tied"]))
                kernels = host.layer_kernels(tiny, par, BatchSpec(shape["micro_batch"] * dp, shape["micro_batch"]), TORCH_AMP)
                points.append((m["layers"], shape["median_step_s"]))
        if len({p[0] for p in points}) >= 2:
            c, a = host.fit_host(points, kernels)
            out[mode] = (c, a, len(points))
    return out
