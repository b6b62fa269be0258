"""The op policy's host cost per phase on one H200 (issue 44, session 33, engineer ophost; not a test).

    python validation/llm_ophost.py --develop       # before / after on every earlier op run (development, seen)
    python validation/llm_ophost.py --register [PATH]   # the predictions now -> a new registered.json (the set's by
                                                        # default; an existing one is refused, never overwritten)
    python validation/llm_ophost.py BUNDLE          # the read-out: BUNDLE/runs/<run>-<i>.json, llm-step documents

Model (llm/eager.op_phase_factors): op's host seconds per kernel split into forward and backward by a hidden-128
probe's phase issue times (calibration/h200x1-llm-ophost-2026-11-29 tiny L24, development), scaled so a
hidden-128 step keeps the op fit's total (fit_modes on calibration/h200x1-llm-diag-2026-11-29/host). 'before': the
op fit's one cost for every kernel.
Held-out set (calibration/h200x1-llm-ophost2-2026-11-29, shapes no op run measured): PLAN, three launches each.
Rule (declared before any data): error = measured / predicted - 1 (+: predicted fast); each launch's median timed
step; a shape's statistic is the median over its launches (>= 2 needed, else incomplete); met = mean |error| <= 10%
over the shapes. Reported beside it, not judged: every launch's error, the launch-to-launch spread (max / min - 1)
and what the uniform cost ('before') would have predicted.
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
from simcluster.heldout.eager_registered import MIN_LAUNCHES, launch_steps  # noqa: E402  (the band's acceptance of a launch)
from simcluster.heldout.registration import refuse_existing, write_registration  # noqa: E402
from simcluster.llm import eager  # noqa: E402
from simcluster.llm.comm import Network  # noqa: E402
from simcluster.llm.predict import predict_llm  # noqa: E402
from simcluster.llm.spec import BatchSpec, ParallelSpec  # noqa: E402
from simcluster.runner.llm_decoder import PRESETS  # noqa: E402
from simcluster.script_args import check  # noqa: E402

CARD = ROOT / "models/gpu/h200-sxm-interleaved.yaml"
OP_HOST = ROOT / "calibration/h200x1-llm-diag-2026-11-29/host"
SET = ROOT / "calibration/h200x1-llm-ophost2-2026-11-29"
PLAN = (("1b", None, 2048, 4), ("1.1b", None, 4096, 2), ("3.1b", None, 1024, 8))   # preset, layers, seq, micro-batch
# (chosen where the per-phase and the uniform host cost differ most, 12-15%: the forward host-bound, the backward not)
LAUNCHES, OP_STEP = 3, 0.10
# development (seen): (label, preset, seq, micro-batch, measured step seconds)
SAC = ROOT / "calibration/h200x1-llm-sac-2026-11-29/runs"
COMPILE2 = ROOT / "calibration/h200x1-llm-compile2-2026-11-29/runs"
PROBE = ROOT / "calibration/h200x1-llm-ophost-2026-11-29/runs"


def predict(preset: str, layers: int | None, seq: int, mb: int, hosts: dict, gpu, split: bool = True) -> float:
    cfg = PRESETS[preset] | ({"layers": layers} if layers else {})
    par = ParallelSpec(recompute="op")
    fw = eager.torch_framework(par, hosts)
    if not split:
        fw = replace(fw, host_kernel_s=hosts["op"][0], host_bwd_kernel_s=0.0)
    r = predict_llm(model_of({"model": cfg}, seq), par, BatchSpec(mb, mb), gpu, Network(None, 1), 1, trace=False, framework=fw)
    return r.step_time_s


def development() -> list[tuple[str, str, int, int, float]]:
    rows = []
    for preset in ("0.3b", "1b", "3b"):
        doc = eager.read_document(SAC / f"{preset}-op.json")
        s = doc["shapes"][0]
        rows.append((f"sac {preset}-op", preset, s["seq"], s["micro_batch"], s["median_step_s"]))
    for name, preset in (("op-0.5b-2048x8", "0.5b"), ("op-2b-2048x4", "2b")):
        steps = [eager.read_document(COMPILE2 / f"{name}-{i}.json")["shapes"][0] for i in (1, 2, 3)]
        rows.append((f"compile2 {name}", preset, steps[0]["seq"], steps[0]["micro_batch"],
                     statistics.median(s["median_step_s"] for s in steps)))
    for name, preset in (("0.5b-2048x2", "0.5b"), ("0.5b-2048x8", "0.5b"), ("2b-2048x4", "2b")):
        doc = json.loads((PROBE / f"{name}.json").read_text())
        op = next(m for m in doc["modes"] if m["mode"] == "op")
        rows.append((f"ophost {name}", preset, op["seq"], op["micro_batch"], op["median"]["wall_s"]))
    return rows


def develop() -> None:
    hosts, gpu = eager.fit_modes(OP_HOST), load_gpu(CARD)[0]
    f, b = eager.op_phase_factors()
    print(f"op host per kernel: uniform {hosts['op'][0] * 1e6:.1f} us; forward {hosts['op'][0] * f * 1e6:.1f} us, "
          f"backward {hosts['op'][0] * b * 1e6:.1f} us (+ {hosts['op'][1] * 1e3:.2f} ms per step)")
    before, after = [], []
    for label, preset, seq, mb, meas in development():
        p0, p1 = predict(preset, None, seq, mb, hosts, gpu, split=False), predict(preset, None, seq, mb, hosts, gpu)
        before.append(meas / p0 - 1)
        after.append(meas / p1 - 1)
        print(f"{label:26s} measured {meas * 1e3:7.1f} ms  before {p0 * 1e3:7.1f} ({100 * before[-1]:+6.1f}%)  "
              f"after {p1 * 1e3:7.1f} ({100 * after[-1]:+6.1f}%)")
    print(f"mean |error|: before {100 * statistics.mean(map(abs, before)):.1f}%, after {100 * statistics.mean(map(abs, after)):.1f}%; "
          f"mean error before {100 * statistics.mean(before):+.1f}%, after {100 * statistics.mean(after):+.1f}%")


def run_name(preset: str, layers: int | None, seq: int, mb: int) -> str:
    return f"op-{preset}{f'-L{layers}' if layers else ''}-{seq}x{mb}"


def register(out: Path) -> None:
    """The predictions into `out`, a new file (heldout/registration.write_registration; main refuses an existing one
    before anything is predicted)."""
    hosts, gpu = eager.fit_modes(OP_HOST), load_gpu(CARD)[0]
    f, b = eager.op_phase_factors()
    runs = []
    for spec in PLAN:
        step, uniform = predict(*spec, hosts, gpu), predict(*spec, hosts, gpu, split=False)
        runs.append({"run": run_name(*spec), "preset": spec[0], "layers": spec[1], "seq": spec[2], "micro_batch": spec[3],
                     "predicted_step_ms": round(step * 1e3, 2), "uniform_step_ms": round(uniform * 1e3, 2)})
        print(f"{runs[-1]['run']:22s} predicted {step * 1e3:7.1f} ms (uniform host cost: {uniform * 1e3:7.1f})")
    write_registration(out, json.dumps({"card": str(CARD.relative_to(ROOT)), "host": str(OP_HOST.relative_to(ROOT)),
                               "op_host_us": {"uniform": round(hosts["op"][0] * 1e6, 2), "forward": round(hosts["op"][0] * f * 1e6, 2),
                                              "backward": round(hosts["op"][0] * b * 1e6, 2), "per_step_ms": round(hosts["op"][1] * 1e3, 3)},
                               "phases": str(eager.OP_PHASES.relative_to(ROOT)), "launches": LAUNCHES,
                               "rule": "error = measured / predicted - 1; each launch's median timed step, a shape's statistic the "
                                       "median over its launches (>= 2 needed); met: mean |error| <= 10% over the shapes",
                               "runs": runs}, indent=1) + "\n")


def read_out(bundle: Path, registered: Path) -> int:
    from simcluster.strict import load_json

    doc = load_json(registered, what="registered ophost2 predictions")
    reg = doc.get("runs") if isinstance(doc, dict) else None
    keys = ("run", "preset", "layers", "seq", "micro_batch", "predicted_step_ms", "uniform_step_ms")
    if not isinstance(reg, list) or not all(isinstance(r, dict) and all(k in r for k in keys) for r in reg):
        raise SimclusterError(f"expected runs: a list of {{{', '.join(keys)}}}", where=f"{registered}: runs")
    errs, before, incomplete = [], [], []
    for r in reg:
        steps, refused = launch_steps(bundle, {**r, "kind": "op"})   # ok launches of the registered configuration
        for skip in refused:
            print(f"llm_ophost: {skip.run}: {skip.why} (not counted)", file=sys.stderr)
        launches = [step * 1e3 for step in steps]
        pred = r["predicted_step_ms"]
        print(f"{r['run']:22s} launches {' / '.join(f'{x:.1f}' for x in launches) or '-'} ms, predicted {pred:.1f} "
              f"(each {' / '.join(f'{100 * (x / pred - 1):+.1f}%' for x in launches)})")
        if len(launches) < MIN_LAUNCHES:
            incomplete.append(r["run"])
            continue
        mid = statistics.median(launches)
        errs.append(mid / pred - 1)
        before.append(mid / r["uniform_step_ms"] - 1)
        print(f"{'':22s} median {mid:.1f} ms {100 * errs[-1]:+.1f}%, spread {100 * (max(launches) / min(launches) - 1):.1f}%; "
              f"uniform host cost would be {r['uniform_step_ms']:.1f} ms ({100 * before[-1]:+.1f}%)")
    if incomplete:
        print(f"op: incomplete (fewer than 2 launches: {', '.join(incomplete)})")
        return 1
    step = statistics.mean(map(abs, errs))
    print(f"op: step mean |error| {100 * step:.1f}% ({len(errs)} shapes, median of launches): "
          f"{'met' if step <= OP_STEP else 'NOT met'} (uniform host cost: {100 * statistics.mean(map(abs, before)):.1f}%, not judged)")
    return 0


def main(argv: list[str]) -> int:
    check(options=("--develop", "--register"), words=1, usage="BUNDLE | --register [PATH] | --develop", argv=argv)
    try:
        if argv == ["--develop"]:
            develop()
            return 0
        if argv[:1] == ["--register"] and len(argv) <= 2:
            register(refuse_existing(Path(argv[1]) if len(argv) > 1 else SET / "registered.json"))
            return 0
        if len(argv) == 1 and not argv[0].startswith("-"):
            bundle = Path(argv[0])
            if not (bundle / "runs").is_dir():
                raise SimclusterError("expected BUNDLE/runs/<run>-<i>.json (device_run.sh's bundle, unpacked)",
                                      where=str(bundle / "runs"))
            return read_out(bundle, SET / "registered.json")
    except SimclusterError as exc:
        print(f"llm_ophost: {exc}", file=sys.stderr)
        return 2
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
