"""Session 39's registered long-sequence eager set (calibration/h200x2-eager-cudnnstep-2026-11-29,
validation/eager_cudnn_steps.py) as held-out eager rows: single-GPU, 2-rank DDP and FSDP2 steps at 16K-64K tokens a
sequence, micro-batch 1, where attention (torch's default SDPA: cuDNN, priced by llm/cudnn_schedule.py's form) is 33-79%
of the predicted step; each (preset, tokens) new to calibration/ when it ran, each row run in up to 2 processes. The
same reading takes the fsdpmem set (calibration/h200x2-eager-fsdpmem-2026-11-29, validation/eager_fsdp_mem.py: FSDP2
and a DDP control at 18K-37K tokens, one process a row, registered at 65bc9c3b with the FSDP2 memory fix its `today`;
its `old` differs in memory only), and session 40's fsdpstep set (calibration/h200x2-eager-fsdpstep-2026-11-30,
validation/eager_fsdp_step.py: four FSDP2 rows at 4K-5K tokens a sequence, fsdp-0.5b in two processes, and a DDP
control, registered at 548a3ae0 with the product its `today`; its `candidate`, eager.bf16_step (removed in session 41), reported only; the
profiled process, fsdp-0.8b-trace-r1, is no process of its row): the long-sequence sets, each one source; REGISTERED_STEP_SETS lists them with
session 41's eager-today set (heldout/eager_today: one GPU and a 2-stage pipeline, its own reader), session 44's
PP+host-bound set (heldout/eager_pphost.s44_rows: with session 44's ppcouple, session 45's ppblock and ppfree and session
46's ppboth sets), its one-GPU hostsingle set (heldout/eager_hostsingle: with session 44's opcheck and session 45's
opsplit sets), session 45's FSDP2 no-sync and DDP accumulation sets and session 46's, 47's and 48's FSDP2 ZeRO-2
sets (heldout/eager_nosync), and session 46's, 47's and 48's compile + checkpointing sets (heldout/eager_compilefsdp:
compilefsdp, compileac, repeats47, compck), and session 48's 4-GPU TP x DP set (heldout/eager_tp4: tp4).

Its registered.yaml (written at bf03707e, before the runs) holds two predictions per row: `today`, the model the product
ships (the cuDNN form adopted at bf03707e), and `old`, the card's curve for attention (reported by the read-out only). A
row's residual is against `today`, its host-bound flag today's registered one (host_flag "registered"). Measured: the
set's own rule, the mean over a row's processes of rank 0's median step (the processes repeat one configuration on one
lease: one row). A set not run yet (no runs/) gives no row; a row none of whose processes ran is left out. The set is
one source."""

from __future__ import annotations

import statistics
from pathlib import Path

from simcluster.heldout import eager_compilefsdp, eager_hostsingle, eager_nosync, eager_pphost, eager_today, eager_tp4
from simcluster.heldout.eager import ROOT
from simcluster.heldout.eager_regimes import process_runs, step_set_rows

CUDNNSTEP_BUNDLE = "calibration/h200x2-eager-cudnnstep-2026-11-29"
FSDPMEM_BUNDLE = "calibration/h200x2-eager-fsdpmem-2026-11-29"
FSDPSTEP_BUNDLE = "calibration/h200x2-eager-fsdpstep-2026-11-30"
TODAY_BUNDLE = eager_today.TODAY_BUNDLE   # session 41's eager-today set (one GPU and a 2-stage pipeline; not long-sequence)
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


# The registered step sets whose rows all_held_out_rows gives (trust/build.eager_held_out_rows), each with its reader:
# the long-sequence ones (cudnnstep, fsdpmem, fsdpstep) read here, the eager-today set by heldout/eager_today (its own
# row checks, read through eager_regimes.step_set_rows and process_runs as these are)
# (readers looked up when called, so that a test's monkeypatch of held_out_rows takes)
REGISTERED_STEP_SETS = ((CUDNNSTEP_BUNDLE, lambda b: held_out_rows(b)), (FSDPMEM_BUNDLE, lambda b: held_out_rows(b)),
                        (FSDPSTEP_BUNDLE, lambda b: held_out_rows(b)), (TODAY_BUNDLE, lambda b: eager_today.held_out_rows(b)),
                        (eager_pphost.PP_HOST_S44_BUNDLE, lambda b: eager_pphost.s44_rows(b)),
                        (eager_pphost.PP_COUPLE_BUNDLE, lambda b: eager_pphost.s44_rows(b)),
                        (eager_pphost.PP_BLOCK_BUNDLE, lambda b: eager_pphost.s44_rows(b)),
                        (eager_pphost.PP_FREE_BUNDLE, lambda b: eager_pphost.s44_rows(b)),
                        (eager_pphost.PP_BOTH_BUNDLE, lambda b: eager_pphost.s44_rows(b)),
                        (eager_hostsingle.HOSTSINGLE_BUNDLE, lambda b: eager_hostsingle.held_out_rows(b)),
                        (eager_hostsingle.OPCHECK_BUNDLE, lambda b: eager_hostsingle.held_out_rows(b)),
                        (eager_hostsingle.OPSPLIT_BUNDLE, lambda b: eager_hostsingle.held_out_rows(b)),
                        (eager_nosync.NOSYNC_BUNDLE, lambda b: eager_nosync.held_out_rows(b)),
                        (eager_nosync.DDPACCUM_BUNDLE, lambda b: eager_nosync.held_out_rows(b, "ddp")),
                        (eager_nosync.ZERO2_BUNDLE, lambda b: eager_nosync.held_out_rows(b)),
                        (eager_nosync.ZERO2B_BUNDLE, lambda b: eager_nosync.held_out_rows(b)),
                        (eager_nosync.ZERO2C_BUNDLE, lambda b: eager_nosync.held_out_rows(b)),
                        (eager_nosync.ZERO2D_BUNDLE, lambda b: eager_nosync.held_out_rows(b)),
                        (eager_nosync.ZERO2E_BUNDLE, lambda b: eager_nosync.held_out_rows(b)),
                        (eager_compilefsdp.COMPILEFSDP_BUNDLE, lambda b: eager_compilefsdp.held_out_rows(b)),
                        (eager_compilefsdp.COMPILEAC_BUNDLE, lambda b: eager_compilefsdp.held_out_rows(b)),
                        (eager_compilefsdp.REPEATS47_BUNDLE, lambda b: eager_compilefsdp.held_out_rows(b)),
                        (eager_tp4.TP4_BUNDLE, lambda b: eager_tp4.held_out_rows(b)),
                        (eager_compilefsdp.COMPCK_BUNDLE, lambda b: eager_compilefsdp.held_out_rows(b)))
# every REGISTERED_STEP_SETS bundle, eager-today's included (trust/build's built_from reads it)
STEP_SET_BUNDLES = tuple(b for b, _ in REGISTERED_STEP_SETS)


def all_held_out_rows() -> list[dict]:
    """The rows of every REGISTERED_STEP_SETS set that has run, each by its own reader (trust/build.eager_held_out_rows)."""
    return [row for bundle, read in REGISTERED_STEP_SETS for row in read(ROOT / bundle)]
