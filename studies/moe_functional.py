"""Megatron-LM's own functional-test iteration times on DGX-H100 (calibration/published/megatron-functional-moe-h100.yaml;
issue 44, session moegold) against the LLM model: per case the predicted and measured step (seconds per iteration, the
harness's median past warm-up) and the error (+ = predicted faster, as `simcluster validate --published llm`), with the
predicted step's breakdown in % of the step. Same reader, machine and framework as the published comparison. A development
source (small host-bound models), never a validation row. Read-only, not a test.
    python studies/moe_functional.py              # the cases, as the model predicts them
    python studies/moe_functional.py --host-fit   # the declared host fit (llm-findings.md, session moegold): a Megatron + TE
                                                  # host cost c per modelled kernel and a per step, fitted on one half, judged on the other
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.cards import load_collective  # noqa: E402
from simcluster.hardware.gpu import load_gpu  # noqa: E402
from simcluster.llm.predict import network_for, predict_llm  # noqa: E402
from simcluster.machine_models import build_cluster  # noqa: E402
from simcluster.published import read_published  # noqa: E402
from simcluster.reference.llm import _compared, framework_of, llm_usage, machine_for  # noqa: E402
from simcluster.reference.llm_specs import spec_of  # noqa: E402

SOURCE = ROOT / "calibration" / "published" / "megatron-functional-moe-h100.yaml"


def predict_case(ref, usage, run, **host):
    """(model, par, batch, framework, result, error) of one case, as the published comparison predicts a row; `host`:
    FrameworkSpec host fields (host_kernel_s, host_step_s) set on the case's framework (--host-fit)."""
    (model, par, batch), _, _ = spec_of(run, usage.assumptions)
    machine = machine_for(usage, run["gpus"])
    intra = load_collective(machine.card)[0]
    net = network_for(machine, intra, build_cluster(machine, intra) if machine.domains > 1 else None)
    gpu, framework = load_gpu(machine.gpu_card)[0], replace(framework_of(ref, run), **host)
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


def fit_half(case: str) -> bool:
    """The split declared before the fit (llm-findings.md): a case is in the fit half when sha256(its name) starts with an
    even hex digit."""
    return int(hashlib.sha256(case.encode()).hexdigest()[0], 16) % 2 == 0


def host_fit() -> None:
    """For each c on a 10 us grid, the per-step a minimising the squared relative error over the fit cases (closed form:
    a = sum((1 - p / m) / m) / sum(1 / m^2)); the best (c, a) judged on the other cases. Two declared splits: the hash
    halves, and dense -> MoE."""
    import numpy as np

    ref = read_published(SOURCE, "published-llm-run")
    usage = llm_usage(ref)
    names = [run["case"] for run in ref.runs]
    measured = np.array([run["measured"]["step_time_s"] for run in ref.runs])
    grid = [1e-5 * i for i in range(31)]
    predicted = {c: np.array([predict_case(ref, usage, run, host_kernel_s=c)[4].step_time_s for run in ref.runs]) for c in grid}
    for label, fit in (("hash halves", np.array([fit_half(n) for n in names])),
                       ("dense -> MoE", np.array([n.startswith("gpt/") for n in names]))):
        m = measured[fit]
        best = {c: max(0.0, float(np.sum((1 - predicted[c][fit] / m) / m) / np.sum(1 / m**2))) for c in grid}
        c = min(grid, key=lambda c: float(np.sum(((predicted[c][fit] + best[c]) / m - 1) ** 2)))
        a = best[c]
        error = 1 - (predicted[c] + a) / measured
        print(f"{label}: c {1e6 * c:.0f} us per modelled kernel, a {1e3 * a:.1f} ms per step; fit {int(fit.sum())} cases "
              f"{100 * np.mean(abs(error[fit])):.1f}% mean |error|; judged {int((~fit).sum())} cases "
              f"{100 * np.mean(abs(error[~fit])):.1f}%, {int(np.sum(abs(error[~fit]) <= 0.10))} within 10%")
        for name, e, f in zip(names, error, fit, strict=True):
            print(f"    {'fit   ' if f else 'judged'} {name[:72]:72s} {100 * e:+6.1f}%")


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check(options=("--host-fit",))
    host_fit() if "--host-fit" in sys.argv[1:] else main()
