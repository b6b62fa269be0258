"""The llm-step documents of an eager bundle as they ran, before any model reads them: which layout a document ran
(regime_mode_of), a bundle's documents and the files that hold none (regime_documents), and a registered step set's
row as its processes ran (process_runs). Split out of heldout/eager_regimes.py in session 55 (house55), which imports
them (registered read-outs import the three from it: validation/llm_eager_regimes.py, eager_cudnn_steps.py,
hostsingle.py, pphost.py, studies/eager_noise_floor.py)."""

from __future__ import annotations

import json
from pathlib import Path

from simcluster.errors import SimclusterError
from simcluster.heldout.eager import _document
from simcluster.llm import eager, eager_ac


def regime_mode_of(doc: dict) -> str:
    """The layout an llm-step document ran (eager_regimes.layout_of's names): a pipeline's stages and schedule, a 2-D
    mesh's mode, a checkpointing policy's one-GPU mode (llm/eager_ac.py), else the runner's mode."""
    if doc.get("mode") == "pp":
        stages = doc["pipeline"].get("stages", 2)
        kind = {"ScheduleGPipe": "gpipe", "ScheduleInterleaved1F1B": "interleaved"}.get(doc["pipeline"]["schedule"], "1f1b")
        return f"pp{stages if stages != 2 else ''}-{kind}"
    if doc.get("mode") in ("tp+ddp", "tp+fsdp", "pp+ddp"):
        return str(doc["mode"])
    ac = eager_ac.document_mode(doc)   # op / every:N runs set ac_mode (single+sac-op, single+ckpt-every2)
    return eager.mode_of(eager_ac.parallel_of(ac)) if ac != "none" else str(doc.get("mode"))


def regime_documents(bundle: Path) -> tuple[list[dict], list[str]]:
    """The llm-step documents of an eager-regimes bundle, and a line per file that holds none (the run failed)."""
    docs, failed = [], []
    for path in sorted(bundle.glob("runs/*.json")) + sorted(bundle.glob("*.json")):
        doc, _ = _document(path.read_text())
        (docs.append(doc) if doc is not None else failed.append(str(path)))
    return docs, failed


def process_runs(bundle: Path, reg_row: dict, memory: bool = True, dropped: list[str] | None = None,
                 read=None) -> list[dict]:
    """A registered step set's row as its processes ran (heldout/eager_pphost, eager_cudnnstep): each process's timed
    shape (runs/NAME-rK.json, K = 1..processes) as {step_ms: rank 0's median step, steps_s: rank 0's timed steps (s; []
    if the document has none), mem_GiB: [rank 0's peak, the one the runner's document holds for DDP / FSDP2 (every
    rank's only where it lists `ranks`); not read with memory False]}: a process the call did not reach (the budget guard) is left out ([] if none
    ran); a file that holds no timed shape is a SimclusterError naming it, or, where a `dropped` list is given, that
    error's line appended to it and the process left out. Hook for a set with its own reading (eager_today): read(text,
    reg_row) -> (document, '' or why the process is not the registered one): a process it refuses is left out with
    "FILE: why" appended to `dropped`."""
    out = []
    for k in range(1, int(reg_row["processes"]) + 1):
        path = bundle / "runs" / f"{reg_row['name']}-r{k}.json"
        if not path.is_file() or path.stat().st_size == 0:
            continue
        if read is not None:
            doc, why = read(path.read_text(errors="replace"), reg_row)
            if why:
                dropped.append(f"{path.name}: {why}")
                continue
        try:
            doc = json.loads(path.read_text()) if read is None else doc
            shape = next(s for s in doc["shapes"] if s.get("status") == "ok")
            run = {"step_ms": float(shape["median_step_s"]) * 1e3, "steps_s": [float(x) for x in shape.get("step_times_s") or []]}
            if memory:
                ranks = shape.get("ranks") or [{"max_memory_allocated_bytes": shape["max_memory_allocated_bytes"]}]
                run["mem_GiB"] = [float(r["max_memory_allocated_bytes"]) / 2**30 for r in ranks]
            out.append(run)
        except (json.JSONDecodeError, StopIteration, KeyError, TypeError, ValueError, AttributeError) as exc:
            error = SimclusterError(f"{path}: no timed shape ({type(exc).__name__}: {exc})")
            if dropped is None:
                raise error from None
            dropped.append(str(error))
    return out
