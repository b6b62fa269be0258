"""Gradients held beside a checkpointed micro-batch on one H200, registered before its run (issue 44, session 58; not a
test).

    python validation/acaccum58.py --register   # writes calibration/h200x1-acaccum58-2026-12-02/registered.json
    python validation/acaccum58.py BUNDLE        # the read-out: BUNDLE/runs/<preset>-m<N>.json, llm-step documents

What it checks: session 58's memory change (llm/memory.py, `after` with a checkpointed live peak): a step of m > 1
micro-batches under full activation checkpointing keeps the first backward's gradients (framework torch: fp32, 4 B a
parameter, freed by zero_grad(set_to_none=True) only after the step) beside the next micro-batches' checkpointed live
bytes. Before the change the peak was static + max(live, gradients) ("OFF"); now static + gradients + live ("ON").
Plan: presets 1b / 3b / 1.1b (llm-step's Llama shapes) at seq 2048, micro-batch 8 / 4 / 8, --ac-mode full, each with
--grad-accum 4 and --grad-accum 1 (the control: one micro-batch, ON = OFF), one process each. Predicted by the
committed model (framework torch, eager_ac.parallel_of('full'), the H200 card's 141e9 bytes; the allocated peak of a
process's first shape, its first iterations included), nothing fitted on these runs.
RULE MEM (registered): error = predicted / measured - 1 of torch.cuda.max_memory_allocated; HOLDS when on the three
--grad-accum 4 runs ON's mean |error| <= 5%, every ON |error| <= 10% and ON's mean |error| below OFF's; the control
runs are printed (every |error| <= 10% expected) and judged only as 'control within 10%' or not.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.heldout.eager import model_of  # noqa: E402
from simcluster.heldout.registration import refuse_existing, write_registration  # noqa: E402
from simcluster.llm import eager, eager_ac  # noqa: E402
from simcluster.llm.memory import memory_per_gpu  # noqa: E402
from simcluster.llm.spec import BatchSpec  # noqa: E402
from simcluster.runner.llm_decoder import PRESETS  # noqa: E402
from simcluster.script_args import check  # noqa: E402

BUNDLE = ROOT / "calibration/h200x1-acaccum58-2026-12-02"
REGISTERED = BUNDLE / "registered.json"
PLAN = (("1b", 2048, 8), ("3b", 2048, 4), ("1.1b", 2048, 8))
ACCUM = (4, 1)
CAPACITY = 141e9
GiB = 2.0**30
RULE = ("error = predicted / measured - 1 of max_memory_allocated; RULE MEM HOLDS when on the three --grad-accum 4 runs "
        "ON's mean |error| <= 5%, every ON |error| <= 10% and ON's mean |error| < OFF's; control (--grad-accum 1): "
        "every |error| <= 10% expected, printed")


def run_name(preset: str, m: int) -> str:
    return f"{preset}-m{m}"


def predict(preset: str, seq: int, micro: int, m: int) -> tuple[float, float]:
    """(ON, OFF) allocated peak bytes of one planned run: the current model, and its peak without the gradients beside
    the later micro-batches' checkpointed live bytes (the formula before session 58)."""
    model = model_of({"model": PRESETS[preset]}, seq)
    par = eager_ac.parallel_of("full")
    fw = eager.torch_framework(par)
    mem = memory_per_gpu(model, par, BatchSpec(micro * m, micro), CAPACITY, fw)
    static = mem.parameters + mem.optimizer + mem.fp8_weight_cache + mem.ddp_buckets + mem.grad_partition
    live = mem.live_peak if mem.live_peak is not None else mem.activations + mem.logits + mem.weight_copies
    off = static + max(live, mem.gradients + mem.step_end) + mem.ddp_rebuild
    return mem.allocated, off


def register(out: Path) -> None:
    runs = []
    for preset, seq, micro in PLAN:
        for m in ACCUM:
            on, off = predict(preset, seq, micro, m)
            runs.append({"run": run_name(preset, m), "preset": preset, "seq": seq, "micro_batch": micro, "grad_accum": m,
                         "predicted_mem_GiB": round(on / GiB, 3), "off_mem_GiB": round(off / GiB, 3)})
            print(f"{runs[-1]['run']:10s} ON {on / GiB:7.2f} GiB  OFF {off / GiB:7.2f} GiB")
    write_registration(out, json.dumps({"card_capacity_bytes": CAPACITY, "rule": RULE, "runs": runs}, indent=1) + "\n")


def measured_bytes(bundle: Path, run: str) -> float | None:
    """max_memory_allocated of the run's one shape when it ran ok (runs/<run>.json), else None."""
    path = bundle / "runs" / f"{run}.json"
    if not path.is_file():
        return None
    try:
        doc = eager.read_document(path)
    except ValueError as exc:
        raise SystemExit(f"acaccum58: {exc}") from None
    shape = doc["shapes"][0] if doc.get("shapes") else {}
    return shape.get("max_memory_allocated_bytes") if shape.get("status") == "ok" else None


def read_out(bundle: Path, registered: Path = REGISTERED) -> int:
    try:
        reg = json.loads(registered.read_text())["runs"]
        keys = ("run", "grad_accum", "predicted_mem_GiB", "off_mem_GiB")
        if not isinstance(reg, list) or not all(isinstance(r, dict) and all(k in r for k in keys) for r in reg):
            raise TypeError
    except (OSError, ValueError, KeyError, TypeError):
        print(f"acaccum58: {registered}: not a registration (needs a 'runs' list with run, grad_accum, predicted_mem_GiB, "
              "off_mem_GiB)", file=sys.stderr)
        return 2
    on_err, off_err, control, missing = [], [], [], []
    print(f"{'run':10s} {'meas GiB':>9s} {'ON GiB':>8s} {'error':>7s} {'OFF GiB':>8s} {'error':>7s}")
    for r in reg:
        meas = measured_bytes(bundle, r["run"])
        if meas is None:
            print(f"{r['run']:10s} no ok run in {bundle / 'runs'}")
            missing.append(r["run"])
            continue
        meas /= GiB
        on, off = r["predicted_mem_GiB"] / meas - 1, r["off_mem_GiB"] / meas - 1
        print(f"{r['run']:10s} {meas:9.2f} {r['predicted_mem_GiB']:8.2f} {100 * on:+6.1f}% {r['off_mem_GiB']:8.2f} {100 * off:+6.1f}%")
        if r["grad_accum"] > 1:
            on_err.append(on)
            off_err.append(off)
        else:
            control.append(on)
    expected = sum(r["grad_accum"] > 1 for r in reg)
    if len(on_err) < expected:
        print(f"RULE MEM: incomplete, {len(on_err)} of {expected} --grad-accum > 1 runs: not judged")
    else:
        on_mean, off_mean = statistics.mean(map(abs, on_err)), statistics.mean(map(abs, off_err))
        holds = on_mean <= 0.05 and max(map(abs, on_err)) <= 0.10 and on_mean < off_mean
        print(f"RULE MEM: {'HOLDS' if holds else 'DOES NOT HOLD'} -- ON mean |error| {100 * on_mean:.1f}% (max "
              f"{100 * max(map(abs, on_err)):.1f}%), OFF {100 * off_mean:.1f}%, {len(on_err)} runs")
    if control:
        print(f"control (--grad-accum 1): {'within 10%' if max(map(abs, control)) <= 0.10 else 'NOT within 10%'} "
              f"(max |error| {100 * max(map(abs, control)):.1f}%, {len(control)} runs)")
    if missing:
        print(f"acaccum58: {len(missing)} of {len(reg)} registered runs have no ok result: {', '.join(missing)}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str]) -> int:
    check(options=("--register",), words=1, usage="BUNDLE | --register [PATH]", argv=argv)
    if argv[:1] == ["--register"]:
        try:
            register(refuse_existing(Path(argv[1]) if len(argv) > 1 else REGISTERED))
        except SimclusterError as exc:
            print(f"acaccum58: {exc}", file=sys.stderr)
            return 2
        return 0
    if not argv or not (Path(argv[0]) / "runs").is_dir():
        print("acaccum58: expected BUNDLE with runs/<preset>-m<N>.json (the device_run.sh tarball, unpacked) or --register",
              file=sys.stderr)
        return 2
    return read_out(Path(argv[0]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
