"""Selective activation checkpointing in eager PyTorch on one H200, registered before its run (issue 44; not a test).

    python validation/llm_sac.py --register calibration/h200x1-llm-sac-2026-11-29/registered.json   # the predictions
    python validation/llm_sac.py BUNDLE        # the read-out: BUNDLE/runs/<preset>-<mode>.json, llm-step documents

Plan: presets 0.3b / 1b / 3b (llm-step's Llama shapes) at seq 2048 and micro-batch 16 / 8 / 4, each in --ac-mode none,
full, every:2 and op (one process each). Predicted by the committed model (framework torch, llm/eager_ac.py) on the
H200 interleaved card with the host fits of calibration/h200x1-llm-ckpt-host-2026-11-28/host (single for plain blocks,
ckpt for checkpointed ones), nothing fitted on these runs. Rule: error = predicted / measured - 1 per run (step: the
median timed step; memory: torch.cuda.max_memory_allocated against the predicted allocated peak); met = mean |step
error| <= 8% per mode and every run's memory within 10%. The read-out judges the registered numbers and prints the
current model's beside them.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.hardware.gpu import load_gpu  # noqa: E402
from simcluster.heldout.eager import model_of  # noqa: E402
from simcluster.heldout.registration import refuse_existing, write_registration  # noqa: E402
from simcluster.llm import eager, eager_ac  # noqa: E402
from simcluster.llm.comm import Network  # noqa: E402
from simcluster.llm.memory import memory_per_gpu  # noqa: E402
from simcluster.llm.predict import predict_llm  # noqa: E402
from simcluster.llm.spec import BatchSpec, ParallelSpec  # noqa: E402
from simcluster.runner.llm_decoder import PRESETS  # noqa: E402
from simcluster.script_args import check  # noqa: E402

CARD = ROOT / "models/gpu/h200-sxm-interleaved.yaml"
HOST = ROOT / "calibration/h200x1-llm-ckpt-host-2026-11-28/host"
REGISTERED = ROOT / "calibration/h200x1-llm-sac-2026-11-29/registered.json"
PLAN = (("0.3b", 2048, 16), ("1b", 2048, 8), ("3b", 2048, 4))
MODES = ("none", "full", "every:2", "op")
GiB = 2.0**30


def parallel(mode: str) -> ParallelSpec:
    return eager_ac.parallel_of(mode)


def run_name(preset: str, mode: str) -> str:
    return f"{preset}-{mode.replace(':', '')}"


def predict(preset: str, seq: int, micro: int, mode: str) -> tuple[float, float]:
    """(step seconds, allocated peak bytes) of one planned run by the current model."""
    model = model_of({"model": PRESETS[preset]}, seq)
    par, batch = parallel(mode), BatchSpec(micro, micro)
    fw = eager.torch_framework(par, eager.fit_modes(HOST))
    step = predict_llm(model, par, batch, load_gpu(CARD)[0], Network(None, 1), 1, trace=False, framework=fw).step_time_s
    return step, memory_per_gpu(model, par, batch, 141e9, fw).allocated


def register(out: Path, plan: tuple = PLAN, modes: tuple = MODES) -> None:
    runs = []
    for preset, seq, micro in plan:
        for mode in modes:
            step, mem = predict(preset, seq, micro, mode)
            runs.append({"run": run_name(preset, mode), "preset": preset, "seq": seq, "micro_batch": micro, "ac_mode": mode,
                         "predicted_step_ms": round(step * 1e3, 2), "predicted_mem_GiB": round(mem / GiB, 3)})
            print(f"{runs[-1]['run']:14s} {step * 1e3:8.1f} ms {mem / GiB:7.2f} GiB")
    write_registration(out, json.dumps({"card": str(CARD.relative_to(ROOT)), "host": str(HOST.relative_to(ROOT)),
                                        "rule": "error = predicted / measured - 1; met: mean |step error| <= 8% per mode, "
                                                "every run's memory within 10%", "runs": runs}, indent=1) + "\n")


def measured(bundle: Path, run: str, name: str = "llm_sac") -> dict | None:
    """The run's shape when it ran ok (runs/<run>.json, an llm-step document), else None."""
    path = bundle / "runs" / f"{run}.json"
    if not path.is_file():
        return None
    try:
        doc = eager.read_document(path)
    except ValueError as exc:
        raise SystemExit(f"{name}: {exc}") from None
    shape = doc["shapes"][0] if doc["shapes"] else {}
    return shape if shape.get("status") == "ok" else None


REGISTERED_KEYS = ("run", "preset", "seq", "micro_batch", "ac_mode", "predicted_step_ms", "predicted_mem_GiB")


def registered_runs(registered: Path, name: str) -> list[dict] | None:
    """The registration's runs, or None after a one-line error naming the file (not JSON, no `runs` list, a run without
    one of REGISTERED_KEYS)."""
    try:
        runs = json.loads(registered.read_text())["runs"]
        if not isinstance(runs, list) or not all(isinstance(r, dict) and all(k in r for k in REGISTERED_KEYS) for r in runs):
            raise TypeError
    except (ValueError, KeyError, TypeError):
        print(f"{name}: {registered}: not a registration (needs a 'runs' list of {{{', '.join(REGISTERED_KEYS)}}})",
              file=sys.stderr)
        return None
    return runs


def read_out(bundle: Path, registered: Path = REGISTERED, modes: tuple = MODES, name: str = "llm_sac") -> int:
    """Every registered run against the bundle's; a mode is judged only when all its registered runs are there
    ('incomplete' otherwise). Exit 0 when every registered run has an ok result, 1 when any is missing (named on
    stderr), 2 on a missing or malformed registration."""
    if not registered.is_file():
        print(f"{name}: {registered}: no registered predictions", file=sys.stderr)
        return 2
    reg = registered_runs(registered, name)
    if reg is None:
        return 2
    errors: dict[str, list[float]] = {m: [] for m in modes}
    mems: dict[str, list[float]] = {m: [] for m in modes}
    missing: list[str] = []
    print(f"{'run':14s} {'meas ms':>8s} {'pred ms':>8s} {'error':>7s} {'now ms':>8s} {'meas GiB':>9s} {'pred GiB':>9s} {'error':>7s}")
    for r in reg:
        shape = measured(bundle, r["run"], name)
        if shape is None:
            print(f"{r['run']:14s} no ok run in {bundle / 'runs'}")
            missing.append(r["run"])
            continue
        meas, pred = shape["median_step_s"] * 1e3, r["predicted_step_ms"]
        now = predict(r["preset"], r["seq"], r["micro_batch"], r["ac_mode"])[0] * 1e3
        err = pred / meas - 1
        mem_meas = shape["max_memory_allocated_bytes"] / GiB
        mem_err = r["predicted_mem_GiB"] / mem_meas - 1
        errors.setdefault(r["ac_mode"], []).append(err)
        mems.setdefault(r["ac_mode"], []).append(mem_err)
        print(f"{r['run']:14s} {meas:8.1f} {pred:8.1f} {100 * err:+6.1f}% {now:8.1f} {mem_meas:9.2f} {r['predicted_mem_GiB']:9.2f} "
              f"{100 * mem_err:+6.1f}%")
    for mode in modes:
        expected = sum(r["ac_mode"] == mode for r in reg)
        if len(errors[mode]) < expected:
            print(f"{mode:8s} incomplete: {len(errors[mode])} of {expected} registered runs, not judged")
        elif errors[mode]:
            step = statistics.mean(map(abs, errors[mode]))
            mem = max(map(abs, mems[mode]))
            met = "met" if step <= 0.08 and mem <= 0.10 else "NOT met"
            print(f"{mode:8s} step mean |error| {100 * step:5.1f}% (max {100 * max(map(abs, errors[mode])):5.1f}%), memory max "
                  f"|error| {100 * mem:5.1f}%  ({len(errors[mode])} runs): {met}")
    if missing:
        print(f"{name}: {len(missing)} of {len(reg)} registered runs have no ok result in {bundle / 'runs'}: "
              f"{', '.join(missing)}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str]) -> int:
    check(options=("--register",), words=1, usage="BUNDLE | --register [PATH]", argv=argv)
    if argv[:1] == ["--register"]:
        try:
            register(refuse_existing(Path(argv[1]) if len(argv) > 1 else REGISTERED))
        except SimclusterError as exc:
            print(f"llm_sac: {exc}", file=sys.stderr)
            return 2
        return 0
    if not argv or not (Path(argv[0]) / "runs").is_dir():
        print("llm_sac: expected BUNDLE with runs/<preset>-<mode>.json (the device_run.sh tarball, unpacked) or --register FILE",
              file=sys.stderr)
        return 2
    return read_out(Path(argv[0]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
