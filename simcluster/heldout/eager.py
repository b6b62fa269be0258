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


def model_of(doc: dict, seq: int):
    from simcluster.llm.spec import TransformerSpec

    m = doc["model"]
    return TransformerSpec(m["layers"], m["hidden"], m["ffn"], m["heads"], m["kv_heads"], m["vocab"], seq,
                           tied_embeddings=bool(m["tied"]))


def regime_modes():
    """The eager-regimes bundle's layouts (one and two GPUs)."""
    from simcluster.llm.spec import ParallelSpec

    return {"single": ParallelSpec(), "single+ckpt": ParallelSpec(recompute="full"),
            "pp-gpipe": ParallelSpec(pp=2, pp_schedule="gpipe"), "pp-1f1b": ParallelSpec(pp=2)}


def mesh_modes():
    """The 4-GPU layouts of the meshes bundle (runner modes tp+ddp, tp+fsdp, pp+ddp with --group 2, pp on 4 ranks)."""
    from simcluster.llm.spec import ParallelSpec

    return {"tp+ddp": ParallelSpec(tp=2, dp=2), "tp+fsdp": ParallelSpec(tp=2, dp=2, zero=3),
            "pp4-1f1b": ParallelSpec(pp=4), "pp4-gpipe": ParallelSpec(pp=4, pp_schedule="gpipe"),
            "pp+ddp": ParallelSpec(pp=2, dp=2)}


def mesh2_modes():
    """The second 4-GPU set's layouts: the first's without GPipe, with interleaved 1F1B (2 chunks per rank)."""
    from simcluster.llm.spec import ParallelSpec

    return {k: v for k, v in mesh_modes().items() if k != "pp4-gpipe"} | {"pp4-interleaved": ParallelSpec(pp=4, virtual_stages=2)}


def tpdp_modes():
    """The tpdp set's layouts (session 29): TP 2 x DDP 2 and TP 2 x FSDP2 2, host runs and steps on one lease."""
    return {k: v for k, v in mesh_modes().items() if k.startswith("tp+")}


def pipeline_modes():
    """The pipeline set's layouts (session 29): 4 stages under 1F1B and interleaved 1F1B, and 2 stages x DDP 2."""
    return {k: v for k, v in mesh2_modes().items() if k.startswith("pp")}


def two_modes():
    """The two set's layouts (session 36, each a 2-GPU host runs): DDP, FSDP2, TP over 2 ranks, the regimes set's 2-stage pipelines."""
    from simcluster.llm.spec import ParallelSpec

    pipelines = {k: v for k, v in regime_modes().items() if k.startswith("pp")}
    return {"ddp": ParallelSpec(dp=2), "fsdp": ParallelSpec(dp=2, zero=3), "tp": ParallelSpec(tp=2)} | pipelines


def cp_modes():   # the cp set's layout (session 36): torch's context parallelism over 2 ranks, DDP over them (--mode cp)
    from simcluster.llm.spec import ParallelSpec
    return {"cp": ParallelSpec(cp=2)}


def layout_of(mode: str):
    """(ParallelSpec, GPUs, micro-batches per step) of a layout: a pipeline 2 per stage (4 on 2 stages, 8 on 4), others 1."""
    par = {**regime_modes(), **mesh_modes(), **mesh2_modes(), **two_modes(), **cp_modes()}[mode]
    return par, par.gpus, (MICROBATCHES * par.pp // 2 if par.pp > 1 else 1)


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
                row["pred_ms"] = r.step_time_s * 1e3
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


def h100_host_framework():
    """TORCH_AMP with the host cost per kernel and per step fitted on the H100 machine's tiny-decoder steps."""
    from simcluster.llm import host
    from simcluster.llm.framework import TORCH_AMP
    from simcluster.llm.spec import BatchSpec, ParallelSpec

    points, kernels = [], None
    for path in sorted(H100_HOST.glob("h100-L*.json")):
        doc = json.loads(path.read_text())
        for shape in doc["shapes"]:
            if shape["status"] == "ok":
                kernels = host.layer_kernels(model_of(doc, shape["seq"]), ParallelSpec(),
                                             BatchSpec(shape["micro_batch"], shape["micro_batch"]), TORCH_AMP)
                points.append((doc["model"]["layers"], shape["median_step_s"]))
    if not points:
        return TORCH_AMP, "no host measurement: GPU-bound only"
    c, a = host.fit_host(points, kernels)
    return replace(TORCH_AMP, host_kernel_s=c, host_step_s=a), f"host {c * 1e6:.1f} us/kernel + {a * 1e3:.2f} ms/step"


def host_fits(mode: str, own_host: Path | None = None) -> dict:
    """Each runner mode's host fit on H200 hosts (MODE_HOST, the 2-GPU host). `own_host` (the variant the 4-GPU sets
    register beside the model's: MESH_HOST for the second set, the tpdp set's own lease): a 2-D layout takes its own
    mode's fit from the host runs there in place of tp's, which the product's eager.host_mode gives it."""
    from simcluster.llm import eager

    fits = eager.fit_modes(MODE_HOST)
    if own_host is None:
        return fits
    own = eager.fit_modes(own_host)
    if mode in tpdp_modes():
        return fits | {"tp": own[mode]}
    return fits | own   # a 1-D layout: each mode's own fit from the lease's host runs (the product's framework.host)


def regime_framework(mode: str, gpu_label: str, own_host: Path | None = None):
    """An eager-regimes layout's torch framework with the host cost of its runner mode on that GPU's machine kind
    (host_fits; H100: the single mode's)."""
    from simcluster.llm import eager

    par, _, _ = layout_of(mode)
    if gpu_label == "h200":
        hosts = host_fits(mode, own_host)
        if own_host is not None:
            return eager.torch_framework(par, hosts), f"host: {mode}, own fit from {own_host}"
        return eager.torch_framework(par, hosts), f"host: {eager.host_mode(par)} mode of {MODE_HOST.name}"
    base, how = h100_host_framework()
    fw = eager.torch_framework(par)
    return replace(fw, host_kernel_s=base.host_kernel_s, host_step_s=base.host_step_s), f"{how} ({H100_HOST.name})"


def regime_predict(preset: str, mb: int, mode: str, gpu_label: str, own_host: Path | None = None,
                   microbatches: int | None = None, seq: int = SEQ) -> dict:
    """One eager-regimes layout predicted: step (ms), each stage's memory (GiB), breakdown; `own_host`: host_fits';
    `microbatches`: the step's micro-batch count where the plan sets it (pipeline2), else layout_of's; `seq` (cp's)."""
    from simcluster.cards import load_collective
    from simcluster.hardware.gpu import load_gpu
    from simcluster.llm.comm import Network
    from simcluster.llm.memory import GiB, stage_memories
    from simcluster.llm.predict import predict_llm
    from simcluster.llm.spec import BatchSpec
    from simcluster.runner.llm_pipeline import chunk_layer_ranges
    from simcluster.runner.llm_step import PRESETS

    par, gpus, m = layout_of(mode)
    m = microbatches or m
    model = model_of({"model": PRESETS[preset]}, seq)
    if par.pp > 1:   # the layers each chunk ran: the runner's split (llm_pipeline.py), not spec.layer_split's balance
        par = replace(par, pipeline_layout=tuple(hi - lo for lo, hi in chunk_layer_ranges(model.layers, par.pp * par.virtual_stages)))
    batch = BatchSpec(mb * m * par.dp, mb, "bf16")
    gpu, _ = load_gpu(ROOT / (H200 if gpu_label == "h200" else H100))
    fw, how = regime_framework(mode, gpu_label, own_host)
    card, _ = load_collective(ROOT / CARDS[("nvlink", 2)])
    # every group here is two ranks (tp 2, dp 2, pipeline neighbours): the 2-rank NVLink card, on a node of `gpus`
    r = predict_llm(model, par, batch, gpu, Network(card, gpus), gpus, trace=False, framework=fw)
    mems = stage_memories(model, par, batch, gpu.hbm_capacity_bytes, fw)
    return {"step_ms": round(r.step_time_s * 1e3, 2), "stage_mem_GiB": [round(s.allocated / GiB, 3) for s in mems],
            "steady_mem_GiB": [round(s.steady_allocated / GiB, 3) for s in mems],   # the peak after the first steps
            "breakdown_ms": {k: round(v * 1e3, 2) for k, v in r.breakdown.items() if v}, "framework": fw.name, "host": how}


def regime_mode_of(doc: dict) -> str:
    if doc.get("mode") == "pp":
        stages = doc["pipeline"].get("stages", 2)
        kind = {"ScheduleGPipe": "gpipe", "ScheduleInterleaved1F1B": "interleaved"}.get(doc["pipeline"]["schedule"], "1f1b")
        return f"pp{stages if stages != 2 else ''}-{kind}"
    if doc.get("mode") in ("tp+ddp", "tp+fsdp", "pp+ddp"):
        return str(doc["mode"])
    from simcluster.llm import eager, eager_ac

    ac = eager_ac.document_mode(doc)   # op / every:N runs set ac_mode (single+sac-op, single+ckpt-every2)
    return eager.mode_of(eager_ac.parallel_of(ac)) if ac != "none" else str(doc.get("mode"))


def regime_documents(bundle: Path) -> tuple[list[dict], list[str]]:
    """The llm-step documents of an eager-regimes bundle, and a line per file that holds none (the run failed)."""
    docs, failed = [], []
    for path in sorted(bundle.glob("runs/*.json")) + sorted(bundle.glob("*.json")):
        doc, _ = _document(path.read_text())
        (docs.append(doc) if doc is not None else failed.append(str(path)))
    return docs, failed


def held_out_rows() -> list[dict]:
    """Every timed shape of the held-out bundles: SEALED predicted with today's model, then the eager-regimes bundle
    against its registered predictions: {bundle, label, gpus, tp, pp, zero, measured_s, predicted_s, transport}."""
    from simcluster.llm import eager

    hosts = eager.fit_modes(MODE_HOST)
    out = []
    for name in SEALED:
        for r in bundle_rows(ROOT / name, hosts):
            if "pred_ms" in r and "meas_ms" in r:
                par = r["parallel"]
                out.append({"bundle": Path(name).name, "label": f"{r['preset']} {r['mode']} x{r['world']} seq {r['seq']} mb {r['mb']}",
                            "gpus": r["world"], "tp": par.tp, "pp": par.pp, "cp": par.cp, "zero": par.zero, "transport": r["transport"],
                            "measured_s": r["meas_ms"] / 1e3, "predicted_s": r["pred_ms"] / 1e3})
    return out + [row for name in REGISTERED for row in registered_rows(ROOT / name)]


def registered_rows(bundle: Path) -> list[dict]:
    """The eager-regimes bundle's runs against the predictions registered before they ran (registered.yaml): the
    model changed after that read (the pipeline's memory), so the registered step is the held-out one."""
    from simcluster.strict import load_yaml

    registered = {(r["preset"], r["mode"], r["seq"], r["micro_batch"]): r for r in load_yaml(bundle / "registered.yaml")["runs"]}
    docs, _ = regime_documents(bundle)
    out = []
    for doc in docs:
        mode, preset = regime_mode_of(doc), doc["model"].get("preset")
        gpu = "h100" if "H100" in str(doc.get("device", {}).get("name")) else "h200"
        for shape in doc["shapes"]:
            reg = registered.get((preset, mode, shape["seq"], shape["micro_batch"]))
            par, gpus, _ = layout_of(mode) if reg is not None else (None, 0, 0)
            if (reg is None or shape["status"] != "ok" or reg["microbatches"] != shape.get("microbatches", 1)
                    or doc.get("world_size", 1) != gpus):   # smoke / host runs; another rank count
                continue
            out.append({"bundle": bundle.name, "label": f"{preset} {mode} seq {shape['seq']} mb {shape['micro_batch']}",
                        "gpus": gpus, "tp": par.tp, "pp": par.pp, "cp": par.cp, "zero": par.zero, "transport": "nvlink",
                        "measured_s": shape["median_step_s"], "predicted_s": reg["predicted"][gpu]["step_ms"] / 1e3})
    return out
