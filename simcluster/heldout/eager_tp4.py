"""Session 48's two registered 4-GPU TP x DP sets (issue 44): tp4 (calibration/h200x4-tp4-2026-11-30, validation/tp4.py)
with a candidate host term, and tp4b (calibration/h200x4-tp4b-2026-11-30, validation/tp4b.py: the lease's own host runs
and the steps in one call, LEASE_HOST and lease_own_predict below).

tp4: torch tensor parallel over pairs of ranks with DDP (`tp+ddp`) or FSDP2 (`tp+fsdp`) across the pairs on 4 x H200 (the runner's
--mode tp+ddp / tp+fsdp --group 2, mesh dp 2 x tp 2), three shapes new to calibration/ when it ran, each in 3 processes.

Two predictions per row, both registered before the run:
  `step_ms` (the shipped model: heldout/eager_regimes.registered_row, the product's host fits, where a 2-D layout takes
  tp's host fit, eager.host_mode) and `step_ms_candidate` (CANDIDATE below).
CANDIDATE (session 48, off in the product): a tp+fsdp rank's host cost per kernel and per step is fitted on tp+fsdp's
  OWN hidden-128 host runs (4 ranks, the tpdp2 lease's host folder, CANDIDATE_HOST), not on tp's 2-rank runs: FSDP2
  adds host work per wrapped block that tp's fit does not carry (its pre-forward hook issues the block's all-gather and
  its copy-out, its post-backward hook the reduce-scatter and the gradient's DTensor wrapping, each a Python call per
  block per micro-batch on each of the 4 processes sharing the host). tp+ddp keeps the shipped fit (DDP's reducer is
  C++ and its bucketed all_reduce hooks add little host work per block), so its two columns are equal. The candidate
  was chosen on the 4-GPU tp+fsdp rows of the meshes, meshes-repeat, meshes2, tpdp and tpdp2 sets (development:
  their errors were looked at; docs/models/llm-findings.md, session 48 tp4), never on this set.

A row's residual in the error bands is against the shipped `step_ms`, its host-bound flag the shipped registered share's
(host_flag "registered"); measured: the mean over a row's processes of rank 0's median step (process_step). No row
until a set has run. Both sets' rows are read by held_out_rows (one bundle each), the same way."""

from __future__ import annotations

from pathlib import Path

from simcluster.heldout.eager import ROOT, TPDP2_BUNDLE

TP4_BUNDLE = "calibration/h200x4-tp4-2026-11-30"   # listed in step_sets.REGISTERED_STEP_SETS
# Session 48's second 4-GPU TP x DP set (helper tp4b): the lease's own host runs and the steps in one call, so that the
# lease-own column prices the steps with this lease's host (validation/tp4b.py). Listed in step_sets.REGISTERED_STEP_SETS.
TP4B_BUNDLE = "calibration/h200x4-tp4b-2026-11-30"
LEASE_HOST = "runs/host"   # inside a bundle: the set's own hidden-128 host runs (MODE-L<n>.json, tp+ddp / tp+fsdp at 2 and 32 layers)
CANDIDATE_HOST = ROOT / TPDP2_BUNDLE / "host"     # tp+fsdp's own 4-rank host runs (hidden 128 at 2, 8, 32 layers)
CANDIDATE_MODES = ("tp+fsdp",)                    # the layouts the candidate changes; others keep the shipped host fit
MESH = {"dp": 2, "tp": 2}                         # the runner's --group 2 on 4 ranks


def candidate_predict(preset: str, seq: int, mb: int, mode: str) -> dict:
    """The candidate's regime_predict of one shape (module docstring): tp+fsdp with its own host fit from
    CANDIDATE_HOST, any other layout the shipped prediction."""
    from simcluster.heldout.eager_regimes import regime_predict

    own = CANDIDATE_HOST if mode in CANDIDATE_MODES else None
    return regime_predict(preset, mb, mode, "h200", own_host=own, seq=seq)


def process_step(bundle: Path, reg: dict, k: int) -> tuple[dict | None, str]:
    """(timed shape, '') of process k of a registered row (runs/NAME-rK.json) when it ran the registered configuration
    (the row's mode on 4 ranks, mesh MESH, the preset, the shape ok with a positive median step); else (None, why)."""
    from simcluster.heldout.eager import process_document
    from simcluster.heldout.eager_nosync import registered_shape

    doc, why = process_document(bundle / "runs" / f"{reg['name']}-r{k}.json", reg["mode"], 4, reg["preset"])
    if doc is not None and doc.get("mesh") != MESH:
        doc, why = None, f"not mesh {MESH} (mesh {doc.get('mesh')})"
    return registered_shape(doc, reg, why)


def held_out_rows(bundle: Path = ROOT / TP4_BUNDLE) -> list[dict]:
    """Every registered row that ran, in heldout/eager_regimes.held_out_rows' keys, against the shipped step (read as
    eager_nosync.flat_rows reads the nosync set): [] before the run."""
    from simcluster.heldout.eager_nosync import flat_rows

    return flat_rows(bundle, process_step, lambda reg: f"{reg['preset']} {reg['mode']} x4 seq {reg['seq']} mb {reg['micro_batch']}")


def lease_own_predict(bundle: Path, preset: str, seq: int, mb: int, mode: str) -> tuple[dict | None, str]:
    """(regime_predict of one shape with own_host the bundle's LEASE_HOST: the 2-D mode's OWN host fit, the tpdp sets'
    rule V, labelled with the folder's repository path, '') or (None, why) where that folder
    has no fit of `mode` (fewer than two layer counts ran)."""
    from simcluster.heldout.eager_regimes import regime_predict
    from simcluster.llm import eager

    host = bundle / LEASE_HOST
    try:
        fitted = host.is_dir() and mode in eager.fit_modes(host)
    except ValueError as exc:   # a host run that failed leaves a file that is no llm-step document
        return None, f"{LEASE_HOST}: {exc}"
    if not fitted:
        return None, f"no {mode} host fit in {LEASE_HOST} (two layer counts needed)"
    return regime_predict(preset, mb, mode, "h200", own_host=host, seq=seq), ""
