"""Session 39's registered long-sequence eager set (calibration/h200x2-eager-cudnnstep-2026-11-29,
validation/eager_cudnn_steps.py) as held-out eager rows: single-GPU, 2-rank DDP and FSDP2 steps at 16K-64K tokens a
sequence, micro-batch 1, where attention (torch's default SDPA: cuDNN, priced by llm/cudnn_schedule.py's form) is 33-79%
of the predicted step; each (preset, tokens) new to calibration/ when it ran, each row run in up to 2 processes. The
same reading takes the fsdpmem set (calibration/h200x2-eager-fsdpmem-2026-11-29, validation/eager_fsdp_mem.py: FSDP2
and a DDP control at 18K-37K tokens, one process a row, registered at 65bc9c3b with the FSDP2 memory fix its `today`;
its `old` differs in memory only): LONG_SEQUENCE_BUNDLES, each one source.

Its registered.yaml (written at bf03707e, before the runs) holds two predictions per row: `today`, the model the product
ships (the cuDNN form adopted at bf03707e), and `old`, the card's curve for attention (reported by the read-out only). A
row's residual is against `today`, its host-bound flag today's registered one (host_flag "registered"). Measured: the
set's own rule, the mean over a row's processes of rank 0's median step (the processes repeat one configuration on one
lease: one row). A set not run yet (no runs/) gives no row; a row none of whose processes ran is left out. The set is
one source."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from simcluster.errors import SimclusterError
from simcluster.heldout.eager import ROOT
from simcluster.heldout.eager_regimes import step_set_rows

CUDNNSTEP_BUNDLE = "calibration/h200x2-eager-cudnnstep-2026-11-29"
FSDPMEM_BUNDLE = "calibration/h200x2-eager-fsdpmem-2026-11-29"
LONG_SEQUENCE_BUNDLES = (CUDNNSTEP_BUNDLE, FSDPMEM_BUNDLE)   # registered sets read the same way (rows: all_held_out_rows)
SHIPPED = "today"   # the registered prediction the product computes


def process_runs(bundle: Path, reg_row: dict) -> list[dict]:
    """Each process's timed shape of a row (runs/NAME-rK.json, K = 1..processes) as {step_ms: rank 0's median step,
    steps_s: rank 0's timed steps (s; [] if the document has none), mem_GiB: [rank 0's peak, the one the runner's
    document holds for DDP / FSDP2 (every rank's only where it lists `ranks`)]}: a process the call did not reach (the budget guard) is left out ([] if
    none ran); a file that holds no timed shape is a SimclusterError naming it."""
    out = []
    for k in range(1, reg_row["processes"] + 1):
        path = bundle / "runs" / f"{reg_row['name']}-r{k}.json"
        if not path.is_file() or path.stat().st_size == 0:
            continue
        try:
            doc = json.loads(path.read_text())
            shape = next(s for s in doc["shapes"] if s.get("status") == "ok")
            ranks = shape.get("ranks") or [{"max_memory_allocated_bytes": shape["max_memory_allocated_bytes"]}]
            out.append({"step_ms": float(shape["median_step_s"]) * 1e3,
                        "steps_s": [float(x) for x in shape.get("step_times_s") or []],
                        "mem_GiB": [float(r["max_memory_allocated_bytes"]) / 2**30 for r in ranks]})
        except (json.JSONDecodeError, StopIteration, KeyError, TypeError, ValueError, AttributeError) as exc:
            raise SimclusterError(f"{path}: no timed shape ({type(exc).__name__}: {exc})") from None
    return out


def held_out_rows(bundle: Path = ROOT / CUDNNSTEP_BUNDLE) -> list[dict]:
    """Every registered row of the set that ran, against its registered `today` step (heldout/eager_regimes.
    held_out_rows' keys)."""
    if not (bundle / "runs").is_dir():
        return []   # registered, not run yet

    def measure(reg):
        procs = process_runs(bundle, reg)
        return statistics.mean(p["step_ms"] for p in procs) if procs else None

    return step_set_rows(bundle, SHIPPED, measure)


def all_held_out_rows() -> list[dict]:
    """The rows of every LONG_SEQUENCE_BUNDLES set that has run (trust/build.eager_held_out_rows)."""
    return [row for b in LONG_SEQUENCE_BUNDLES for row in held_out_rows(ROOT / b)]
