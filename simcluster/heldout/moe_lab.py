"""Megatron-Core MoE lab steps in the local layer spec (framework megatron-local-spec: no Transformer Engine, SequentialMLP
experts, the alltoall dispatcher, the unfused attention core), one micro-batch's forward + backward on 1-4 H200s,
against the step the model predicted BEFORE each set ran (its registered.yaml, written by
studies/megatron_moe/register.py at the commit it names). The registered step is the held-out prediction, not today's
model: the model may have moved since (docs/models/llm-findings.md).

  REGISTERED   every registered set, each folder one source (one lease): moe2 (4 x H200, EP 2 and 4), moe4 (1 x H200,
               EP 1, arms A and B), moe3 (2 x H200, EP 2, arms A and B), moe5 (2 x H200, EP 2, arm B; registered in
               session 40), moe6 (2 x H200, EP 2 and EP 1 data parallel, arm B; registered in session 41 with the model
               of that day, picked up once its run files exist)
  LAUNCHED     session 49's sets run as moelab49 ran them (2 x H200, EP 2 and EP 1, arm B): each configuration launched
               twice on one lease (runs/, runs/launch2/), its row the mean of its counted launches (counted_launches, the
               read-out's count: validation/moelab49.py) against its registered OFF step (predicted_step_s: the product
               prices the local spec with the router term off, llm/moe_router_term.ADOPTED); read by read_launched
  DEVELOPMENT  session 25's set, which the local-spec host model (framework.MoeHost) was built on: left out

A run file is device.py's JSON (megatron-moe-KIND-xN-NAME.json, or ...-NAME-armX.json for a set run in arms): rank 0's
median step is the measured one. A run that failed (an empty file, a cut-off document, rank 0 not ok) or whose name
has no registered prediction gives no row; `read_set` says why for each."""

from __future__ import annotations

import json
import re
import statistics
from dataclasses import dataclass
from pathlib import Path

from simcluster.errors import SimclusterError

ROOT = Path(__file__).resolve().parent.parent.parent
FRAMEWORK = "megatron-local-spec"
REGISTERED = ("calibration/h200x4-megatron-moe2-2026-11-28", "calibration/h200x1-megatron-moe4-2026-11-28",
              "calibration/h200x2-megatron-moe3-2026-11-28", "calibration/h200x2-megatron-moe5-2026-11-30",
              "calibration/h200x2-megatron-moe6-2026-11-30")
LAUNCHED = ("calibration/h200x2-moelab49-2026-12-01", "calibration/h200x2-moelab49b-2026-12-01")
DEVELOPMENT = ("calibration/h200x4-megatron-moe-2026-11-27",)
LAUNCH2, LAUNCH_ARM = "launch2", "B"     # a LAUNCHED set's second launch (runs/launch2/) and its one arm
RUN_FILE = re.compile(r"^megatron-moe-[a-z0-9]+-x\d+-(?P<name>.+?)(?:-arm(?P<arm>[A-Z]))?\.json$")
# the runner flags a run's document must match (its model and expert parallelism): a file that is not the registered
# configuration gives no row
FLAG_KEYS = {"layers": "--layers", "hidden": "--hidden", "heads": "--heads", "kv_heads": "--kv-heads", "head_dim": "--head-dim",
             "experts": "--experts", "top_k": "--top-k", "expert_ffn": "--expert-ffn", "vocab": "--vocab", "seq": "--seq",
             "micro_batch": "--micro-batch"}


@dataclass(frozen=True)
class Skipped:
    file: str
    why: str


def registered_steps(folder: Path) -> dict[str, dict]:
    """{run name: {predicted_s, flags}} of a set's registered.yaml; a file not of that shape is one line naming it."""
    from simcluster.strict import load_yaml

    path = folder / "registered.yaml"
    doc = load_yaml(path, what="registered MoE lab set")
    if not isinstance(doc, dict) or not isinstance(doc.get("runs"), dict):
        raise SimclusterError("expected a mapping with `runs:` (run name -> predicted_step_s, flags)", where=str(path))
    if doc.get("framework") != FRAMEWORK:
        raise SimclusterError(f"framework {doc.get('framework')!r}: expected {FRAMEWORK}", where=f"{path}: framework")
    m = re.match(r"^(\S+) x (\d+)\b", str(doc.get("gpu", "")))   # "H200 x 4 (NVLink), ...": the GPUs predicted for
    if not m:
        raise SimclusterError(f"expected 'KIND x N (...)', the GPUs the set was predicted for, got {doc.get('gpu')!r}",
                              where=f"{path}: gpu")
    gpus = int(m.group(2))
    out = {}
    for name, run in doc["runs"].items():
        step = run.get("predicted_step_s") if isinstance(run, dict) else None
        if not isinstance(step, (int, float)) or isinstance(step, bool) or not step > 0:
            raise SimclusterError("expected a positive number of seconds", where=f"{path}: runs.{name}.predicted_step_s")
        out[str(name)] = {"predicted_s": float(step), "flags": str(run.get("flags", "")), "gpus": gpus, "kind": m.group(1)}
    return out


def run_document(path: Path) -> tuple[dict | None, str]:
    """(device.py's document, '') or (None, why there is none): empty, no JSON object, cut off, not the runner's."""
    from simcluster.strict import loads_json, read_text

    text = read_text(path, what="megatron-moe run document")
    start = text.find("{")
    if start < 0:
        return None, "no document (the run failed before writing one)"
    try:
        doc = loads_json(text[start:])
    except json.JSONDecodeError as exc:
        return None, f"not a whole JSON document ({exc.msg})"
    if not isinstance(doc, dict) or doc.get("tool") != "megatron-moe":
        return None, "not megatron-moe runner output"
    return doc, ""


def flag_mismatch(doc: dict, flags: str) -> str:
    """'' when the document's model and EP are the registered flags', else the first field that differs."""
    words = flags.split()
    want = {key: words[words.index(flag) + 1] for key, flag in FLAG_KEYS.items() if flag in words[:-1]}
    if "--ep" in words[:-1]:
        want["ep"] = words[words.index("--ep") + 1]
    have = {**(doc.get("model") or {}), "ep": (doc.get("parallel") or {}).get("ep")}
    return next((f"{k} {have.get(k)!r}, registered {v}" for k, v in want.items() if str(have.get(k)) != v), "")


def read_set(folder: Path) -> tuple[list[dict], list[Skipped]]:
    """A registered set's rows {source, run, arm, lease, gpus, tp, pp, ep, predicted_s, measured_s} and the run files left
    out with why. A set registered but not yet run has no run files: no rows, nothing skipped. The same set run again on
    another lease (a sub-folder of run files, e.g. moe4's lease2/) is read against the same registration and stays the
    same source (one registration), its rows marked with the sub-folder's name (`lease`)."""
    registered = registered_steps(folder)
    rows, skipped = [], []
    leases = sorted(p for p in folder.iterdir() if p.is_dir() and any(p.glob("megatron-moe-*.json")))
    for path in sorted(folder.glob("megatron-moe-*.json")) + [f for d in leases for f in sorted(d.glob("megatron-moe-*.json"))]:
        lease = "" if path.parent == folder else path.parent.name
        m = RUN_FILE.match(path.name)
        reg = registered.get(m["name"]) if m else None
        if reg is None:
            skipped.append(Skipped(f"{lease}/{path.name}" if lease else path.name, "no registered prediction for this run"))
            continue
        doc, why = run_document(path)
        rank0 = (doc or {}).get("rank0") or {}
        if doc is not None and rank0.get("status") != "ok":
            why = f"rank 0 {rank0.get('status', 'without a status')}: {str(rank0.get('error', ''))[:120]}".rstrip(": ")
        step = rank0.get("median_step_s")
        if not why and not (isinstance(step, (int, float)) and step > 0):
            why = "rank 0 has no positive median_step_s"
        if not why and not (isinstance(doc.get("world_size"), int) and doc["world_size"] > 0):
            why = "no positive integer world_size"
        if not why and doc["world_size"] != reg["gpus"]:
            why = f"ran on {doc['world_size']} GPUs where the registration predicted {reg['gpus']}"
        why = why or flag_mismatch(doc, reg["flags"])
        if why:
            skipped.append(Skipped(f"{lease}/{path.name}" if lease else path.name, why))
            continue
        par = doc.get("parallel") or {}
        rows.append({"source": folder.name, "run": m["name"], "arm": m["arm"] or "", "lease": lease, "gpus": int(doc["world_size"]),
                     "tp": int(par.get("tp", 1)), "pp": int(par.get("pp", 1)), "ep": int(par.get("ep", 1)),
                     "predicted_s": reg["predicted_s"], "measured_s": float(step),
                     "today_s": todays_step_s(doc, int(doc["world_size"]))})   # beside the registered step (trust/moved.py)
    return rows, skipped


def launch_of(path: Path, flags: str, gpus: int, kind: str) -> tuple[dict | None, str]:
    """(the run document, '') of one launch of a LAUNCHED set, or (None, why it does not count): rank 0 ok with a positive
    median step, on `gpus` GPUs of `kind`, every rank pinned (arm B), the registered `flags`."""
    doc, why = run_document(path)
    if doc is None:
        return None, why
    r0 = doc.get("rank0") or {}
    if r0.get("status") != "ok":
        return None, f"rank 0 {r0.get('status', 'without a status')}: {str(r0.get('error', ''))[:120]}"
    step = r0.get("median_step_s")
    if not (isinstance(step, (int, float)) and step > 0):
        return None, "rank 0 has no positive median_step_s"
    if doc.get("world_size") != gpus or kind not in str(doc.get("device", "")):
        return None, f"ran on {doc.get('world_size')} x {doc.get('device')!r}, registered {gpus} x {kind}"
    if not all(p and p.get("cpus") for p in doc.get("pin_per_rank") or [None]):
        return None, "not every rank pinned (arm B)"
    return (None, wrong) if (wrong := flag_mismatch(doc, flags)) else (doc, "")


def counted_launches(bundle: Path, name: str, flags: str, gpus: int, kind: str, left: list[Skipped]) -> list[dict]:
    """The run documents of a configuration's counted launches (runs/, runs/launch2/; launch_of), each launch left out
    appended to `left` with why: the one launch count of the LAUNCHED sets' read-outs (validation/moelab49.py,
    moelab49b.py) and of their held-out rows (read_launched)."""
    docs = []
    for sub in ("", LAUNCH2):
        path = Path(bundle) / "runs" / sub / f"megatron-moe-{kind.lower()}-x{gpus}-{name}-arm{LAUNCH_ARM}.json"
        doc, why = launch_of(path, flags, gpus, kind) if path.is_file() else (None, "no run file")
        if doc is None:
            left.append(Skipped(str(path.relative_to(bundle)), why))
        else:
            docs.append(doc)
    return docs


def read_launched(folder: Path) -> tuple[list[dict], list[Skipped]]:
    """A LAUNCHED set's rows, read_set's keys plus `launches` (how many counted), one per configuration with a counted
    launch: measured_s the mean of its counted launches' rank-0 median steps, predicted_s its registered step (the OFF
    column); the launches left out with why. Not run yet (no runs/): no rows, nothing skipped."""
    if not (folder / "runs").is_dir():
        return [], []
    rows, skipped = [], []
    for name, reg in registered_steps(folder).items():
        docs = counted_launches(folder, name, reg["flags"], reg["gpus"], reg["kind"], skipped)
        if docs:
            par = docs[0].get("parallel") or {}
            rows.append({"source": folder.name, "run": name, "arm": LAUNCH_ARM, "lease": "", "gpus": reg["gpus"],
                         "tp": int(par.get("tp", 1)), "pp": int(par.get("pp", 1)), "ep": int(par.get("ep", 1)),
                         "predicted_s": reg["predicted_s"], "launches": len(docs),
                         "measured_s": statistics.fmean(d["rank0"]["median_step_s"] for d in docs),
                         "today_s": todays_step_s(docs[0], reg["gpus"])})
    return rows, skipped


GPU_CARDS = {"H100": "models/gpu/h100-sxm-interleaved.yaml", "H200": "models/gpu/h200-sxm-interleaved.yaml"}
NVLINK = {1: "models/collective/h200x2-primitives.yaml",   # one GPU: no collective is priced (moe4); any card will do
          2: "models/collective/h200x2-primitives.yaml", 4: "models/collective/h200x4-primitives.yaml"}


def device_gpu(device: str) -> str:
    """The GPU_CARDS key of a run document's `device` ('NVIDIA H200' -> 'H200'); one line naming it where none fits."""
    known = [g for g in GPU_CARDS if g in str(device)]
    if len(known) != 1:
        raise SimclusterError(f"device {str(device)[:60]!r}: no GPU card for the MoE lab step (known: {', '.join(GPU_CARDS)})")
    return known[0]


def lab_spec(m: dict, ranks: int) -> tuple:
    """(TransformerSpec, ParallelSpec, BatchSpec) of the runner's model `m` (with its `ep`) on `ranks` data-parallel
    ranks: the one reading of a run's configuration (step_s, studies/megatron_moe/kernel_kinds.py)."""
    from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec

    spec = TransformerSpec(layers=m["layers"], hidden=m["hidden"], ffn=m["expert_ffn"], heads=m["heads"], kv_heads=m["kv_heads"],
                           vocab=m["vocab"], seq=m["seq"], experts=m["experts"], top_k=m["top_k"], expert_ffn=m["expert_ffn"],
                           attn_head_dim=m["head_dim"], qk_norm=True)
    return spec, ParallelSpec(dp=ranks, ep=m["ep"]), BatchSpec(ranks * m["micro_batch"], m["micro_batch"], "bf16")


def step_s(m: dict, ranks: int, gpu_name: str, fw=None) -> tuple[float, dict]:
    """(forward + backward seconds of one micro-batch on the stage, its parts): the one pricing of the runner's step
    (studies/megatron_moe/device.py), as register.py registers it, studies/megatron_moe/compare.py prints it and the
    error-band table reads today's beside the registration (todays_step_s). `m` is the runner's model with its `ep`;
    framework `fw` (default megatron-local-spec), the GPU card of `gpu_name` (GPU_CARDS), the NVLink card of the rank
    count (NVLINK: 1, 2 or 4 H200s); a GPU or rank count without a card is one line, never a silent stand-in."""
    from simcluster.cards import load_collective
    from simcluster.hardware.gpu import load_gpu
    from simcluster.llm.comm import Network
    from simcluster.llm.framework import MEGATRON_LOCAL
    from simcluster.llm.work import build_work

    if gpu_name not in GPU_CARDS:
        raise SimclusterError(f"GPU {str(gpu_name)[:40]!r}: no card for the MoE lab step (known: {', '.join(GPU_CARDS)})")
    if ranks not in NVLINK:
        raise SimclusterError(f"{ranks} ranks: no NVLink card for the MoE lab step (known: {', '.join(map(str, NVLINK))} GPUs)")
    gpu, _ = load_gpu(ROOT / GPU_CARDS[gpu_name])
    work = build_work(*lab_spec(m, ranks), gpu, Network(load_collective(ROOT / NVLINK[ranks])[0], ranks), fw=fw or MEGATRON_LOCAL)
    f, b = work.stages[0].forward[0], work.stages[0].backward[0]
    parts = {k: f.parts.get(k, 0.0) + b.parts.get(k, 0.0) for k in set(f.parts) | set(b.parts)}
    return f.duration_s + b.duration_s, {k: v for k, v in parts.items() if v}


def todays_step_s(doc: dict, ranks: int) -> float:
    """Today's model's step of a run document's configuration (step_s at the document's device and EP). Only beside the
    registered step: the row's residual stays against the registration."""
    m = {**doc["model"], "ep": int((doc.get("parallel") or {}).get("ep", 1))}
    return step_s(m, ranks, device_gpu(doc.get("device", "")))[0]


def held_out_rows(folders: tuple[str, ...] = REGISTERED + LAUNCHED) -> list[dict]:
    """Every registered set's measured runs against their registered steps (read_set; a LAUNCHED set's: read_launched),
    set by set."""
    return [row for name in folders for row in (read_launched if name in LAUNCHED else read_set)(ROOT / name)[0]]
