"""Issue 44, session 39 (fsdpmem): the runner's FSDP2 peak memory at long sequences after the bf16-block fix
(FrameworkSpec.bf16_param_block: bf16 residual stream, no attention-output copy saved; llm/memory.py), checked by a
registered 2 x H200 set (calibration/h200x2-eager-fsdpmem-2026-11-29) on shapes the fix was not made on.

    python validation/eager_fsdp_mem.py --register calibration/h200x2-eager-fsdpmem-2026-11-29/registered.yaml   # before
    python validation/eager_fsdp_mem.py [calibration/BUNDLE]                                                      # after

ROWS: `simcluster.runner.llm_step` at micro-batch 1, two FSDP2 rows and one DDP control (the fix does not touch DDP), one
process each, every (preset, tokens) new to calibration/. Registered per row as eager_cudnn_steps.py registers (its
predict: step, memory range [steady, job peak], host share, attention) for `today` (the model with the fix, the one the
product ships) and `old` (the same with bf16_param_block off: the model before the fix, old_memory()); the fix moves
memory only, so the two steps are equal.
RULES (fixed at registration, registered.yaml), read by eager_cudnn_steps.read_out / verdicts (reused, not copied):
  S  per mode: today's mean |step error| over the mode's rows <= 8%.
  M  per mode: rank 0's peak, per process, within 10% of today's registered range [steady, job peak] (0 inside it);
     registered.yaml says "every rank's", but the runner's document holds rank 0's peak only for DDP / FSDP2.
  Reported, not judged: the old model's memory error (rank 0's peak) beside today's.
"""

from __future__ import annotations

import sys
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

import eager_cudnn_steps as steps  # noqa: E402  (predict, read-out and verdicts reused)

from simcluster.heldout.registration import registering_commit, set_main, write_registration  # noqa: E402

ROOT = steps.ROOT
BUNDLE = ROOT / "calibration" / "h200x2-eager-fsdpmem-2026-11-29"
# (name, mode, preset, seq, processes): device_run.sh's file stems (NAME-r1.json); micro-batch 1
ROWS = (
    ("fsdp-1.1b", "fsdp", "1.1b", 36864, 1),   # 22 layers, h 2048, 32K vocabulary: the block's terms carry the peak
    ("fsdp-3b", "fsdp", "3b", 18432, 1),       # 28 layers, h 3072, tied 128K vocabulary: a preset no FSDP2 row had at > 2K
    ("ddp-1.1b", "ddp", "1.1b", 30720, 1),     # the control: DDP's fp32 residual stream, untouched by the fix
)
MODES = ("fsdp", "ddp")
OLD = "model before the fix"


def old_memory():
    """The model before the fix inside the block: eager.torch_framework's frameworks with bf16_param_block off."""
    from simcluster.llm import eager

    return eager.torch_framework_as(lambda fw: replace(fw, bf16_param_block=False))


def predict(row: tuple, old: bool = False) -> dict:
    with old_memory() if old else nullcontext():
        return steps.predict(row)


def register(path: Path) -> None:
    from simcluster.runner.llm_step import PRESETS

    commit = registering_commit(ROOT)
    rows = []
    for row in ROWS:
        name, mode, preset, seq, procs = row
        rows.append({"name": name, "mode": mode, "preset": preset, "seq": seq, "micro_batch": 1, "processes": procs,
                     "layers": PRESETS[preset]["layers"], "hidden": PRESETS[preset]["hidden"],
                     "predicted": {"today": predict(row), "old": predict(row, old=True)}})
    doc = {"registered_at_commit": commit, "script": "validation/eager_fsdp_mem.py --register",
           "calibration": {"gpu_card": "models/gpu/h200-sxm-interleaved.yaml", "collective_card": "models/collective/h200x2-primitives.yaml",
                           "host": "calibration/h200x2-llm-host-2026-11-23 (product fits)",
                           "old": "FrameworkSpec.bf16_param_block off (fp32 residual stream and an attention-output copy in "
                                  "FSDP2's saved tensors): the model before the fsdpmem fix"},
           "rules": {"S": f"per mode: today's model's mean |step error| over the mode's rows <= {steps.TARGET_STEP_PCT}%",
                     "M": f"per mode: rank 0's peak memory, per process, within {steps.TARGET_MEM_PCT}% of the range [steady_mem_GiB, "
                          "stage_mem_GiB] (0 inside)",
                     "reported": "the old model's memory error (rank 0's peak) beside today's (not judged)",
                     "measured": "rank 0's median step of the row's one process; rank 0's torch.cuda.max_memory_allocated"},
           "rows": rows}
    write_registration(path, "# Predictions registered before the runs (issue 44, session 39 fsdpmem); never edited after them.\n"
                       + yaml.safe_dump(doc, sort_keys=False))
    print(f"registered {len(rows)} rows in {path} (model at {commit[:10]})")


def read_out(bundle: Path) -> dict:
    """eager_cudnn_steps.read_out's rows and verdicts, each row with the old model's memory error (rank 0's
    peak, per process)."""
    result = steps.read_out(bundle, old_name="before the fix")
    reg = {r["name"]: r for r in steps.read_run_set(bundle)["rows"]}
    for r in result["rows"]:
        r["mem_err_old"] = [steps.mem_error(reg[r["name"]]["predicted"]["old"], m) for m in r["mem_GiB"]]
    for mode in result["verdicts"]:
        errs = [abs(e) for r in result["rows"] if r["mode"] == mode for e in r["mem_err_old"]]
        if errs:
            result["verdicts"][mode] += f"; {OLD}: max |memory error| {100 * max(errs):.1f}% (reported)"
    return result


def show(result: dict) -> None:
    steps.show(result)
    for r in result["rows"]:
        print(f"{r['name']:12} memory error: today {' / '.join(f'{e:+.1%}' for e in r['mem_err'])}, "
              f"{OLD} {' / '.join(f'{e:+.1%}' for e in r['mem_err_old'])}")


def main(argv: list[str]) -> int:
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
