"""Session 46's compilefsdp set (calibration/h200x2-compilefsdp-2026-11-30, validation/compilefsdp.py; issue 44):
torch.compile with every block checkpointed, on one GPU (llm-step --compile --ac-mode full: torch.utils.checkpoint
around each compiled block) and under FSDP2 on 2 ranks (--mode fsdp --compile --compile-scope model --ac-mode full:
the whole model compiled after fully_shard, as KempnerForge's trainer). The model's side: llm/compiled.py (the
recomputed compiled forward), llm/eager_compiled.compiled_framework (FSDP2 around compiled blocks, the eager host cost per block).

Host fits (fits()): the 2 x H200 host's eager fits (heldout/eager.MODE_HOST: single, ckpt, fsdp) and the compile mode's
from the one-GPU compile set's host runs (heldout/eager_registered.FLAG_HOSTS, where the compile fit lives), scaled to
the 2 x H200 host's speed by the single fits' ratio (MODE_HOST's c over FLAG_HOSTS' c: llm/eager.lease_scaling's rule).
A row's residual is against its registered step, its host-bound flag the registered one."""

from __future__ import annotations

import statistics
from functools import cache
from pathlib import Path

from simcluster.heldout.eager import ROOT
from simcluster.llm import eager

COMPILEFSDP_BUNDLE = "calibration/h200x2-compilefsdp-2026-11-30"   # listed in step_sets.REGISTERED_STEP_SETS
# session 46's compileac set (validation/compileac.py): the same rows and reader, its registered.yaml's `predicted` the
# model at registration (both fixes off; the shipped model has had loss_in_graph on since rule AM read ADOPT),
# `predicted_fixed` with framework.casts_in_block and loss_in_graph on (fixed_framework)
COMPILEAC_BUNDLE = "calibration/h200x2-compileac-2026-11-30"   # listed in step_sets.REGISTERED_STEP_SETS
# session 47's repeats47 set (validation/repeats47.py): the fsdp variant only, two shapes in three processes each, the
# shipped model registered (loss_in_graph on, casts_in_block off); the same reader
REPEATS47_BUNDLE = "calibration/h200x2-repeats47-2026-11-30"   # listed in step_sets.REGISTERED_STEP_SETS
# session 48's compck set (validation/compck.py): the fsdp variant, two shapes in three processes each, `predicted` the
# shipped model (`predicted_candidate` framework.whole_model_graph on, read by its read-out only); the same reader
COMPCK_BUNDLE = "calibration/h200x2-compck-2026-11-30"   # listed in step_sets.REGISTERED_STEP_SETS
# session 48's compck2 set (validation/compck2.py): compck's design on two new shapes plus the lease's own host runs
# (runs/host: fits(own_host)); `predicted` the shipped model enters, the candidate's columns read by its read-out only
COMPCK2_BUNDLE = "calibration/h200x2-compck2-2026-11-30"   # listed in step_sets.REGISTERED_STEP_SETS
# session 49's x2set49 set (validation/x2set49.py): its part C's rows, compck2's fsdp variant on 1b 2464:2 and compiled
# FSDP2 WITHOUT checkpointing on 1b 3040:2 (variant fsdpnock, NOCKPT_VARIANTS), `predicted` the shipped model (its
# `predicted_candidate`, fsdp_free_phases off, read by its read-out only); the same reader with parts=("C",): the bundle
# is listed once in step_sets.REGISTERED_STEP_SETS, its Z3 / G rows read by heldout/eager_nosync
X2SET49_BUNDLE = "calibration/h200x2-x2set49-2026-12-01"
# session 49's mem49 set (validation/mem49.py): compiled FSDP2 without checkpointing (fsdpnock) on 1b 3104:4 and 2b
# 3104:2, `predicted` the shipped step (its peak_mem_GiB_before, the memory before mem49's term, read by its read-out
# only); the same reader, every row
MEM49_BUNDLE = "calibration/h200x2-mem49-2026-12-01"   # listed in step_sets.REGISTERED_STEP_SETS
SHIPPED = "today"   # held_out_rows' key for registered.yaml's `predicted` (step_set_rows reads predicted[SHIPPED])
# variant -> (heldout/eager_regimes.layout_of mode, the runner's --mode, ranks, --compile-scope), each with --ac-mode full
VARIANTS = {"single": ("single+ckpt", "single", 1, "layer"), "fsdp": ("fsdp+ckpt", "fsdp", 2, "model")}
# the same without checkpointing (--ac-mode none): x2set49's fsdpnock rows; apart from VARIANTS, which the compile sets'
# read-outs iterate as their registered variants
NOCKPT_VARIANTS = {"fsdpnock": ("fsdp", "fsdp", 2, "model")}


def variant_of(variant: str) -> tuple[str, str, int, str, str]:
    """(layout mode, runner mode, ranks, compile scope, the runner's --ac-mode) of a registered variant."""
    if variant in NOCKPT_VARIANTS:
        return (*NOCKPT_VARIANTS[variant], "none")
    return (*VARIANTS[variant], "full")


@eager.reads_torch_framework
@cache
def fits(own_host: Path | None = None) -> dict:
    """Each mode's host fit (module docstring): MODE_HOST's, with FLAG_HOSTS' compile fit at MODE_HOST's host speed.
    `own_host` (session 48's compck2 set, validation/compck2.py): a lease's own hidden-128 host runs (single-L<n>,
    fsdp-L<n>: eager.fit_modes) in place of MODE_HOST's single and fsdp fits, the compile fit at that lease's single
    speed by the same rule: the product's host term measured on the lease the steps ran on."""
    from simcluster.heldout.eager import MODE_HOST
    from simcluster.heldout.eager_registered import FLAG_HOSTS, folder_fits

    base, flag = eager.fit_modes(MODE_HOST), folder_fits(FLAG_HOSTS)
    if own_host is not None:
        own = eager.fit_modes(own_host)
        if not {"single", "fsdp"} <= own.keys():
            from simcluster.errors import SimclusterError
            raise SimclusterError(f"{own_host}: expected single-L<n>.json and fsdp-L<n>.json host runs at two or more "
                                  f"layer counts each (found fits for: {', '.join(sorted(own)) or 'none'})")
        base = base | {m: own[m] for m in ("single", "fsdp")}
    scale = base["single"][0] / flag["single"][0]
    c = flag["compile"]
    return base | {"compile": (c[0] * scale, c[1] * scale, c[2])}


def fixed_framework(fw, on: bool = True):
    """The compiled framework with session 46's compileac fixes on, or (on False) off whatever the product's default:
    framework.casts_in_block (each block's weight casts issued in its graph) and loss_in_graph (the whole-model compiled
    FSDP2's loss and root unit in memory.py); torch_framework_as's wrap."""
    from dataclasses import replace

    return replace(fw, casts_in_block=on, loss_in_graph=on) if fw.compiled else fw


def before_adopt48(fw):
    """The framework as every set registered before session 48's adoption priced it (compilefsdp, compileac, repeats47,
    compck; compck2's `predicted` and `predicted_candidate`): framework.whole_model_graph and fsdp_free_phases off, the
    two terms llm/eager_compiled.ADOPTED_FSDP2 turned on for torch-compile+fsdp2 when compck2's rule RF read ADOPT (off
    on every other framework already); torch_framework_as's wrap, so those registrations stay reproducible."""
    from simcluster.heldout.registration import switched_off
    from simcluster.llm.eager_compiled import ADOPTED_FSDP2

    return switched_off(fw, ADOPTED_FSDP2)


def predict(preset: str, seq: int, mb: int, variant: str, fixed: bool | None = None, own_host: Path | None = None) -> dict:
    """Today's model's step (ms), host share and flag, steady and peak memory (GiB, rank 0) of a row; `fixed` True / False:
    with both compileac fixes on / off (fixed_framework), None the product's own; `own_host`: fits(own_host)'s host."""
    from simcluster.heldout.eager_regimes import regime_predict
    from simcluster.llm.host_bound import is_host_bound

    if fixed is not None:
        with eager.torch_framework_as(lambda fw: fixed_framework(fw, fixed)):
            return predict(preset, seq, mb, variant, own_host=own_host)
    p = regime_predict(preset, mb, variant_of(variant)[0], "h200", seq=seq, fits=fits(own_host), compiled=True)
    return {"step_ms": p["step_ms"], "host_share": p["host_share"], "host_bound": is_host_bound(p["host_share"]),
            "steady_mem_GiB": p["steady_mem_GiB"][0], "peak_mem_GiB": p["stage_mem_GiB"][0]}


def process_step(bundle: Path, reg: dict, k: int) -> tuple[dict | None, str]:
    """(timed shape, '') of process k of a registered row when it ran the registered configuration (the variant's runner
    mode and ranks, the preset, --compile at the variant's scope, its --ac-mode: variant_of, the shape ok); else (None,
    why)."""
    from simcluster.heldout.eager import process_document
    from simcluster.heldout.eager_nosync import registered_shape
    from simcluster.llm.eager_ac import document_mode

    _, mode, ranks, scope, ac = variant_of(reg["variant"])
    doc, why = process_document(bundle / "runs" / f"{reg['name']}-r{k}.json", mode, ranks, reg["preset"])
    if doc is not None and ((doc.get("compile") or {}).get("scope_flag") != scope or document_mode(doc) != ac):
        doc, why = None, f"not --compile-scope {scope} with --ac-mode {ac} (compile {doc.get('compile')}, ac {document_mode(doc)})"
    return registered_shape(doc, reg, why)


def held_out_rows(bundle: Path = ROOT / COMPILEFSDP_BUNDLE, parts: tuple[str, ...] | None = None) -> list[dict]:
    """Every registered row that ran, in heldout/eager_regimes.held_out_rows' keys (eager_regimes.step_set_rows, the
    mean of its processes' rank-0 median steps) with framework, recompute and processes: [] before the run; `parts`:
    only the rows whose `part` is one of them (x2set49's C)."""
    from simcluster.heldout.eager_regimes import step_set_rows
    from simcluster.strict import load_yaml

    if not (bundle / "runs").is_dir():
        return []
    processes: dict[str, int] = {}

    def measure(reg: dict) -> float | None:
        steps = [float(s["median_step_s"]) * 1e3 for k in range(1, int(reg["processes"]) + 1)
                 if (s := process_step(bundle, reg, k)[0]) is not None]
        processes[reg["name"]] = len(steps)
        return statistics.mean(steps) if steps else None

    def describe(reg: dict) -> dict:
        today = predict(reg["preset"], int(reg["seq"]), int(reg["micro_batch"]), reg["variant"])["step_ms"]
        _, _, ranks, _, ac = variant_of(reg["variant"])
        return {"label": f"{reg['preset']} {reg['variant']} compile{'+ckpt' * (ac == 'full')} seq {reg['seq']} mb "
                         f"{reg['micro_batch']}",
                "today_s": today / 1e3, "framework": "torch-compile" + ("+fsdp2" if ranks > 1 else ""),
                "recompute": ac, "processes": processes.get(reg["name"], 0)}

    regs = [r | {"predicted": {SHIPPED: r["predicted"]}} for r in load_yaml(bundle / "registered.yaml")["rows"]
            if parts is None or r.get("part") in parts]
    return step_set_rows(bundle, SHIPPED, measure, regs=regs, describe=describe)
