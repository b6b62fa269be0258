"""torch.compile memory and the op policy's host cost on one H200, held out (issue 44, session 33; not a test): the rule
of calibration/h200x1-llm-compile2-2026-11-29 (its README), registered before its run.

    python validation/llm_compile2.py --register      # the predictions now -> the set's registered.json
    python validation/llm_compile2.py BUNDLE          # the read-out: BUNDLE/runs/<run>.json, llm-step documents

Plan (shapes no earlier run measured in these modes): compiled (llm-step --compile, single mode) 0.5b 2048:4, 0.8b
1024:8, 2b 2048:2, 1b cut to 8 layers at 4096:2 and 3b 2048:2 (last, if time is left), one process each; op (--ac-mode op) 0.5b 2048:8 and 2b 2048:4,
three launches (processes) each. Predicted by the committed model on the H200 interleaved card with host costs fitted
on earlier hidden-128 runs only: compile from calibration/h200x1-llm-compile-2026-11-29/host, op (and single, ckpt)
from calibration/h200x1-llm-diag-2026-11-29/host; nothing fitted on these runs.
Rule, error = measured / predicted - 1 (+: predicted fast / low), the compile set's sign:
  compiled: step = the median timed step, memory = the timed steps' max_memory_allocated; met = mean |step error| <= 8%
    over the compiled shapes AND every compiled shape's memory within 10%; fewer than 3 shapes ran: incomplete.
  op: each launch's median timed step; the shape's statistic is the median over its launches (>= 2 needed, else the
    shape is incomplete); met = mean |error| <= 10% over both op shapes. Reported with it: every launch's error and the
    launch-to-launch spread (max / min - 1), and the op memory (largest max_memory_allocated of the launches) within 10%.
"""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.hardware.gpu import load_gpu  # noqa: E402
from simcluster.heldout.eager import model_of  # noqa: E402
from simcluster.heldout.eager_registered import MIN_LAUNCHES, launch_shapes  # noqa: E402  (the band's acceptance)
from simcluster.heldout.registration import refuse_existing, write_registration  # noqa: E402
from simcluster.llm import eager  # noqa: E402
from simcluster.llm.comm import Network  # noqa: E402
from simcluster.llm.predict import predict_llm  # noqa: E402
from simcluster.llm.spec import BatchSpec, ParallelSpec  # noqa: E402
from simcluster.runner.llm_decoder import PRESETS  # noqa: E402
from simcluster.script_args import check  # noqa: E402

SET = ROOT / "calibration/h200x1-llm-compile2-2026-11-29"
CARD = ROOT / "models/gpu/h200-sxm-interleaved.yaml"
COMPILE_HOST = ROOT / "calibration/h200x1-llm-compile-2026-11-29/host"
OP_HOST = ROOT / "calibration/h200x1-llm-diag-2026-11-29/host"
COMPILED = (("0.5b", None, 2048, 4), ("0.8b", None, 1024, 8), ("2b", None, 2048, 2), ("1b", 8, 4096, 2), ("3b", None, 2048, 2))
# preset, layers (None: the preset's), seq, micro-batch
OP = (("0.5b", None, 2048, 8), ("2b", None, 2048, 4))
LAUNCHES = 3
COMPILED_STEP, MEMORY, OP_STEP, MIN_COMPILED = 0.08, 0.10, 0.10, 3
GiB = 2.0**30


def run_name(kind: str, preset: str, layers: int | None, seq: int, mb: int) -> str:
    return f"{kind}-{preset}{f'-L{layers}' if layers else ''}-{seq}x{mb}"


def host_fits() -> dict:
    """compile's fit from the compile set's host runs, the others (op, ckpt, single) from the diagnostic's."""
    return eager.fit_modes(OP_HOST) | {"compile": eager.fit_modes(COMPILE_HOST)["compile"]}


def predict(kind: str, preset: str, layers: int | None, seq: int, mb: int, hosts: dict, gpu,
            framework_fields: dict | None = None) -> tuple[float, float]:
    """(step seconds, allocated peak bytes) of one planned run by the current model; framework_fields: FrameworkSpec
    fields replaced (an earlier model's, for a before / after read: validation/llm_compile4.py --develop)."""
    cfg = PRESETS[preset] | ({"layers": layers} if layers else {})
    par = ParallelSpec(recompute="op") if kind == "op" else ParallelSpec()
    fw = replace(eager.torch_framework(par, hosts, compiled=kind == "compile"), **(framework_fields or {}))
    r = predict_llm(model_of({"model": cfg}, seq), par, BatchSpec(mb, mb), gpu, Network(None, 1), 1, trace=False, framework=fw)
    return r.step_time_s, r.memory_per_gpu_GiB["allocated"] * GiB


def planned(compiled: tuple = COMPILED, op: tuple = OP, eager: tuple = ()) -> list[dict]:
    return [{"run": run_name(kind, *spec), "kind": kind, "preset": spec[0], "layers": spec[1], "seq": spec[2],
             "micro_batch": spec[3]} for kind, plan in (("compile", compiled), ("op", op), ("eager", eager)) for spec in plan]


def register(out: Path, compiled: tuple = COMPILED, op: tuple = OP, extra: dict | None = None, eager: tuple = ()) -> None:
    """The predictions of the plan (compiled, op, eager: (preset, layers, seq, micro-batch) each) into `out`, a new file;
    `extra`: more keys for the document (a later set's provenance)."""
    hosts, gpu = host_fits(), load_gpu(CARD)[0]
    runs = []
    for r in planned(compiled, op, eager):
        step, mem = predict(r["kind"], r["preset"], r["layers"], r["seq"], r["micro_batch"], hosts, gpu)
        runs.append(r | {"predicted_step_ms": round(step * 1e3, 2), "predicted_mem_GiB": round(mem / GiB, 3)})
        print(f"{r['run']:24s} {step * 1e3:8.1f} ms {mem / GiB:7.2f} GiB")
    write_registration(out, json.dumps({"card": str(CARD.relative_to(ROOT)),
                               "hosts": {m: [round(c * 1e6, 2), round(a * 1e3, 3)] for m, (c, a, _) in hosts.items()},
                               "hosts_units": "us per kernel, ms per step", "launches": LAUNCHES,
                               "rule": "error = measured / predicted - 1; compiled met: mean |step error| <= 8% and every "
                                       "memory within 10%; op met: mean |error| of the launches' median <= 10%",
                               **(extra or {}), "runs": runs}, indent=1) + "\n")


def shapes_of(bundle: Path, reg: dict) -> list[dict]:
    """The accepted launches' timed shapes of a registered run (heldout/eager_registered.launch_shapes: ran ok and ran
    the registered configuration, the band's rule); refused ones are named on stderr."""
    shapes, refused = launch_shapes(bundle, reg)
    for skip in refused:
        print(f"llm_compile2: {skip.run}: {skip.why} (not counted)", file=sys.stderr)
    return shapes


def judge_compiled(reg: list[dict], bundle: Path, now, kind: str = "compile") -> str:
    """The compiled rule over the runs of `kind` (compile; eager: the eager5 set's, the same rule)."""
    steps, mems = [], []
    label = "compiled" if kind == "compile" else kind
    for r in (x for x in reg if x["kind"] == kind):
        got = shapes_of(bundle, r)
        if not got:
            print(f"{r['run']:24s} no ok run")
            continue
        meas_ms = got[0]["median_step_s"] * 1e3
        meas_gib = got[0].get("max_memory_allocated_timed_bytes", got[0]["max_memory_allocated_bytes"]) / GiB
        steps.append(meas_ms / r["predicted_step_ms"] - 1)
        mems.append(meas_gib / r["predicted_mem_GiB"] - 1)
        print(f"{r['run']:24s} step {meas_ms:7.1f} / {r['predicted_step_ms']:7.1f} ms {100 * steps[-1]:+6.1f}%  memory "
              f"{meas_gib:6.2f} / {r['predicted_mem_GiB']:6.2f} GiB {100 * mems[-1]:+6.1f}%  (model now {now(r):7.1f} ms)")
    if len(steps) < MIN_COMPILED:
        return f"{label}: incomplete ({len(steps)} shapes ran; {MIN_COMPILED} needed)"
    step, mem = statistics.mean(map(abs, steps)), max(map(abs, mems))
    met = step <= COMPILED_STEP and mem <= MEMORY
    return (f"{label}: step mean |error| {100 * step:.1f}% (max {100 * max(map(abs, steps)):.1f}%), memory max |error| "
            f"{100 * mem:.1f}% ({len(steps)} shapes): {'met' if met else 'NOT met'}")


def judge_op(reg: list[dict], bundle: Path, now) -> str:
    errs, mems, incomplete = [], [], []
    for r in (x for x in reg if x["kind"] == "op"):
        got = shapes_of(bundle, r)
        launches, pred = [s["median_step_s"] * 1e3 for s in got], r["predicted_step_ms"]
        each = " / ".join(f"{100 * (x / pred - 1):+.1f}%" for x in launches)
        print(f"{r['run']:24s} launches {' / '.join(f'{x:.1f}' for x in launches) or '-'} ms, predicted {pred:.1f} "
              f"(each {each})  (model now {now(r):.1f} ms)")
        if len(launches) < MIN_LAUNCHES:
            incomplete.append(r["run"])
            continue
        mid = statistics.median(launches)
        errs.append(mid / r["predicted_step_ms"] - 1)
        mem = max(s["max_memory_allocated_bytes"] for s in got) / GiB
        mems.append(mem / r["predicted_mem_GiB"] - 1)
        print(f"{'':24s} median {mid:.1f} ms {100 * errs[-1]:+.1f}%, spread {100 * (max(launches) / min(launches) - 1):.1f}%, "
              f"memory {mem:.2f} / {r['predicted_mem_GiB']:.2f} GiB {100 * mems[-1]:+.1f}%")
    if incomplete:
        return f"op: incomplete (fewer than 2 launches: {', '.join(incomplete)})"
    if not errs:
        return "op: none registered"
    step, mem = statistics.mean(map(abs, errs)), max(map(abs, mems))
    return (f"op: step mean |error| {100 * step:.1f}% ({len(errs)} shapes, median of launches): "
            f"{'met' if step <= OP_STEP else 'NOT met'}; memory max |error| {100 * mem:.1f}%: "
            f"{'met' if mem <= MEMORY else 'NOT met'}")


def read_out(bundle: Path, registered: Path) -> int:
    if not registered.is_file():
        print(f"llm_compile2: {registered}: no registered predictions", file=sys.stderr)
        return 2
    from simcluster.strict import load_json

    doc = load_json(registered, what="registered compile2-format predictions")
    reg = doc.get("runs") if isinstance(doc, dict) else None
    keys = ("run", "kind", "preset", "layers", "seq", "micro_batch", "predicted_step_ms", "predicted_mem_GiB")
    if not isinstance(reg, list) or not all(isinstance(r, dict) and all(k in r for k in keys) for r in reg):
        raise SimclusterError(f"expected runs: a list of {{{', '.join(keys)}}}", where=f"{registered}: runs")
    hosts, gpu = host_fits(), load_gpu(CARD)[0]

    def now(r: dict) -> float:
        return predict(r["kind"], r["preset"], r["layers"], r["seq"], r["micro_batch"], hosts, gpu)[0] * 1e3
    print("error = measured / predicted (registered) - 1")
    kinds = [k for k in ("compile", "eager") if any(r["kind"] == k for r in reg)] or ["compile"]
    verdicts = [judge_compiled(reg, bundle, now, k) for k in kinds] + [judge_op(reg, bundle, now)]
    print("\n".join(verdicts))
    return 0


def read_bundle(bundle: Path, set_dir: Path) -> int:
    """read_out of a device bundle against its own registered.json (the tgz carries a copy), else the set's."""
    return read_out(bundle, bundle / "registered.json" if (bundle / "registered.json").is_file() else set_dir / "registered.json")


def print_before_after(errs: dict[str, list[tuple[float, float]]], noun: str, width: int) -> None:
    """A --develop read-out's summary: per set and over all, mean |error|, max |error| and mean error before -> after
    (errs: set -> [(error before, error after)]; llm_compile4's and llm_eager5's)."""
    every = [e for v in errs.values() for e in v]
    for name, v in [*errs.items(), ("all", every)]:
        print(f"{name:{width}s} {len(v):2d} {noun}: mean |error| {100 * statistics.mean(abs(b) for b, _ in v):4.1f}% -> "
              f"{100 * statistics.mean(abs(a) for _, a in v):4.1f}%, max {100 * max(abs(b) for b, _ in v):4.1f}% -> "
              f"{100 * max(abs(a) for _, a in v):4.1f}%, mean {100 * statistics.mean(b for b, _ in v):+5.1f}% -> "
              f"{100 * statistics.mean(a for _, a in v):+5.1f}%")


def run_main(name: str, argv: list[str], set_dir: Path, register_to, develop=None) -> int:
    """A later registered set's script (compile4, eager5): --develop (develop()), --register [PATH] (register_to(path),
    a new file: an existing one is refused, never overwritten) or BUNDLE (read_bundle: the read-out)."""
    check(options=("--register",) + (("--develop",) if develop else ()), words=1,
          usage=f"BUNDLE | --register [PATH]{' | --develop' if develop else ''}", argv=argv)
    try:
        if develop and argv == ["--develop"]:
            return develop()
        if argv[:1] == ["--register"] and len(argv) <= 2:
            register_to(refuse_existing(Path(argv[1]) if len(argv) > 1 else set_dir / "registered.json"))
            return 0
        if len(argv) != 1 or not (Path(argv[0]) / "runs").is_dir():
            print(f"{name}: expected BUNDLE with runs/<run>.json (device_run.sh's tgz, unpacked), --register [PATH]"
                  f"{' or --develop' if develop else ''}", file=sys.stderr)
            return 2
        return read_bundle(Path(argv[0]), set_dir)
    except SimclusterError as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        return 2


def main(argv: list[str]) -> int:
    check(options=("--register",), words=1, usage="BUNDLE | --register [PATH]", argv=argv)
    if argv[:1] == ["--register"]:
        try:
            register(refuse_existing(Path(argv[1]) if len(argv) > 1 else SET / "registered.json"))
        except SimclusterError as exc:
            print(f"llm_compile2: {exc}", file=sys.stderr)
            return 2
        return 0
    if not argv or not (Path(argv[0]) / "runs").is_dir():
        print("llm_compile2: expected BUNDLE with runs/<run>.json (device_run.sh's compile2.tgz, unpacked) or --register",
              file=sys.stderr)
        return 2
    bundle = Path(argv[0])
    try:
        return read_bundle(bundle, SET)
    except SimclusterError as exc:
        print(f"llm_compile2: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
