"""Session 39's registered long-sequence eager set (calibration/h200x2-eager-cudnnstep-2026-11-29,
validation/eager_cudnn_steps.py) as held-out eager rows: single-GPU, 2-rank DDP and FSDP2 steps at 16K-64K tokens a
sequence, micro-batch 1, where attention (torch's default SDPA: cuDNN, priced by llm/cudnn_schedule.py's form) is 33-79%
of the predicted step; each (preset, tokens) new to calibration/ when it ran, each row run in up to 2 processes. The
same reading takes the fsdpmem set (calibration/h200x2-eager-fsdpmem-2026-11-29, validation/eager_fsdp_mem.py: FSDP2
and a DDP control at 18K-37K tokens, one process a row, registered at 65bc9c3b with the FSDP2 memory fix its `today`;
its `old` differs in memory only), and session 40's fsdpstep set (calibration/h200x2-eager-fsdpstep-2026-11-30,
validation/eager_fsdp_step.py: four FSDP2 rows at 4K-5K tokens a sequence, fsdp-0.5b in two processes, and a DDP
control, registered at 548a3ae0 with the product its `today`; its `candidate`, eager.bf16_step (removed in session 41), reported only; the
profiled process, fsdp-0.8b-trace-r1, is no process of its row): the long-sequence sets, each one source;
heldout/step_sets.REGISTERED_STEP_SETS lists every registered step set with its reader.

Its registered.yaml (written at bf03707e, before the runs) holds two predictions per row: `today`, the model the product
ships (the cuDNN form adopted at bf03707e), and `old`, the card's curve for attention (reported by the read-out only). A
row's residual is against `today`, its host-bound flag today's registered one (host_flag "registered"). Measured: the
set's own rule, the mean over a row's processes of rank 0's median step (the processes repeat one configuration on one
lease: one row). A set not run yet (no runs/) gives no row; a row none of whose processes ran is left out. The set is
one source."""

from __future__ import annotations

import statistics
from pathlib import Path

from simcluster.heldout.eager import ROOT
from simcluster.heldout.eager_regimes import step_set_rows
from simcluster.heldout.eager_runs import process_runs

CUDNNSTEP_BUNDLE = "calibration/h200x2-eager-cudnnstep-2026-11-29"
FSDPMEM_BUNDLE = "calibration/h200x2-eager-fsdpmem-2026-11-29"
FSDPSTEP_BUNDLE = "calibration/h200x2-eager-fsdpstep-2026-11-30"
SHIPPED = "today"   # the registered prediction the product computes


def held_out_rows(bundle: Path = ROOT / CUDNNSTEP_BUNDLE) -> list[dict]:
    """Every registered row of the set that ran, against its registered `today` step (heldout/eager_regimes.
    held_out_rows' keys)."""
    if not (bundle / "runs").is_dir():
        return []   # registered, not run yet

    def measure(reg):
        procs = process_runs(bundle, reg)
        return statistics.mean(p["step_ms"] for p in procs) if procs else None

    return step_set_rows(bundle, SHIPPED, measure)
