"""Issue 41 item 4: scale-out losses from stragglers (llm/scaleout.py)."""

import json
from pathlib import Path

import pytest

from simcluster.cli import main
from simcluster.llm import scaleout

ROOT = Path(__file__).resolve().parent.parent


def test_expected_max_of_normals_grows_like_sqrt_2_ln_n():
    assert scaleout.expected_max_normal(1) == 0.0
    assert scaleout.expected_max_normal(2) == pytest.approx(0.5642, abs=0.02)      # exact 1/sqrt(pi)
    assert scaleout.expected_max_normal(8) == pytest.approx(1.4236, abs=0.02)      # tabulated exact value
    values = [scaleout.expected_max_normal(2**k) for k in range(1, 15)]
    assert all(b > a for a, b in zip(values, values[1:], strict=False))
    assert values[-1] < (2 * 16384 and (2 * __import__("math").log(16384)) ** 0.5)


def test_the_term_scales_the_compute_and_is_zero_on_one_gpu():
    assert scaleout.straggler_s(2.0, 1) == 0.0
    assert scaleout.straggler_s(2.0, 1024, spread=0.02) == pytest.approx(2.0 * 0.02 * scaleout.expected_max_normal(1024))


def _spread_scenario(tmp_path, spread):
    text = (ROOT / "scenarios/llm/llama405b-16k.yaml").read_text().replace("../../", f"{ROOT}/")
    text = text.replace("gpu: {card:", f"gpu: {{speed_spread: {spread}, card:")
    path = tmp_path / f"s{spread}.yaml"
    path.write_text(text)
    return path


def test_a_scenario_sets_its_speed_spread_and_the_breakdown_names_the_term(tmp_path, capsys):
    assert "gpu: {card:" in (ROOT / "scenarios/llm/llama405b-16k.yaml").read_text()
    steps = {}
    for spread in (0, 0.04):
        assert main(["predict", "training", "--scenario", str(_spread_scenario(tmp_path, spread)), "--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        steps[spread] = (doc["step_time_s"], doc["breakdown"]["stragglers"], doc["breakdown"]["compute"])
    assert steps[0][1] == 0.0
    assert steps[0.04][1] == pytest.approx(0.04 * scaleout.expected_max_normal(16384) * steps[0.04][2])
    assert steps[0.04][0] == pytest.approx(steps[0][0] + steps[0.04][1])


def test_a_bad_speed_spread_is_one_line_at_its_key(tmp_path, capsys):
    assert main(["predict", "training", "--scenario", str(_spread_scenario(tmp_path, -0.1))]) == 2
    err = capsys.readouterr().err
    assert "machine.gpu.speed_spread" in err and len(err.strip().splitlines()) == 1
