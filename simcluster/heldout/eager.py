"""Eager PyTorch llm-step runs (torch-amp: fp32 weights under bf16 autocast, fused AdamW) on 1, 2 and 4 H200 GPUs,
predicted from each run's architecture, sequence, micro-batch and mode alone: the interleaved GPU card (fitted on
gpu-micro only), the eager host cost of the run's own mode (fitted on hidden-128 decoders, never on these steps), and
the NVLink or socket collective card of that many ranks. Nothing is fitted on these runs.

Modes onto the model (validation/llm_two_gpu.py's docstring says what each cannot express): ddp ParallelSpec(dp=world),
fsdp ParallelSpec(dp=world, zero=3), tp ParallelSpec(tp=world), pp ParallelSpec(pp=2, gpipe or 1f1b) with 4 micro-batches
(calibration/llm-eager-regimes-2026-11-28), single ParallelSpec() with or without activation checkpointing (full).

Held out: the sealed sets (SEALED), each registered before it was collected, and the registered bundles (REGISTERED).
The three first 2-GPU bundles (DEVELOPMENT) are left out: mechanisms were added after seeing them. The sealed sets were each read
once as registered and may have been looked at since (llm-findings.md): never fitted on, their coverage is held out's optimistic side."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
H100, H200 = "models/gpu/h100-sxm-interleaved.yaml", "models/gpu/h200-sxm-interleaved.yaml"
DEVELOPMENT = ("calibration/h200x2-llm-2gpu-2026-11-23", "calibration/h200x2-llm-2gpu-tp-2026-11-23",
               "calibration/h200x2-llm-2gpu-socket-2026-11-23")
SEALED = ("calibration/h200x2-llm-2gpu-sealed-2026-11-23", "calibration/h200x2-llm-2gpu-sealed-socket-2026-11-23",
          "calibration/h200x2-llm-2gpu-sealed2-2026-11-23", "calibration/h200x2-llm-2gpu-sealed2-socket-2026-11-23",
          "calibration/h200x2-llm-2gpu-sealed3-2026-11-27", "calibration/h200x2-llm-2gpu-sealed6-2026-11-27-ddp",
          "calibration/h200x2-llm-2gpu-sealed6-2026-11-27", "calibration/h200x4-llm-4gpu-sealed4-2026-11-27-ddp",
          "calibration/h200x4-llm-4gpu-sealed4-2026-11-27", "calibration/h200x4-llm-4gpu-sealed4-socket-2026-11-27",
          "calibration/h200x4-llm-4gpu-sealed4-socket-2026-11-27-tp", "calibration/h200x4-llm-4gpu-sealed5-socket-tp-2026-11-27")
REGIMES_BUNDLE = "calibration/llm-eager-regimes-2026-11-28"
MESHES_BUNDLE = "calibration/h200x4-llm-eager-meshes-2026-11-28"   # the 4-GPU layouts (mesh_modes), registered before
MESHES2_BUNDLE = "calibration/h200x4-llm-eager-meshes2-2026-11-28"  # the second 4-GPU set (mesh2_modes), likewise
PIPELINE_BUNDLE = "calibration/h200x4-llm-eager-pipeline-2026-11-28"  # the pipelines at larger micro-batches (pipeline_modes)
TPDP_BUNDLE = "calibration/h200x4-llm-eager-tpdp-2026-11-28"  # TP x DP with host runs, registration and steps on one lease
TPDP2_BUNDLE = "calibration/h200x4-llm-eager-tpdp2-2026-11-28"  # the same on a second lease (session 30)
PIPELINE2_BUNDLE = "calibration/h200x4-llm-eager-pipeline2-2026-11-28"   # pipelines at 16 and 4 micro-batches (SIZES4)
TWO_BUNDLE = "calibration/h200x2-llm-eager-two-2026-11-29"   # DDP / FSDP2 / TP / 2-stage pipelines at 2 GPUs (SIZES5, session 36)
TWOHOST_BUNDLE = "calibration/h200x2-llm-eager-twohost-2026-11-29"   # DDP / FSDP2 / TP with the lease's host runs (SIZES6)
CP_BUNDLE = "calibration/h200x2-llm-eager-cp-2026-11-29"   # torch's context parallelism over 2 ranks at 16K-32K (SIZES7)
POST_BUNDLES = ("calibration/h200x2-llm-eager-post-2026-11-29", "calibration/h200x2-llm-eager-postcp-2026-11-29")   # s37
REGISTERED = (REGIMES_BUNDLE, MESHES_BUNDLE, MESHES2_BUNDLE, PIPELINE_BUNDLE, TPDP_BUNDLE, PIPELINE2_BUNDLE,
              TPDP2_BUNDLE, TWO_BUNDLE, TWOHOST_BUNDLE, CP_BUNDLE, *POST_BUNDLES)   # each against registered.yaml
MESH_HOST = ROOT / MESHES2_BUNDLE / "host"   # the 2-D modes' host runs (tp+ddp, tp+fsdp on 4 ranks, tp on 2), its first call
# each transport's collective card per rank count (the cards `predict collective` uses for H200 at 2 and 4 ranks)
CARDS = {("nvlink", 2): "models/collective/h200x2-primitives.yaml", ("socket", 2): "models/collective/h200x2-socket.yaml",
         ("nvlink", 4): "models/collective/h200x4-primitives.yaml", ("socket", 4): "models/collective/h200x4-socket.yaml"}
WORLDS = (2, 4)
MODE_HOST = ROOT / "calibration" / "h200x2-llm-host-2026-11-23"   # each mode's eager host cost on a 2 x H200 host
H100_HOST = ROOT / "calibration" / "llm-host-2026-11-23"            # the single mode's on an H100 host
SEQ, MICROBATCHES = 2048, 4
SIZES = (("0.3b", 4), ("1b", 2), ("3.1b", 1))                      # the eager-regimes bundle's preset, micro-batch
SIZES2 = (("0.5b", 4), ("2b", 2), ("8b", 1))                       # the second 4-GPU set's
SIZES3 = (("0.3b", 8), ("1b", 4), ("3.1b", 2))                      # the pipeline set's: the first set's presets, 2x micro-batch
SIZES4 = (("0.3b", 4, 16), ("3.1b", 1, 16), ("0.5b", 4, 4))         # pipeline2's (session 30): preset, micro-batch, micro-batches
SIZES5 = (("0.5b", 6), ("2b", 1), ("3b", 3))                       # the two set's (session 36): (preset, tokens) new to calibration/
SIZES6 = (("0.8b", 5), ("1b", 3), ("3.1b", 5))                     # the twohost set's (session 36), likewise new
SIZES7 = (("1b", 1, None, 32768), ("0.5b", 2, None, 32768), ("3b", 1, None, 16384))   # cp's: preset, mb, -, seq (new)


class NotPredicted(Exception):
    """A run the model cannot express; the message says why."""


def pct(pred: float, meas: float) -> float:
    return (pred - meas) / meas * 100


def step_shape(preset: str, seq: int, micro_batch: int, microbatches: int = 1, layers: int | None = None) -> dict:
    """A held-out eager row's shape as its runs' llm-step documents name it (model.preset, model.layers where the run
    set them, shapes[].seq / micro_batch / microbatches): the row's `shape`, by which a study finds the row's processes
    (studies/eager_noise_floors.row_processes) instead of parsing its printed label. microbatches: the micro-batches a
    step accumulates where it is more than one, else 1."""
    return {"preset": preset, "seq": int(seq), "micro_batch": int(micro_batch), "microbatches": int(microbatches),
            "layers": None if layers is None else int(layers)}


def model_of(doc: dict, seq: int):
    from simcluster.llm.spec import TransformerSpec

    m = doc["model"]
    return TransformerSpec(m["layers"], m["hidden"], m["ffn"], m["heads"], m["kv_heads"], m["vocab"], seq,
                           tied_embeddings=bool(m["tied"]))


@dataclass(frozen=True)
class Run:
    path: Path          # the run's folder (or the document itself)
    doc: dict | None    # rank 0's llm-step document; None when the run left none
    env: dict
    failure: str = ""
    world: int = 2      # ranks: the document's world_size, else the runner's record of the run


def _document(text: str) -> tuple[dict | None, str]:
    start = text.find("{")
    try:
        doc = json.loads(text[start:]) if start >= 0 else None
    except json.JSONDecodeError as exc:
        return None, f"not an llm-step JSON document ({exc.msg})"
    if doc is not None and (not isinstance(doc, dict) or doc.get("tool") != "llm-step"):
        return None, "not llm-step output"
    return doc, ""


def process_document(path: Path, mode: str, world: int, preset: str) -> tuple[dict | None, str]:
    """A registered set's process document (runs/NAME.json) when it ran `preset` under `mode` on `world` ranks; else
    None and why in a line (no file: the budget guard skipped it or it failed; no document; another mode or size)."""
    if not path.is_file():
        return None, f"no runs/{path.name} (not run: the budget guard, or it failed)"
    doc, why = _document(path.read_text(errors="replace"))
    if doc is None:
        return None, why or "no llm-step document (the run failed)"
    if doc.get("mode") != mode or doc.get("world_size") != world or (doc.get("model") or {}).get("preset") != preset:
        return None, f"not {mode} / {world} ranks / {preset} (mode {doc.get('mode')}, world {doc.get('world_size')})"
    return doc, ""


def read_runs(bundle: Path, worlds: tuple[int, ...] = WORLDS) -> list[Run]:
    """Every llm-step run of a bundle with a world size in `worlds`: llm-step/*/stdout.txt (run.json beside it), or
    *.json at its top, or runs/*.json."""
    if (bundle / "llm-step").is_dir():
        logs = sorted((bundle / "llm-step").glob("*/stdout.txt"))
    else:
        logs = sorted(p for p in [*bundle.glob("*.json"), *bundle.glob("runs/*.json")] if p.name != "manifest.json")
    out = []
    for log in logs:
        meta_path = log.parent / "run.json" if log.name == "stdout.txt" else None
        try:
            meta = json.loads(meta_path.read_text()) if meta_path and meta_path.is_file() else {}
        except json.JSONDecodeError:
            meta = {}
        meta = meta if isinstance(meta, dict) else {}
        env = meta.get("env", {}) if isinstance(meta.get("env"), dict) else {}
        doc, why = _document(log.read_text().strip())
        if doc is None and not why:
            why = f"no document (run status {meta.get('status', '?')}, exit {meta.get('exit_code', '?')})"
        world = doc.get("world_size", 1) if doc else meta.get("meta", {}).get("world_size", 0)
        if world in worlds:
            out.append(Run(log.parent if meta_path else log, doc, env, why, world))
    return out


def transport_of(bundle: Path, runs: list[Run], forced: str = "auto") -> tuple[str, str]:
    if forced != "auto":
        return forced, "--transport"
    if any(r.env.get("NCCL_P2P_DISABLE") == "1" and r.env.get("NCCL_SHM_DISABLE") == "1" for r in runs):
        return "socket", "the runs' NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1"
    if "socket" in bundle.name:
        return "socket", "'socket' in the bundle's name"
    return "nvlink", "no socket setting recorded"


def mapping(doc: dict, hosts: dict | None = None):
    """(parallelism, framework, data-parallel ranks) of a DDP / FSDP / TP run: the product's eager-torch framework with
    the mode's own host cost when `hosts` has it; NotPredicted for what the model has not."""
    from simcluster.llm import eager
    from simcluster.llm.spec import ParallelSpec

    if "fp32 weights" not in str(doc.get("precision", "")):
        raise NotPredicted(f"precision {doc.get('precision')!r} is not the torch-amp framework")
    world = doc.get("world_size")
    par = {"ddp": ParallelSpec(dp=world), "fsdp": ParallelSpec(dp=world, zero=3), "tp": ParallelSpec(tp=world)}.get(doc.get("mode"))
    if par is None:
        raise NotPredicted(f"mode {doc.get('mode')!r} with {world} ranks has no mapping onto the model")
    return par, eager.torch_framework(par, hosts), par.dp


def rows(run: Run, gpu, net, hosts: dict | None = None, net_is_socket: bool = False) -> list[dict]:
    """One row per shape of a DDP / FSDP / TP run: measured and predicted step (ms) and memory (GiB), or `why` not."""
    from simcluster.errors import SimclusterError
    from simcluster.llm.memory import GiB, memory_per_gpu
    from simcluster.llm.predict import predict_llm
    from simcluster.llm.spec import BatchSpec

    doc = run.doc
    preset = doc["model"].get("preset") or f"{doc['model']['layers']}L/h{doc['model']['hidden']}"
    out = []
    for index, shape in enumerate(doc["shapes"]):
        seq, mb = shape["seq"], shape["micro_batch"]
        row = {"preset": preset, "mode": doc.get("mode"), "seq": seq, "mb": mb, "status": shape["status"], "world": run.world}
        if shape.get("max_memory_allocated_bytes"):
            row["meas_mem_GiB"] = shape["max_memory_allocated_bytes"] / GiB
        if shape["status"] == "ok":
            row["meas_ms"] = shape["median_step_s"] * 1e3
        try:
            par, mode_fw, dp = mapping(doc, hosts)
            if net_is_socket:   # comm_overlap is measured over NVLink (overlap-micro); the socket transport's kernels differ
                mode_fw = replace(mode_fw, comm_interference=False)
            model, batch = model_of(doc, seq), BatchSpec(mb * dp, mb, "bf16")
            mem = memory_per_gpu(model, par, batch, gpu.hbm_capacity_bytes, mode_fw)
            # the runner resets the peak before each shape: only a run's first shape holds the job's first iterations
            row["pred_mem_GiB"], row["fits"] = (mem.allocated if index == 0 else mem.steady_allocated) / GiB, mem.fits
            row["parallel"] = par
            if shape["status"] == "ok":
                r = predict_llm(model, par, batch, gpu, net, doc["world_size"], trace=False, framework=mode_fw)
                row["pred_ms"], row["host_share"] = r.step_time_s * 1e3, r.host_share   # llm/host_bound.py
                row["comm_ms"] = sum(r.breakdown.get(k, 0.0) for k in ("exposed_dp_comm", "exposed_tp_comm")) * 1e3
        except (NotPredicted, SimclusterError) as exc:
            row["why"] = str(exc)
        out.append(row)
    return out


def gpu_card_of(runs: list[Run]) -> str:
    """The interleaved card of the runs' GPU (H100 or H200, from rank 0's device name; H200 when none says)."""
    names = {str(r.doc.get("device", {}).get("name", "")) for r in runs if r.doc}
    return H100 if any("H100" in n for n in names) else H200


def bundle_rows(bundle: Path, hosts: dict | None, transport: str = "auto") -> list[dict]:
    """Every DDP / FSDP / TP shape of a 2- or 4-GPU bundle predicted (rows(); the transport and cards chosen here)."""
    from simcluster.cards import load_collective
    from simcluster.hardware.gpu import load_gpu
    from simcluster.llm.comm import Network

    runs = read_runs(bundle)
    kind, _ = transport_of(bundle, runs, transport)
    out = []
    for world in sorted({r.world for r in runs}):
        same = [r for r in runs if r.world == world and r.doc is not None]
        card, _ = load_collective(ROOT / CARDS[(kind, world)])
        gpu, _ = load_gpu(ROOT / gpu_card_of(same))
        net = Network(card, world)
        out += [{**r, "transport": kind} for run in same for r in rows(run, gpu, net, hosts, kind == "socket")]
    return out
