"""One-GPU eager PyTorch lab sets (issue 44) against the steps the model registered for them without seeing the judged
runs: the folder's registered predictions (or, for COMPILE, its registered rule's read), never today's model (the model
may have moved since: docs/models/llm-findings.md).

  COMPILE  calibration/h200x1-llm-compile-2026-11-29: five Llama shapes 0.3b-3.1b, each run eager and with torch.compile
           per block (llm-step --compile); readout-registered.json, the registered rule's read-out at the run's own
           commit c0bd808 (validation/llm_compile_registered_read.py): each step predicted with host costs fitted on
           the same call's host/ runs (hidden 128, never the judged shapes: eager 32.4 us per kernel + 8.14 ms per
           step, compile 30.9 us + 4.15 ms), the model as registered (simcluster/llm unchanged from the registration
           2627245 to c0bd808; before the saved-set change). Not predictions.json: that file, written before the run,
           holds PLACEHOLDER host costs (compile 10 us per kernel, eager session 27's fit), not the rule's (its README).
           Regimes: `single` (eager arm), `single+compile`.
  SAC      calibration/h200x1-llm-sac-2026-11-29: 0.3b / 1b / 3b under activation checkpointing none / full / every:2 / op
           (llm-step --ac-mode); registered.json, added by the registration commit 95e37c4 (the run started from
           2f56ec3: commit.txt).
           Regimes: `single` (none and full, pooled as eager.mode_of names full `ckpt`), `single+ckpt-every2`,
           `single+sac-op`. Its profiled-diagnostic/ runs (op's launch-to-launch spread, a development look after the
           read-out) are not rows.
  COMPILE2 calibration/h200x1-llm-compile2-2026-11-29: five new compiled shapes (one launch each) and two op shapes
           (three launches each); registered.json, written at the registration commit 35ecd4d (run from ecdbdff: commit.txt) by
           `validation/llm_compile2.py --register`. Regimes: `single+compile`, `single+sac-op`. An op shape is ONE row,
           the median of its launches against the registered step (the set's own rule, declared before the run): the
           launches repeat one configuration on one lease, so as three rows they would count toward a band's 5 rows
           (trust/table.MIN_ROWS) what is one measurement, and pull its 80% interval toward one shape's noise. Fewer
           than 2 ok launches of an op shape: no row (the rule's 'incomplete').
  OPHOST2  calibration/h200x1-llm-ophost2-2026-11-29: three new op shapes (three launches each; one third launch
           skipped by its start limit), op's host cost per phase; registered.json, written at the registration commit
           501d966 by `validation/llm_ophost.py --register` (its runs carry no `kind`: all op), read by compile2's rule.
           Regime: `single+sac-op`.
  LEASE3   calibration/h200x1-llm-lease3-2026-11-29: another lease in compile2's format (four compiled shapes, two op
           shapes x three launches), registered at 8cce584 by `validation/llm_lease3.py --register` with the model of
           that day (compile's saved set, op's per-phase host cost), read by read_compile2 and compile2's rule.
           Regimes: `single+compile`, `single+sac-op`.
  COMPILE4 calibration/h200x1-llm-compile4-2026-11-29: a third lease of compiled shapes only (five, one launch each),
           registered at 14e47a6 by `validation/llm_compile4.py --register` with the eager loss at its measured bytes
           (framework.EAGER_LOSS), read by read_compile2 and compile2's rule. Regime: `single+compile`.
  EAGER5   calibration/h200x1-llm-eager5-2026-11-29: five eager shapes (kind eager, one launch each), registered at
           a0ec233 by `validation/llm_eager5.py --register` with eager's up-casts and fused AdamW at their measured
           rates, read by read_compile2 and its rule. Regime: `single`.
  EAGER5_LEASE2 calibration/h200x1-llm-eager5-lease2-2026-11-29: eager5's registration (registered.json byte for byte)
           and script on another launch, declared before it ran (its README): its own source, the same registered steps.
  AC6A, AC6B calibration/h200x1-llm-ac6a-2026-11-29 and -ac6b-: two sets of three new shapes each under checkpointing
           none / full / every:2 (llm-step --ac-mode), registered at a48362f by `validation/llm_ac6.py --register`
           (the sac set's prediction) and run on two leases; registered.json in the sac format, read by read_sac.
           One source (SAME_REGISTRATION): one registration commit, one model, one rule.
           Regimes: `single` (none, full), `single+ckpt-every2`.
  EAGER7   calibration/h200x1-llm-eager7-2026-11-29: the same three modes on three more new shapes, registered at
           1844559 (the autocast block's saved casts and fp32 rotary, llm/autocast_block.py) and run on a third lease;
           read by read_sac. Regimes: `single`, `single+ckpt-every2`.
  EAGER8   calibration/h200x1-llm-eager8-2026-11-29: three more new shapes in the same modes, registered at 4505374
           (split-K in the GEMM curve, hardware/gpu.py) and run on a fourth lease; read by read_sac.

Each folder is one source (one lease, one registration). A run that failed (no document, a shape not ok) or whose
document is not the registered configuration (preset, shape, compile, checkpointing mode) gives no row; `read_*` say
why for each. Rows: {bundle, label, gpus, tp, pp, zero, transport, framework, recompute, recompute_every, measured_s,
predicted_s, host_share, host_bound, host_flag}: the regime (trust/build.eager_residuals) follows from framework,
recompute and host_bound (llm/host_bound.py; host_share: today's model with FLAG_HOSTS' fits, for the flag only). "New
shapes" above are new (preset, seq, micro-batch); ac6b's, eager7's and eager8's repeat some earlier (preset, tokens)
(tests/test_llm_ac6.py REPEATED_TOKENS): still new steps, which is all these rows carry, not new memory (llm.md)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from simcluster.errors import SimclusterError
from simcluster.heldout.eager import _document, model_of, read_runs, step_shape
from simcluster.llm import eager
from simcluster.llm.host_bound import is_host_bound

ROOT = Path(__file__).resolve().parent.parent.parent
COMPILE = "calibration/h200x1-llm-compile-2026-11-29"
SAC = "calibration/h200x1-llm-sac-2026-11-29"
COMPILE2 = "calibration/h200x1-llm-compile2-2026-11-29"
OPHOST2 = "calibration/h200x1-llm-ophost2-2026-11-29"
LEASE3 = "calibration/h200x1-llm-lease3-2026-11-29"
COMPILE4 = "calibration/h200x1-llm-compile4-2026-11-29"
EAGER5 = "calibration/h200x1-llm-eager5-2026-11-29"
EAGER5_LEASE2 = "calibration/h200x1-llm-eager5-lease2-2026-11-29"
AC6A = "calibration/h200x1-llm-ac6a-2026-11-29"
AC6B = "calibration/h200x1-llm-ac6b-2026-11-29"
EAGER7 = "calibration/h200x1-llm-eager7-2026-11-29"
EAGER8 = "calibration/h200x1-llm-eager8-2026-11-29"
REGISTERED = (COMPILE, SAC, COMPILE2, OPHOST2, LEASE3, COMPILE4, EAGER5, EAGER5_LEASE2, AC6A, AC6B, EAGER7, EAGER8)
REGISTERED_READ = "readout-registered.json"   # COMPILE's registered rule as read at the run's commit
MIN_LAUNCHES = 2          # compile2's rule: an op shape's median needs at least two launches


@dataclass(frozen=True)
class Skipped:
    run: str
    why: str


def _positive(value, where: str) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
        raise SimclusterError(f"expected a positive number, got {value!r}", where=where)
    return float(value)


def _timed_shape(doc: dict | None, failure: str) -> tuple[dict | None, str]:
    """A one-shape run's timed shape, or why there is none."""
    if doc is None:
        return None, failure or "no llm-step document"
    shapes = doc.get("shapes") if isinstance(doc.get("shapes"), list) else []
    if len(shapes) != 1 or not isinstance(shapes[0], dict):
        return None, f"{len(shapes)} shapes, expected the one registered"
    shape = shapes[0]
    if shape.get("status") != "ok" or not isinstance(shape.get("median_step_s"), (int, float)) or not shape["median_step_s"] > 0:
        return None, f"shape status {shape.get('status')!r}, no positive median_step_s"
    if doc.get("world_size", 1) != 1:
        return None, f"world_size {doc.get('world_size')!r}, registered for one GPU"
    return shape, ""


def _row(bundle: Path, label: str, framework: str, recompute: tuple[str, int], measured: float, predicted: float,
         shape: tuple[str, int | None, int, int]) -> dict:
    """A row; `shape` (preset, layers or None, seq, micro-batch) gives its host-bound flag (host_share: today's model)
    and, beside the registered step, today's (todays_step_s, with the host runs the registration was fitted on)."""
    share = host_share(*shape, framework == "torch-compile", recompute)
    return {"bundle": bundle.name, "label": label, "gpus": 1, "tp": 1, "pp": 1, "zero": 0, "transport": "1 GPU",
            "framework": framework, "recompute": recompute[0], "recompute_every": recompute[1], "measured_s": measured,
            "predicted_s": predicted, "host_share": share, "host_bound": is_host_bound(share), "host_flag": "today's model",
            "today_s": todays_step_s(*shape, framework == "torch-compile", recompute, registered_hosts(bundle)),
            "shape": step_shape(shape[0], shape[2], shape[3], layers=shape[1])}


def registered_hosts(bundle: Path) -> tuple[str, ...]:
    """The host-run folders a set's registered steps were fitted on: its registered.json's `host` (sac, ac6, eager7,
    eager8, ophost2), the compile set's own call's host/ runs (its rule's fit), else FLAG_HOSTS (compile2, lease3,
    compile4 and eager5 register those folders' fits as `hosts`; and a compile set copied without its host/ runs, whose
    compile fit FLAG_HOSTS holds)."""
    import json

    if (bundle / REGISTERED_READ).is_file() and (bundle / "host").is_dir():
        return (str(bundle / "host"),)   # absolute: ROOT / it is itself
    try:
        named = json.loads((bundle / "registered.json").read_text()).get("host")
    except (OSError, ValueError, AttributeError):
        named = None
    return (named,) if isinstance(named, str) else FLAG_HOSTS


@eager.reads_torch_framework
@cache
def todays_step_s(preset: str, layers: int | None, seq: int, mb: int, compiled: bool, recompute: tuple[str, int],
                  folders: tuple[str, ...]) -> float:
    """Today's step (s) of a one-GPU run, `folders` refitted (folder_fits): beside the registered step (trust/moved.py)."""
    return one_gpu_predict(preset, layers, seq, mb, compiled, recompute, folder_fits(folders)).step_time_s


def folder_fits(folders: tuple[str, ...]) -> dict:
    """Each mode's host fit (eager.fit_modes) from the first of `folders` that has it, as registrations composed them
    (FLAG_HOSTS: llm_compile2.host_fits); not a later folder's over an earlier's (llm-findings.md, session 44)."""
    fits = [eager.fit_modes(ROOT / f) for f in folders]
    return {mode: fit for folder in reversed(fits) for mode, fit in folder.items()}   # the first folder's last, so it wins


# The one-GPU host fits the flag is read with: compile2's, lease3's, compile4's and eager5's registered `hosts` (single,
# ckpt and op from the diagnostic's host runs, compile from the compile set's; validation/llm_compile2.host_fits)
FLAG_HOSTS = ("calibration/h200x1-llm-diag-2026-11-29/host", "calibration/h200x1-llm-compile-2026-11-29/host")
FLAG_CARD = "models/gpu/h200-sxm-interleaved.yaml"


@eager.reads_torch_framework
@cache
def _flag_hosts() -> tuple[dict, object]:
    from simcluster.hardware.gpu import load_gpu

    return folder_fits(FLAG_HOSTS), load_gpu(ROOT / FLAG_CARD)[0]


@eager.reads_torch_framework
@cache
def host_share(preset: str, layers: int | None, seq: int, mb: int, compiled: bool, recompute: tuple[str, int]) -> float | None:
    """The share of the step that moves with the host's speed (llm/host_bound.py) as today's model predicts this
    one-GPU run with FLAG_HOSTS' fits: the regime's host-bound flag only. No registered file records the share of
    its own prediction, so the flag is today's model's; the row's residual stays against the registered step."""
    return flag_hosts_predict(preset, layers, seq, mb, compiled, recompute).host_share


def flag_hosts_predict(preset: str, layers: int | None, seq: int, mb: int, compiled: bool, recompute: tuple[str, int]):
    """Today's model's LlmResult of a one-GPU run on FLAG_CARD with FLAG_HOSTS' fits (host_share's, and the
    eager-today set's one-GPU predictions: heldout/eager_today.predict)."""
    return one_gpu_predict(preset, layers, seq, mb, compiled, recompute, _flag_hosts()[0])


def one_gpu_predict(preset: str, layers: int | None, seq: int, mb: int, compiled: bool, recompute: tuple[str, int], hosts: dict):
    """Today's model's LlmResult of a one-GPU run on FLAG_CARD with the host fits `hosts`."""
    from simcluster.llm import eager
    from simcluster.llm.comm import Network
    from simcluster.llm.predict import predict_llm
    from simcluster.llm.spec import BatchSpec, ParallelSpec
    from simcluster.runner.llm_decoder import PRESETS

    _, gpu = _flag_hosts()
    par = ParallelSpec(recompute=recompute[0], recompute_every=recompute[1])
    fw = eager.torch_framework(par, hosts, compiled=compiled)
    model = model_of({"model": PRESETS[preset] | ({"layers": layers} if layers else {})}, seq)
    return predict_llm(model, par, BatchSpec(mb, mb), gpu, Network(None, 1), 1, trace=False, framework=fw)


def compile_predictions(bundle: Path) -> dict[tuple[str, int, int, bool], float]:
    """{(preset, seq, micro_batch, compiled): registered step seconds} of readout-registered.json (the rule's read)."""
    from simcluster.strict import load_json

    path = bundle / REGISTERED_READ
    doc = load_json(path, what="registered compile read-out")
    rows = doc.get("rows") if isinstance(doc, dict) else None
    if not isinstance(rows, list):
        raise SimclusterError("expected a mapping with `rows:` (preset, seq, micro_batch, compiled, pred_s)", where=str(path))
    out = {}
    for i, r in enumerate(rows):
        where = f"{path}: rows[{i}]"
        if not isinstance(r, dict) or not all(k in r for k in ("preset", "seq", "micro_batch", "compiled", "pred_s")):
            raise SimclusterError("expected preset, seq, micro_batch, compiled and pred_s", where=where)
        out[(str(r["preset"]), int(r["seq"]), int(r["micro_batch"]), bool(r["compiled"]))] = _positive(r["pred_s"], f"{where}.pred_s")
    return out


def read_compile(bundle: Path) -> tuple[list[dict], list[Skipped]]:
    """The compile set's check/ runs (eager and compiled) against readout-registered.json; host/ runs are calibration (the
    rule's host fit), not rows."""
    registered = compile_predictions(bundle)
    rows, skipped = [], []
    for preset_dir in sorted(p for p in (bundle / "check").iterdir() if p.is_dir()) if (bundle / "check").is_dir() else []:
        for run in read_runs(preset_dir, worlds=(0, 1)):
            shape, why = _timed_shape(run.doc, run.failure)
            name = run.path.name
            if shape is None:
                skipped.append(Skipped(name, why))
                continue
            compiled = bool(run.doc.get("compile"))
            key = (str(run.doc["model"].get("preset")), shape["seq"], shape["micro_batch"], compiled)
            if key not in registered:
                skipped.append(Skipped(name, f"no registered prediction for {key}"))
                continue
            label = f"{key[0]} single{'+compile' if compiled else ''} seq {key[1]} mb {key[2]}"
            rows.append(_row(bundle, label, "torch-compile" if compiled else "torch-amp", ("none", 1), float(shape["median_step_s"]),
                             registered[key], (key[0], None, key[1], key[2])))
    return rows, skipped


def read_sac(bundle: Path) -> tuple[list[dict], list[Skipped]]:
    """The sac set's runs/<run>.json against registered.json (each registered run's own file)."""
    from simcluster.llm import eager_ac
    from simcluster.strict import load_json, read_text

    path = bundle / "registered.json"
    doc = load_json(path, what="registered sac predictions")
    runs = doc.get("runs") if isinstance(doc, dict) else None
    if not isinstance(runs, list):
        raise SimclusterError("expected a mapping with `runs:` (run, preset, seq, micro_batch, ac_mode, predicted_step_ms)", where=str(path))
    rows, skipped = [], []
    for i, reg in enumerate(runs):
        where = f"{path}: runs[{i}]"
        if not isinstance(reg, dict) or not all(k in reg for k in ("run", "preset", "seq", "micro_batch", "ac_mode")):
            raise SimclusterError("expected run, preset, seq, micro_batch, ac_mode and predicted_step_ms", where=where)
        predicted = _positive(reg.get("predicted_step_ms"), f"{where}.predicted_step_ms") / 1e3
        file = bundle / "runs" / f"{reg['run']}.json"
        if not file.is_file():
            skipped.append(Skipped(str(reg["run"]), "no run file (not run)"))
            continue
        run_doc, failure = _document(read_text(file, what="llm-step run document").strip())
        shape, why = _timed_shape(run_doc, failure)
        if shape is None:
            skipped.append(Skipped(str(reg["run"]), why))
            continue
        have = (run_doc["model"].get("preset"), shape["seq"], shape["micro_batch"], eager_ac.document_mode(run_doc))
        want = (reg["preset"], reg["seq"], reg["micro_batch"], reg["ac_mode"])
        if have != want:
            skipped.append(Skipped(str(reg["run"]), f"ran {have}, registered {want}"))
            continue
        par = eager_ac.parallel_of(str(reg["ac_mode"]))
        label = f"{reg['preset']} single ac {reg['ac_mode']} seq {reg['seq']} mb {reg['micro_batch']}"
        rows.append(_row(bundle, label, "torch-amp", (par.recompute, par.recompute_every), float(shape["median_step_s"]),
                         predicted, (str(reg["preset"]), None, int(reg["seq"]), int(reg["micro_batch"]))))
    return rows, skipped


def _compile2_launch(file: Path, reg: dict) -> tuple[dict | None, str]:
    """One launch's timed shape if it ran the registered configuration (preset, layers, shape, compile, checkpointing)."""
    from simcluster.llm import eager_ac
    from simcluster.strict import read_text

    if not file.is_file() or not file.stat().st_size:
        return None, "no run file (not run)"
    doc, failure = _document(read_text(file, what="llm-step run document").strip())
    shape, why = _timed_shape(doc, failure)
    if shape is None:
        return None, why
    model = doc.get("model") if isinstance(doc.get("model"), dict) else {}
    have = (model.get("preset"), model.get("layers") if reg["layers"] else None, shape["seq"], shape["micro_batch"],
            bool(doc.get("compile")), eager_ac.document_mode(doc))
    want = (reg["preset"], reg["layers"], reg["seq"], reg["micro_batch"], reg["kind"] == "compile",
            "op" if reg["kind"] == "op" else "none")
    return (shape, "") if have == want else (None, f"ran {have}, registered {want}")


def launch_shapes(bundle: Path, reg: dict) -> tuple[list[dict], list[Skipped]]:
    """A registered run's accepted launches (_compile2_launch: ran ok and ran the registered configuration): their timed
    shapes, in launch order (runs/<run>-<i>.json; a compile or eager run: runs/<run>.json), and the launches refused with why.
    The band's reader and the read-outs of validation/llm_compile2.py (compile2, lease3) and llm_ophost.py all take
    this one."""
    name = str(reg["run"])
    files = [bundle / "runs" / f"{name}.json"] if reg["kind"] in ("compile", "eager") else \
        sorted((bundle / "runs").glob(f"{name}-[0-9].json"))
    shapes, skipped = [], []
    for file in files or [bundle / "runs" / f"{name}-1.json"]:
        shape, why = _compile2_launch(file, reg)
        if shape is None:
            skipped.append(Skipped(file.stem, why))
        else:
            shapes.append(shape)
    return shapes, skipped


def launch_steps(bundle: Path, reg: dict) -> tuple[list[float], list[Skipped]]:
    """launch_shapes' median timed steps in seconds."""
    shapes, skipped = launch_shapes(bundle, reg)
    return [float(s["median_step_s"]) for s in shapes], skipped


def _registered_runs(bundle: Path, what: str) -> tuple[Path, list]:
    from simcluster.strict import load_json

    path = bundle / "registered.json"
    doc = load_json(path, what=what)
    runs = doc.get("runs") if isinstance(doc, dict) else None
    if not isinstance(runs, list):
        raise SimclusterError("expected a mapping with `runs:` (run, kind, preset, layers, seq, micro_batch, "
                              "predicted_step_ms)", where=str(path))
    return path, runs


def read_compile2(bundle: Path) -> tuple[list[dict], list[Skipped]]:
    """The compile2 set's runs/ against registered.json: a compiled run's median step, an op shape's median over its
    launches (runs/<run>-<i>.json; at least MIN_LAUNCHES ok)."""
    path, runs = _registered_runs(bundle, "registered compile2 predictions")
    return _launch_rows(bundle, path, runs)


def read_ophost2(bundle: Path) -> tuple[list[dict], list[Skipped]]:
    """The ophost2 set (op only, the per-phase host cost; compile2's op rule): each shape's median over its launches
    against registered.json's predicted_step_ms (its runs carry no `kind`: every one is op)."""
    path, runs = _registered_runs(bundle, "registered ophost2 predictions")
    return _launch_rows(bundle, path, [{**r, "kind": "op"} if isinstance(r, dict) else r for r in runs])


def _launch_rows(bundle: Path, path: Path, runs: list) -> tuple[list[dict], list[Skipped]]:
    import statistics

    rows, skipped = [], []
    for i, reg in enumerate(runs):
        where = f"{path}: runs[{i}]"
        if not isinstance(reg, dict) or not all(k in reg for k in ("run", "kind", "preset", "layers", "seq", "micro_batch")) \
                or reg["kind"] not in ("compile", "op", "eager"):
            raise SimclusterError("expected run, kind (compile, op or eager), preset, layers, seq, micro_batch and "
                                  "predicted_step_ms", where=where)
        predicted = _positive(reg.get("predicted_step_ms"), f"{where}.predicted_step_ms") / 1e3
        name = str(reg["run"])
        steps, refused = launch_steps(bundle, reg)
        skipped += refused
        if not steps or (reg["kind"] == "op" and len(steps) < MIN_LAUNCHES):
            if steps:
                skipped.append(Skipped(name, f"{len(steps)} ok launch, the rule needs {MIN_LAUNCHES}"))
            continue
        shape_name = f"{reg['preset']}-L{reg['layers']}" if reg["layers"] else str(reg["preset"])
        mode = {"compile": "single+compile", "op": "single ac op", "eager": "single"}[reg["kind"]]
        label = f"{shape_name} {mode} seq {reg['seq']} mb {reg['micro_batch']}"
        if reg["kind"] == "op":
            label += f" median of {len(steps)} launches"
        rows.append(_row(bundle, label, "torch-compile" if reg["kind"] == "compile" else "torch-amp",
                         ("op", 1) if reg["kind"] == "op" else ("none", 1), statistics.median(steps), predicted,
                         (str(reg["preset"]), reg["layers"] or None, int(reg["seq"]), int(reg["micro_batch"]))))
    return rows, skipped


READERS = {COMPILE: read_compile, SAC: read_sac, COMPILE2: read_compile2, OPHOST2: read_ophost2, LEASE3: read_compile2,
           COMPILE4: read_compile2, EAGER5: read_compile2, EAGER5_LEASE2: read_compile2, AC6A: read_sac, AC6B: read_sac,
           EAGER7: read_sac, EAGER8: read_sac}


# A set that ran another set's registration again (the same registered.json, another launch) is the same source: its
# rows are measured again against the same predictions, so leaving one launch out must leave the other out too (as
# heldout/transport.source_of folds a sweep's replicate bundles; cold read C). Sets registered in one commit with one
# model and one rule (ac6a and ac6b: run on two leases minutes apart, their 1.1b shapes the same tokens) are one source
# too (session 35's cold read B): the unit left out is the registration, not the lease.
SAME_REGISTRATION = {EAGER5_LEASE2: EAGER5, AC6B: AC6A}


def held_out_rows(folders: tuple[str, ...] = REGISTERED) -> list[dict]:
    """Every registered one-GPU set's measured runs against their registered steps, set by set; `source` the folder
    whose registration they were judged against (SAME_REGISTRATION)."""
    return [{**row, "source": Path(SAME_REGISTRATION.get(name, name)).name}
            for name in folders for row in READERS[name](ROOT / name)[0]]
