"""Megatron-LM's functional-test cases on DGX-H100 (calibration/published/megatron-functional-moe-h100.yaml, issue 44,
session moegold): every recorded case is one the LLM model can represent and predict, the file stays out of the
published-row validation (its name is not llm-*), and the fit / judge split is the one declared in llm-findings.md."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "studies"))

import moe_functional  # noqa: E402

from simcluster.published import published_files, read_published  # noqa: E402
from simcluster.reference.llm import llm_usage  # noqa: E402


def test_every_case_is_predicted_with_its_recorded_source():
    ref = read_published(moe_functional.SOURCE, "published-llm-run")
    usage = llm_usage(ref)
    assert len(ref.runs) == 16
    for run in ref.runs:
        assert run["path"].endswith("golden_values_dev_dgx_h100.json") and run["case"].split("/")[1] in run["path"]
        assert len(run["golden_commit"]) == 40
        model, par, batch, framework, result, error = moe_functional.predict_case(ref, usage, run)
        assert par.tp * par.pp * par.cp * par.dp == run["gpus"] == 8
        assert result.step_time_s > 0 and abs(1 - result.step_time_s / run["measured"]["step_time_s"] - error) < 1e-12
    assert sum(bool(run["model"].get("experts")) for run in ref.runs) == 3


def test_not_a_validation_file_and_the_declared_split():
    assert moe_functional.SOURCE not in published_files(None, "llm-")
    ref = read_published(moe_functional.SOURCE, "published-llm-run")
    fit = [run["case"] for run in ref.runs if moe_functional.fit_half(run["case"])]
    assert len(fit) == 8 and all(case in fit for case in [r["case"] for r in ref.runs if r["case"].startswith("moe/")])
