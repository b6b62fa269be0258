"""The step's own SM clock, measured vs the duty-cycle clock model (llm/clock.py), held out (not a test).

`llm-step --clocks` records the median SM clock and board power nvidia-smi reported (every 20 ms) during each shape's
timed steps. The clock model was fitted on gpu-micro's duty sweep only (calibration/h{1,2}00x1-gpu-duty-2026-11-23),
never on a training step, so every row is held out. For each shape: measured clock and power, the model's clock,
duty split and power (`clock_model="duty"`, the interleaved card the 1-GPU validation uses), and the step time
with the card's fixed reference clock and with the duty clock.
    python studies/llm_step_clock.py [BUNDLE ...]
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "validation"))   # llm_single_gpu.py stays beside the validation scripts it serves

from llm_single_gpu import H100, H200, host_framework, model_of, pct, runs  # noqa: E402

from simcluster.hardware.gpu import load_gpu  # noqa: E402
from simcluster.llm.comm import Network  # noqa: E402
from simcluster.llm.predict import predict_llm  # noqa: E402
from simcluster.llm.spec import BatchSpec, ParallelSpec  # noqa: E402

BUNDLES = {"calibration/h100x1-llm-clocks-2026-11-23": (H100, "h100"),
           "calibration/h100x1-llm-clocks-2026-11-23/layers": (H100, "h100"),
           "calibration/h200x1-llm-clocks-2026-11-23": (H200, "h200"),
           "calibration/h200x1-llm-clocks-2026-11-23/layers": (H200, "h200")}


def main(argv: list[str]) -> int:
    unknown = [b for b in argv if b.rstrip("/") not in BUNDLES]
    if unknown:
        print(f"llm_step_clock.py: unknown bundle {unknown[0]!r}: one of {', '.join(BUNDLES)}", file=sys.stderr)
        return 2
    chosen = {b.rstrip("/"): BUNDLES[b.rstrip("/")] for b in argv} if argv else BUNDLES
    errors: dict[str, tuple[list, list, list]] = {}
    print(f"{'model':>10} {'seq':>5} {'mb':>3} {'meas MHz':>9} {'pred MHz':>9} {'err %':>6} {'meas W':>7} {'pred W':>7} "
          f"{'duty c/m/idle':>15} {'meas ms':>8} {'fixed ms':>9} {'err %':>6} {'duty ms':>8} {'err %':>6}")
    for name, (card, label) in chosen.items():
        gpu, _ = load_gpu(ROOT / card)
        clock_err, fixed_err, duty_err = errors.setdefault(label, ([], [], []))
        fw, _ = host_framework(label)
        for doc in runs(ROOT / name):
            for shape in doc["shapes"]:
                clock = shape.get("clock") or {}
                if shape["status"] != "ok":
                    continue
                model = model_of(doc, shape["seq"])
                tag = doc["model"].get("preset") or f"{model.layers}L/h{model.hidden}"
                if not clock.get("clock_samples"):
                    print(f"{tag:>10} {shape['seq']:>5} {shape['micro_batch']:>3} no clock samples ({name})")
                    continue
                batch = BatchSpec(shape["micro_batch"], shape["micro_batch"], "bf16")
                fixed = predict_llm(model, ParallelSpec(), batch, gpu, Network(None, 1), 1, trace=False, framework=fw)
                duty = predict_llm(model, ParallelSpec(), batch, gpu, Network(None, 1), 1, trace=False, framework=fw,
                                   clock_model="duty")
                c = duty.clock
                meas = shape["median_step_s"]
                errs = pct(c["sm_clock_MHz"], clock["sm_MHz"]), pct(fixed.step_time_s, meas), pct(duty.step_time_s, meas)
                for acc, e in zip((clock_err, fixed_err, duty_err), errs, strict=True):
                    acc.append(abs(e))
                split = f"{c['compute_duty']:.2f}/{c['memory_duty']:.2f}/{c['idle_duty']:.2f}"
                print(f"{tag:>10} {shape['seq']:>5} {shape['micro_batch']:>3} {clock['sm_MHz']:>9.0f} {c['sm_clock_MHz']:>9.0f} "
                      f"{errs[0]:>+6.1f} {clock['power_W']:>7.0f} {c['power_W']:>7.0f} {split:>15} {meas * 1e3:>8.1f} "
                      f"{fixed.step_time_s * 1e3:>9.1f} {errs[1]:>+6.1f} {duty.step_time_s * 1e3:>8.1f} {errs[2]:>+6.1f}")
    for label, (clock_err, fixed_err, duty_err) in errors.items():
        if clock_err:
            print(f"{label} SM clock: mean |error| {statistics.mean(clock_err):.1f}%, max {max(clock_err):.1f}% over {len(clock_err)} shapes "
                  f"(held out); step time: fixed clock {statistics.mean(fixed_err):.1f}% mean, max {max(fixed_err):.1f}%; "
                  f"duty clock {statistics.mean(duty_err):.1f}% mean, max {max(duty_err):.1f}%")
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check(words=None, usage="[BUNDLE ...], each one of " + ", ".join(BUNDLES))
    sys.exit(main(sys.argv[1:]))
