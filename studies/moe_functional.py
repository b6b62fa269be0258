"""Megatron-LM's own functional-test iteration times on DGX-H100 (calibration/published/megatron-functional-moe-h100.yaml;
issue 44, session moegold) against the LLM model: per case the predicted and measured step (seconds per iteration, the
harness's median past warm-up) and the error (+ = predicted faster, as `simcluster validate --published llm`), with the
predicted step's breakdown in % of the step. Same reader, machine and framework as the published comparison. A development
source (small host-bound models), never a validation row. Read-only, not a test.
    python studies/moe_functional.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.cards import load_collective  # noqa: E402
from simcluster.hardware.gpu import load_gpu  # noqa: E402
from simcluster.llm.predict import network_for, predict_llm  # noqa: E402
from simcluster.machine_models import build_cluster  # noqa: E402
from simcluster.published import read_published  # noqa: E402
from simcluster.reference.llm import _compared, framework_of, llm_usage, machine_for, spec_of  # noqa: E402

SOURCE = ROOT / "calibration" / "published" / "megatron-functional-moe-h100.yaml"


def predict_case(ref, usage, run):
    """(model, par, batch, framework, result, error) of one case, as the published comparison predicts a row."""
    (model, par, batch), _, _ = spec_of(run, usage.assumptions)
    machine = machine_for(usage, run["gpus"])
    intra = load_collective(machine.card)[0]
    net = network_for(machine, intra, build_cluster(machine, intra) if machine.domains > 1 else None)
    gpu, framework = load_gpu(machine.gpu_card)[0], framework_of(ref, run)
    result = predict_llm(model, par, batch, gpu, net, run["gpus"], "megatron", trace=False, framework=framework)
    return model, par, batch, framework, result, _compared(ref, run, model, batch, result)[3]


def main() -> None:
    ref = read_published(SOURCE, "published-llm-run")
    usage = llm_usage(ref)
    families: dict[str, list[float]] = {}
    for run in ref.runs:
        model, par, batch, framework, result, error = predict_case(ref, usage, run)
        families.setdefault("moe" if model.moe else "dense", []).append(error)
        parts = ", ".join(f"{k} {100 * v / result.step_time_s:.0f}%" for k, v in result.breakdown.items()
                          if isinstance(v, (int, float)) and v > 0)
        print(f"{run['case'][4:64]:60s} t{par.tp}p{par.pp}v{par.virtual_stages}c{par.cp}e{par.ep}d{par.dp} "
              f"pred {1e3 * result.step_time_s:8.1f} ms  meas {1e3 * run['measured']['step_time_s']:8.1f} ms  "
              f"error {100 * error:+6.1f}%  [{framework.name}] {parts}")
    for family, errors in families.items():
        print(f"{family}: {len(errors)} cases, mean |error| {100 * sum(map(abs, errors)) / len(errors):.1f}%, "
              f"{sum(abs(e) <= 0.10 for e in errors)} within 10%, {sum(e > 0 for e in errors)} predicted fast")


if __name__ == "__main__":
    main()
