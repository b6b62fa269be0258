"""Every registered eager step set the error-band table takes (trust/build.eager_held_out_rows) with its reader, in one
place: REGISTERED_STEP_SETS (a new registered set is wired in here), STEP_SET_BUNDLES (their folders: trust/build's
built_from) and all_held_out_rows (the rows of every set that has run). Session 48 (house48): it was
heldout/eager_cudnnstep's, one set's reader that the registry made import every other reader. The readers: the
long-sequence sets (heldout/eager_cudnnstep), session 41's eager-today set (heldout/eager_today: one GPU and a 2-stage
pipeline), the PP+host-bound sets (heldout/eager_pphost.s44_rows: session 44's pphost and ppcouple, 45's ppblock and
ppfree, 46's ppboth), the one-GPU host-bound sets (heldout/eager_hostsingle: hostsingle, opcheck, opsplit), the FSDP2
no-sync, DDP accumulation and ZeRO-2 sets (heldout/eager_nosync), the compile + checkpointing sets
(heldout/eager_compilefsdp) and the 4-GPU TP x DP sets (heldout/eager_tp4); REGISTERED_STEP_SETS below is the list."""

from __future__ import annotations

from simcluster.heldout import eager_compilefsdp, eager_cudnnstep, eager_hostsingle, eager_nosync, eager_pphost, eager_today, eager_tp4
from simcluster.heldout.eager import ROOT

# The registered step sets whose rows all_held_out_rows gives (trust/build.eager_held_out_rows), each with its reader:
# the long-sequence ones (cudnnstep, fsdpmem, fsdpstep) by heldout/eager_cudnnstep, the eager-today set by heldout/eager_today (its own
# row checks, read through eager_regimes.step_set_rows and eager_runs.process_runs as these are)
# (readers looked up when called, so that a test's monkeypatch of held_out_rows takes)
REGISTERED_STEP_SETS = ((eager_cudnnstep.CUDNNSTEP_BUNDLE, lambda b: eager_cudnnstep.held_out_rows(b)),
                        (eager_cudnnstep.FSDPMEM_BUNDLE, lambda b: eager_cudnnstep.held_out_rows(b)),
                        (eager_cudnnstep.FSDPSTEP_BUNDLE, lambda b: eager_cudnnstep.held_out_rows(b)),
                        (eager_today.TODAY_BUNDLE, lambda b: eager_today.held_out_rows(b)),
                        (eager_pphost.PP_HOST_S44_BUNDLE, lambda b: eager_pphost.s44_rows(b)),
                        (eager_pphost.PP_COUPLE_BUNDLE, lambda b: eager_pphost.s44_rows(b)),
                        (eager_pphost.PP_BLOCK_BUNDLE, lambda b: eager_pphost.s44_rows(b)),
                        (eager_pphost.PP_FREE_BUNDLE, lambda b: eager_pphost.s44_rows(b)),
                        (eager_pphost.PP_BOTH_BUNDLE, lambda b: eager_pphost.s44_rows(b)),
                        (eager_hostsingle.HOSTSINGLE_BUNDLE, lambda b: eager_hostsingle.held_out_rows(b)),
                        (eager_hostsingle.OPCHECK_BUNDLE, lambda b: eager_hostsingle.held_out_rows(b)),
                        (eager_hostsingle.OPSPLIT_BUNDLE, lambda b: eager_hostsingle.held_out_rows(b)),
                        (eager_hostsingle.HB49_BUNDLE, lambda b: eager_hostsingle.held_out_rows(b)),
                        (eager_nosync.NOSYNC_BUNDLE, lambda b: eager_nosync.held_out_rows(b)),
                        (eager_nosync.DDPACCUM_BUNDLE, lambda b: eager_nosync.held_out_rows(b, "ddp")),
                        (eager_nosync.ZERO2_BUNDLE, lambda b: eager_nosync.held_out_rows(b)),
                        (eager_nosync.ZERO2B_BUNDLE, lambda b: eager_nosync.held_out_rows(b)),
                        (eager_nosync.ZERO2C_BUNDLE, lambda b: eager_nosync.held_out_rows(b)),
                        (eager_nosync.ZERO2D_BUNDLE, lambda b: eager_nosync.held_out_rows(b)),
                        (eager_nosync.ZERO2E_BUNDLE, lambda b: eager_nosync.held_out_rows(b)),
                        (eager_nosync.ZERO2F_BUNDLE, lambda b: eager_nosync.held_out_rows(b)),
                        (eager_nosync.ZERO2G_BUNDLE, lambda b: eager_nosync.held_out_rows(b)),
                        (eager_compilefsdp.COMPILEFSDP_BUNDLE, lambda b: eager_compilefsdp.held_out_rows(b)),
                        (eager_compilefsdp.COMPILEAC_BUNDLE, lambda b: eager_compilefsdp.held_out_rows(b)),
                        (eager_compilefsdp.REPEATS47_BUNDLE, lambda b: eager_compilefsdp.held_out_rows(b)),
                        (eager_tp4.TP4_BUNDLE, lambda b: eager_tp4.held_out_rows(b)),
                        (eager_tp4.TP4B_BUNDLE, lambda b: eager_tp4.held_out_rows(b)),
                        (eager_compilefsdp.COMPCK_BUNDLE, lambda b: eager_compilefsdp.held_out_rows(b)),
                        (eager_compilefsdp.COMPCK2_BUNDLE, lambda b: eager_compilefsdp.held_out_rows(b)),
                        # session 49's x2set49: one bundle, two readers (its Z3 and G rows FSDP2 zero 3 / zero 2, its C
                        # rows compiled FSDP2 with and without checkpointing)
                        (eager_nosync.X2SET49_BUNDLE, lambda b: eager_nosync.held_out_rows(b, parts=("Z3", "G"))
                         + eager_compilefsdp.held_out_rows(b, parts=("C",))),
                        (eager_compilefsdp.MEM49_BUNDLE, lambda b: eager_compilefsdp.held_out_rows(b)),
                        # session 51's lab1x51: one bundle, two readers (its C rows compiled with every block
                        # checkpointed, its E rows selective checkpointing by op)
                        (eager_hostsingle.LAB1X51_BUNDLE, lambda b: eager_compilefsdp.held_out_rows(b, parts=("C",))
                         + eager_hostsingle.held_out_rows(b, parts=("E",))),
                        # session 52's one-GPU sets: lab1x52's host-bound rows, lseq52's long-sequence rows
                        (eager_hostsingle.LAB1X52_BUNDLE, lambda b: eager_hostsingle.held_out_rows(b)),
                        (eager_hostsingle.LSEQ52_BUNDLE, lambda b: eager_hostsingle.held_out_rows(b)))
# every REGISTERED_STEP_SETS bundle, eager-today's included (trust/build's built_from reads it)
STEP_SET_BUNDLES = tuple(b for b, _ in REGISTERED_STEP_SETS)


def all_held_out_rows() -> list[dict]:
    """The rows of every REGISTERED_STEP_SETS set that has run, each by its own reader (trust/build.eager_held_out_rows)."""
    return [row for bundle, read in REGISTERED_STEP_SETS for row in read(ROOT / bundle)]
