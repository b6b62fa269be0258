"""The H100 Megatron MoE rows of calibration/published, predicted with the same reader, machine and framework as
`simcluster validate --published llm` (reference/llm.py), one line each with the predicted step's breakdown in % of
the step, and the family's mean |error| (issue 44, item 5). Read-only, no model change, not a test. Each line also checks
the metric and the file's shape against the source (issue 44 audit, session moepub): the source's printed model FLOPs
per token (TFLOP/s/GPU x GPUs / tokens/s) over simcluster's causal count of the file's shape ("flops x1.00" = the same
count; Megatron-Bridge's flop_utils halves causal attention; its GLU factor is SiLU-only, so GPT-OSS reads ~1/1.20).
    python studies/moe_rows.py
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.cards import load_collective  # noqa: E402
from simcluster.hardware.gpu import load_gpu  # noqa: E402
from simcluster.llm.predict import model_flops_per_step, network_for, predict_llm  # noqa: E402
from simcluster.machine_models import build_cluster  # noqa: E402
from simcluster.published import read_published  # noqa: E402
from simcluster.reference.llm import RECIPE_PARSERS, _compared, framework_of, llm_usage, machine_for, memory_options  # noqa: E402
from simcluster.reference.llm_specs import spec_of  # noqa: E402

PUBLISHED = ROOT / "calibration" / "published"
# (file stem, rows): every H100 row with experts that the validation compares
MOE_ROWS = (
    ("llm-dgxc-benchmarking-v25.05-deepseek-v3-h100", (0, 1)),
    ("llm-dgxc-benchmarking-v25.08-deepseek-v3-h100", (0,)),
    ("llm-megatron-bridge-25.11-dgx-h100-b200", (4, 5)),
    ("llm-megatron-bridge-26.02-26.04.01-dgx-h100-gpt-oss", (0, 1, 2, 3)),
    ("llm-megatron-bridge-26.04-26.06-dgx-h100-moe", (0, 1, 2, 3, 4)),
)
# session moepub (s35): recorded and predicted once before its model change (studies/moe_*-predicted-before.txt)
NEW_ROWS = (
    ("llm-megatron-bridge-26.02.01-26.04-dgx-h100-moe", (0, 1, 2, 3)),
    ("llm-megatron-bridge-skills-qwen3-30b-h100-bf16", (0, 1, 2, 3, 4)),
)


@dataclass
class Row:
    model: object
    par: object
    batch: object
    gpu: object
    net: object
    framework: object
    result: object
    error: float      # + = predicted faster than measured
    held_out: bool
    printed_flops_ratio: float   # the source's printed FLOPs per token / simcluster's causal count of the file's shape
    gpus: int = 0
    measured_step_s: float = 0.0   # the source's step (printed, or tokens per step / printed tokens/s; nan: TFLOP/s alone)


def predict_row(stem: str, i: int, kernel_s: float | None = None) -> Row:
    """Row i of calibration/published/<stem>.yaml as the validation predicts it; kernel_s: the framework's
    moe_sync_kernel_s replaced (studies/moe_te_host.py's derivation and sensitivity)."""
    ref = read_published(PUBLISHED / f"{stem}.yaml", "published-llm-run")
    usage, run = llm_usage(ref), ref.runs[i]
    (model, par, batch), _, _ = spec_of(run, usage.assumptions)
    scaling = memory_options(ref, run, "recipe", RECIPE_PARSERS).get("fp8_scaling")   # as reference/llm._row reads it
    batch = replace(batch, fp8_scaling=scaling) if scaling else batch
    machine = machine_for(usage, run["gpus"])
    intra = load_collective(machine.card)[0]
    net = network_for(machine, intra, build_cluster(machine, intra) if machine.domains > 1 else None)
    gpu, framework = load_gpu(machine.gpu_card)[0], framework_of(ref, run)
    if kernel_s is not None:
        framework = replace(framework, moe_sync_kernel_s=kernel_s)
    result = predict_llm(model, par, batch, gpu, net, run["gpus"], "megatron", trace=False, framework=framework)
    _, _, _, error = _compared(ref, run, model, batch, result)
    meas, tokens = run["measured"], batch.global_batch * model.seq
    step = meas.get("step_time_s")   # a row printing TFLOP/s alone (no tokens/s, no step): both nan below, not a guess
    tokens_per_s = meas.get("tokens_per_s") or (tokens / step if step else float("nan"))
    printed = (meas.get("tflops_per_gpu") or float("nan")) * 1e12 * run["gpus"] / tokens_per_s   # nan: no TFLOP/s printed
    ratio = printed / (model_flops_per_step(model, batch, "causal") / tokens)
    measured_step = meas.get("step_time_s") or tokens / tokens_per_s
    return Row(model, par, batch, gpu, net, framework, result, error, ref.held_out(i), ratio, run["gpus"], measured_step)


def main() -> None:
    summary(MOE_ROWS, "the 14 H100 MoE rows")
    summary(NEW_ROWS, "session moepub's new rows")


def summary(files, label: str, kernel_s: float | None = None) -> None:
    errors, held = [], []
    for stem, rows in files:
        for i in rows:
            row = predict_row(stem, i, kernel_s)
            par, result, error, held_row = row.par, row.result, row.error, row.held_out
            errors.append(error)
            if held_row:
                held.append(error)
            parts = ", ".join(f"{k} {100 * v / result.step_time_s:.0f}%" for k, v in result.breakdown.items()
                              if isinstance(v, (int, float)) and v > 0)
            print(f"{stem[4:40]:36s} {i}  t{par.tp} p{par.pp} v{par.virtual_stages} e{par.ep} {par.moe_dispatcher:8s}"
                  f" step {result.step_time_s:8.3f} s  error {100 * error:+6.1f}%  held out {'yes' if held_row else 'no '}"
                  f"  flops x{row.printed_flops_ratio:.3f}  {parts}")
    within = sum(abs(e) <= 0.10 for e in errors)
    mean_held = 100 * sum(abs(e) for e in held) / len(held) if held else float("nan")
    print(f"{label}: {len(errors)} rows, mean |error| {100 * sum(abs(e) for e in errors) / len(errors):.1f}%, "
          f"{within} within 10%, {sum(e > 0 for e in errors)} predicted fast; held out {len(held)}: {mean_held:.1f}%")


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    main()
