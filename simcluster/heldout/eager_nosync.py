"""Session 45's registered no-sync set (calibration/h200x2-nosync-2026-11-30, validation/nosync.py; issue 44) as held-out
eager rows: FSDP2 on 2 x H200 with 4 micro-batches a step, the gradients reduce-scattered after every micro-batch (sync,
FSDP2's default: runner mode `fsdp`) or once a step (no-sync: `fsdp+nosync`, llm/grad_sync.py), on three shapes new to
calibration/ when it ran, each (shape, variant) in 2 processes.

Its registered.yaml (written at e9de981c, before the runs) holds one prediction per row, `predicted`: the product's
answer (`simcluster run` with framework torch and the product's host fits: heldout/eager_regimes.registered_row). A row
is one (shape, variant), its residual against that step, its host-bound flag that prediction's registered share's
(llm/host_bound.is_host_bound), today's product step beside it (eager_regimes.todays_step_s, the same call with today's
model) for trust/moved.py. Measured: the mean over a row's processes of rank 0's median step, each process read as the
read-out reads it (`process_step`: FSDP2 on 2 ranks, the registered preset, 4 micro-batches reduced per micro-batch or
per step, the registered shape ok); no row until the set has run. One source.

Regime (trust/regime.py): FSDP or FSDP+host-bound, sync and no-sync alike. The regime key names the runner's mode and the
axes the rules list (+compile, +checkpointing policy, +host-bound); no-sync is a flag of the fsdp mode
(`--no-sync`), not a mode, and llm_regime_of keys no answer by it, so a no-sync answer takes the FSDP band its rows
are pooled in. (Keyed apart, its 3 rows would sit under trust/table.MIN_ROWS in two regimes and its answers take the
family's pooled band; the set's rule M read no-sync's step 5.4% against sync's 6.4% on the same lease.)

The ddpaccum set (calibration/h200x2-ddpaccum-2026-11-30, validation/ddpaccum.py: torch DDP with 4 micro-batches, all-
reduced after every micro-batch or once a step under no_sync, two GPU-bound shapes x 2 processes) is read the same way
with the runner's mode `ddp`: its rows are DDP rows, one source of its own.

Session 46's zero2 set (calibration/h200x2-zero2-2026-11-30, validation/zero2.py: FSDP2 with reshard_after_forward=False,
the model's framework torch zero 2, beside the FSDP2 default as its control, 4 micro-batches reduced every micro-batch)
is read the same way with mode `fsdp`: a row names the process that timed it (`process`, where one process timed two
shapes) and whether that process kept its parameters from forward to backward (`reshard_after_forward`, checked against
the document's fsdp_reshard_after_forward); one source of its own. Its repeat, the zero2b set (calibration/h200x2-
zero2b-2026-11-30, validation/zero2b.py: one 8b shape, 4 processes a variant), is read the same way, one source of its
own, and so is session 47's zero2c set (calibration/h200x2-zero2c-2026-11-30, validation/zero2c.py: the forward
re-gather on a GPU-bound 8b shape, 4 processes a variant), and its direct repeat, the zero2d set (calibration/h200x2-
zero2d-2026-11-30, validation/zero2d.py: zero 2 with FSDP2's default reshard after backward against the same with
set_reshard_after_backward(False) between micro-batches, `reshard_after_backward` on its rows, checked against the
document's fsdp_reshard_after_backward, default true), and session 48's zero2e set (calibration/h200x2-zero2e-2026-11-30,
validation/zero2e.py: zero2d's two variants on GPU-bound 1b and 3b shapes; its rows' `predicted.step_ms` the shipped
column, the candidate's beside it read by its read-out only), and its successor, the zero2f set (calibration/h200x2-
zero2f-2026-11-30, validation/zero2f.py: the same variants on GPU-bound 8b and 3b shapes, the exposed re-gather's
candidate beside the shipped column, read the same way)."""

from __future__ import annotations

import statistics
from pathlib import Path

from simcluster.heldout.eager import ROOT

NOSYNC_BUNDLE = "calibration/h200x2-nosync-2026-11-30"   # listed in step_sets.REGISTERED_STEP_SETS
ZERO2_BUNDLE = "calibration/h200x2-zero2-2026-11-30"        # the zero2 set (validation/zero2.py), mode fsdp
ZERO2B_BUNDLE = "calibration/h200x2-zero2b-2026-11-30"      # its powered repeat (validation/zero2b.py): 8b 448:1, read the same way
ZERO2C_BUNDLE = "calibration/h200x2-zero2c-2026-11-30"      # session 47's GPU-bound re-gather set (validation/zero2c.py): 8b 1440:2
ZERO2D_BUNDLE = "calibration/h200x2-zero2d-2026-11-30"      # its direct repeat (validation/zero2d.py): 8b 2912:1, zero 2
                                                              # with and without FSDP2's reshard after backward
ZERO2E_BUNDLE = "calibration/h200x2-zero2e-2026-11-30"      # session 48's (validation/zero2e.py): zero2d's variants on 1b
                                                              # 3296:2 and 3b 2400:2
ZERO2F_BUNDLE = "calibration/h200x2-zero2f-2026-11-30"      # its successor (validation/zero2f.py): the exposed re-gather's
                                                              # candidate on 8b 2592:1 and 3b 2592:2
ZERO2G_BUNDLE = "calibration/h200x2-zero2g-2026-11-30"      # its successor (validation/zero2g.py): four switches, one
                                                              # candidate, on 8b 2656:1 and 3b 2656:2
X2SET49_BUNDLE = "calibration/h200x2-x2set49-2026-12-01"    # session 49's (validation/x2set49.py): its Z3 (zero 3, 8b 2464:1,
                                                              # 3b 3040:2) and G (zero 2, 2b 3040:2) rows, parts=("Z3", "G");
                                                              # its C rows heldout/eager_compilefsdp's
DDPACCUM_BUNDLE = "calibration/h200x2-ddpaccum-2026-11-30"   # the ddpaccum set (validation/ddpaccum.py): torch DDP, its
                                                              # processes the runner's --mode ddp, read the same way
MICROBATCHES = 4          # the set's gradient-accumulation micro-batches per step (validation/nosync.py)
SHIPPED = "product"       # the key the flat registered prediction is read under (eager_regimes.step_set_rows)


def grad_sync(reg: dict) -> str:
    """The runner's grad_accum.grad_sync a registered row ran: 'step' (no-sync) or 'micro_batch' (sync)."""
    return "step" if reg["variant"] == "nosync" else "micro_batch"


def process_step(bundle: Path, reg: dict, k: int, mode: str = "fsdp") -> tuple[dict | None, str]:
    """(timed shape, '') of process k of a registered row (runs/<its process or name>-rK.json) when it ran the registered
    configuration (the runner's --mode `mode`, FSDP2 by default, 2 ranks, the preset, MICROBATCHES reduced per
    grad_sync(reg), FSDP2's reshard_after_forward as the row's, default true; the registered shape ok with a positive
    median step); else (None, why). validation/nosync.py's read-out reads its processes through this."""
    from simcluster.heldout.eager import process_document

    doc, why = process_document(bundle / "runs" / f"{reg.get('process', reg['name'])}-r{k}.json", mode, 2, reg["preset"])
    sync, keep = grad_sync(reg), reg.get("reshard_after_forward", True)   # the zero2 set's rows name both (module docstring)
    if doc is not None and doc.get("grad_accum") != {"micro_batches": MICROBATCHES, "grad_sync": sync}:
        doc, why = None, f"not {MICROBATCHES} micro-batches reduced per {sync} (grad_accum {doc.get('grad_accum')})"
    if doc is not None and doc.get("fsdp_reshard_after_forward", True) != keep:
        doc, why = None, f"not reshard_after_forward {keep} (fsdp_reshard_after_forward {doc.get('fsdp_reshard_after_forward')})"
    if doc is not None and doc.get("fsdp_reshard_after_backward", True) != reg.get("reshard_after_backward", True):
        doc, why = None, (f"not reshard_after_backward {reg.get('reshard_after_backward', True)} "
                          f"(fsdp_reshard_after_backward {doc.get('fsdp_reshard_after_backward')})")
    return registered_shape(doc, reg, why)


def registered_shape(doc: dict | None, reg: dict, why: str) -> tuple[dict | None, str]:
    """(the document's ok shape of the row's seq and micro-batch, '') when it has a positive median step, else (None,
    `why` or 'no timed shape'): process_step's end, heldout/eager_compilefsdp.process_step's too."""
    shape = next((s for s in (doc or {}).get("shapes") or [] if isinstance(s, dict) and s.get("seq") == reg["seq"]
                  and s.get("micro_batch") == reg["micro_batch"] and s.get("status") == "ok"), None)
    step = (shape or {}).get("median_step_s")
    if doc is None or not isinstance(step, (int, float)) or step <= 0:
        return None, why or "no timed shape"
    return shape, ""


def held_out_rows(bundle: Path = ROOT / NOSYNC_BUNDLE, mode: str = "fsdp", parts: tuple[str, ...] | None = None) -> list[dict]:
    """Every registered (shape, variant) that ran, in heldout/eager_regimes.held_out_rows' keys (module docstring; the
    ddpaccum set with mode "ddp": DDP rows, sync and no_sync alike): [] before the run; a row without predicted's step or
    host share: one SimclusterError line naming rows[i]; `parts`: only the rows whose `part` is one of them (x2set49's)."""
    return flat_rows(bundle, lambda b, reg, k: process_step(b, reg, k, mode),
                     lambda reg: f"{reg['preset']} {mode} {reg['variant']} seq {reg['seq']} mb {reg['micro_batch']} "
                                 f"x{MICROBATCHES} micro-batches", parts)


def flat_rows(bundle: Path, step_of, label, parts: tuple[str, ...] | None = None) -> list[dict]:
    """A registered set whose rows hold a flat `predicted` (step_ms, host_share) as held-out rows against that step
    (eager_regimes.step_set_rows): each row measured as the mean over its processes of step_of(bundle, reg, k)'s
    shape's median step, labelled label(reg), today's product step beside it; [] before the run; a row without name,
    variant, processes or the flat prediction: one SimclusterError line naming rows[i]. held_out_rows' reading, and
    heldout/eager_tp4's."""
    from simcluster.errors import SimclusterError
    from simcluster.heldout.eager_regimes import step_set_rows, todays_step_s
    from simcluster.llm.host_bound import is_host_bound
    from simcluster.strict import load_yaml

    if not (bundle / "runs").is_dir():
        return []   # registered, not run yet
    path = bundle / "registered.yaml"
    regs = []
    for i, reg in enumerate(load_yaml(path)["rows"]):
        if parts is not None and reg.get("part") not in parts:
            continue
        try:
            pred = reg["predicted"]
            flat = {"step_ms": float(pred["step_ms"]), "host_share": float(pred["host_share"]),
                    "host_bound": is_host_bound(float(pred["host_share"]))}
            reg["name"], reg["variant"], int(reg["processes"])
        except (KeyError, TypeError, ValueError) as exc:
            raise SimclusterError(f"{path}: rows[{i}]: no name, variant, processes or predicted step_ms and host_share "
                                  f"({type(exc).__name__}: {exc})") from None
        regs.append(reg | {"predicted": {SHIPPED: flat}})

    def measure(reg: dict) -> float | None:
        steps = [shape["median_step_s"] * 1e3 for k in range(1, int(reg["processes"]) + 1)
                 if (shape := step_of(bundle, reg, k)[0]) is not None]
        return statistics.mean(steps) if steps else None

    return step_set_rows(bundle, SHIPPED, measure, regs, lambda reg: {"label": label(reg), "today_s": todays_step_s(reg)})
