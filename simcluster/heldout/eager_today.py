"""Session 41's eager-today set (calibration/h200x2-eager-today-2026-11-30, validation/eager_today.py; issue 44): the
eager regimes whose bands were measured on an earlier model (trust/moved.py) -- single, single+compile,
single+ckpt-every2, single+sac-op and the 2-stage 1F1B pipeline (PP) -- re-measured on (preset, seq, micro-batch)
shapes new to calibration/, each predicted by the model as it shipped at main b540476b before any ran.

registered.yaml's rows: {name, regime (trust's key, trust/regime.llm_regime), mode (single, pp-1f1b or pp-gpipe), preset, seq,
micro_batch, compile, ac_mode, microbatches, processes, predicted.today {step_ms, host_share, host_bound}}. One-GPU rows
are predicted with the one-GPU host fits (heldout/eager_registered.FLAG_HOSTS through flag_hosts_predict: the fits
compile2, lease3, compile4 and eager5 registered) on FLAG_CARD; pipeline rows with the product's default host fits
(heldout/eager.MODE_HOST, llm/host_bound.DEFAULT_HOST) through heldout/eager_regimes.regime_predict. A row's residual is
against its registered step, its host-bound flag the registered one (host_flag "registered"), and today_s (today's model
with the same fits) beside it for trust/moved.py. Measured: the mean over a row's processes of rank 0's median step; a
process whose document is not the registered configuration (preset, shape, compile, checkpointing, layout, ranks) or
holds no ok shape is left out (read_rows says why); a row none of whose processes ran gives no row. The set is one
source."""

from __future__ import annotations

import statistics
from functools import cache
from pathlib import Path

from simcluster.errors import SimclusterError
from simcluster.heldout.eager import ROOT, _document
from simcluster.llm import eager

TODAY_BUNDLE = "calibration/h200x2-eager-today-2026-11-30"   # listed in step_sets.REGISTERED_STEP_SETS
SHIPPED = "today"   # the registered prediction: the model the product shipped at b540476b
PP_MODES = ("pp-1f1b", "pp-gpipe")   # the 2-stage pipelines check_run reads (pp-gpipe: validation/pphost.py)


def checkpointing(reg: dict) -> tuple[str, int]:
    """(recompute policy, every N blocks) of a registered row's ac_mode (llm-step --ac-mode; none when absent)."""
    from simcluster.llm import eager_ac

    par = eager_ac.parallel_of(str(reg.get("ac_mode", "none")))
    return par.recompute, par.recompute_every


def check_run(doc: dict, reg: dict) -> str:
    """'' when an llm-step document ran the registered row's configuration, else why not."""
    from simcluster.heldout.eager_runs import regime_mode_of
    from simcluster.llm import eager_ac

    shapes = doc.get("shapes") if isinstance(doc.get("shapes"), list) else []
    shape = next((s for s in shapes if isinstance(s, dict) and s.get("status") == "ok"), None)
    if shape is None or not isinstance(shape.get("median_step_s"), (int, float)) or not shape["median_step_s"] > 0:
        return "no ok shape with a positive median_step_s"
    pp = reg["mode"] in PP_MODES
    model, pipeline = doc.get("model"), doc.get("pipeline")
    if not isinstance(model, dict) or (doc.get("mode") == "pp" and not isinstance(pipeline, dict)):
        return "`model` (or a pipeline's `pipeline`) is not a mapping"
    have = (model.get("preset"), shape.get("seq"), shape.get("micro_batch"), bool(doc.get("compile")),
            eager_ac.document_mode(doc), regime_mode_of(doc) if doc.get("mode") == "pp" else doc.get("mode"), doc.get("world_size", 1),
            shape.get("microbatches", 1) if pp else 1)
    want = (reg["preset"], reg["seq"], reg["micro_batch"], bool(reg.get("compile")), str(reg.get("ac_mode", "none")),
            reg["mode"], 2 if pp else 1, reg.get("microbatches", 1) if pp else 1)
    return "" if have == want else f"ran {have}, registered {want}"


def read_process(text: str, reg: dict) -> tuple[dict | None, str]:
    """(llm-step document, '' or why the process is not the registered row's) of a process's file: the reading
    eager_runs.process_runs takes from this set (a document among the log lines, check_run's configuration)."""
    doc, failure = _document(text.strip())
    if not failure:
        failure = "no llm-step document" if doc is None else check_run(doc, reg)
    return doc, failure


def registered(bundle: Path) -> list[dict]:
    """registered.yaml's rows; a row without its name, a regime of trust's four " | " parts, its shape, processes,
    micro-batches, checkpointing mode, half_width_pct or predicted.today step, share and flag: one SimclusterError line
    naming the file and rows[i]."""
    from simcluster.strict import load_yaml

    path = bundle / "registered.yaml"
    rows = load_yaml(path).get("rows")
    if not isinstance(rows, list):
        raise SimclusterError(f"{path}: expected `rows:`")
    for i, reg in enumerate(rows):
        try:
            pred = reg["predicted"][SHIPPED]
            float(pred["step_ms"]), bool(pred["host_bound"])
            reg["name"], reg["preset"], int(reg["seq"]), int(reg["micro_batch"]), int(reg["processes"])
            int(reg.get("microbatches", 1)), float(reg["half_width_pct"]), checkpointing(reg)
            if reg["mode"] not in ("single", *PP_MODES):
                raise ValueError(f"mode {reg['mode']!r}")
            if not isinstance(reg["regime"], str) or len(reg["regime"].split(" | ")) != 4:
                raise ValueError(f"regime {reg['regime']!r}: not trust's 'family | framework | layout | precision'")
        except (KeyError, TypeError, ValueError, IndexError, SimclusterError) as exc:   # SimclusterError: an ac_mode
            raise SimclusterError(f"{path}: rows[{i}]: expected name, regime, mode (single, pp-1f1b or pp-gpipe), preset, seq, "
                                  f"micro_batch, processes, microbatches, ac_mode, half_width_pct and "
                                  f"predicted.{SHIPPED} step_ms / host_share / host_bound "
                                  f"({type(exc).__name__}: {exc})") from None
    return rows


@eager.reads_torch_framework
@cache
def predict(preset: str, seq: int, mb: int, mode: str, compiled: bool, ac_mode: str, microbatches: int) -> dict:
    """Today's model's step (ms), host share and flag of a row (the fits the module docstring names)."""
    from simcluster.llm.host_bound import is_host_bound

    if mode in PP_MODES:
        from simcluster.heldout.eager_regimes import regime_predict

        p = regime_predict(preset, mb, mode, "h200", microbatches=microbatches, seq=seq)
        step_ms, share = p["step_ms"], p["host_share"]
    else:
        from simcluster.heldout.eager_registered import flag_hosts_predict

        r = flag_hosts_predict(preset, None, seq, mb, compiled, checkpointing({"ac_mode": ac_mode}))
        step_ms, share = round(r.step_time_s * 1e3, 2), None if r.host_share is None else round(r.host_share, 4)
    return {"step_ms": step_ms, "host_share": share, "host_bound": is_host_bound(share)}


def read_rows(bundle: Path = ROOT / TODAY_BUNDLE) -> tuple[list[dict], list[str]]:
    """Every registered row that ran (eager_regimes.step_set_rows, the processes by eager_runs.process_runs through
    read_process), in heldout/eager_regimes.held_out_rows' keys with framework, recompute, regime and processes, and a
    line per process or row left out. A set not run yet (no runs/): no rows."""
    from simcluster.heldout.eager_regimes import step_set_rows
    from simcluster.heldout.eager_runs import process_runs

    if not (bundle / "runs").is_dir():
        return [], []
    dropped, processes = [], {}

    def measure(reg: dict) -> float | None:
        steps = [p["step_ms"] for p in process_runs(bundle, reg, memory=False, dropped=dropped, read=read_process)]
        if not steps:
            dropped.append(f"{reg['name']}: no process ran its registered configuration")
            return None
        processes[reg["name"]] = len(steps)
        return statistics.mean(steps)

    def describe(reg: dict) -> dict:
        pp = reg["mode"] in PP_MODES
        recompute, every = checkpointing(reg)
        label = f"{reg['preset']} {reg['regime'].split(' | ')[2]} seq {reg['seq']} mb {reg['micro_batch']}"
        today = predict(reg["preset"], int(reg["seq"]), int(reg["micro_batch"]), reg["mode"], bool(reg.get("compile")),
                        str(reg.get("ac_mode", "none")), int(reg.get("microbatches", 1)))
        return {"label": label + (f" x{reg['microbatches']} micro-batches" if pp else ""),
                "transport": "nvlink" if pp else "1 GPU", "framework": "torch-compile" if reg.get("compile") else "torch-amp",
                "recompute": recompute, "recompute_every": every, "processes": processes[reg["name"]],
                "regime": reg["regime"], "today_s": today["step_ms"] / 1e3}

    return step_set_rows(bundle, SHIPPED, measure, registered(bundle), describe), dropped


def held_out_rows(bundle: Path = ROOT / TODAY_BUNDLE) -> list[dict]:
    """read_rows' rows (trust/build.eager_held_out_rows, through heldout/step_sets.all_held_out_rows)."""
    return read_rows(bundle)[0]
