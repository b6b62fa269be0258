"""Session 37's post sets (validation/llm_eager_regimes.py --plan post / postcp): the GPU-bound 2-GPU modes and torch CP
at (preset, tokens) new to calibration/ when planned, TP left out (at the machine's noise: the noise set)."""

from __future__ import annotations

from conftest import ROOT, load_script, measured_llm_tokens

from simcluster.runner.llm_step import PRESETS

regimes = load_script(ROOT / "validation" / "llm_eager_regimes.py")
POST = ("calibration/h200x2-llm-eager-post-2026-11-29", "calibration/h200x2-llm-eager-postcp-2026-11-29")


def _planned(name: str) -> set[tuple]:
    _, sizes = regimes.PLANS[name]
    out = set()
    for size in sizes:
        preset, mb = size[0], size[1]
        seq = size[3] if len(size) > 3 else regimes.SEQ
        out.add((preset, PRESETS[preset]["layers"], seq * mb))   # per micro-batch, as measured_llm_tokens keys documents
    return out


def test_the_post_plans_are_new_to_calibration_and_leave_tp_out():
    earlier = measured_llm_tokens(*(ROOT / p for p in POST))
    for name in ("post", "postcp"):
        assert _planned(name) & earlier == set(), name
    assert set(regimes.PLANS["post"][0]) == {"ddp", "fsdp", "pp-1f1b", "pp-gpipe"}
    assert set(regimes.PLANS["postcp"][0]) == {"cp"}


def test_the_registered_post_runs_are_held_out_rows_at_their_registered_steps():
    import pytest
    import yaml

    from simcluster.heldout import eager

    assert set(POST) == set(eager.POST_BUNDLES) and set(POST) <= set(eager.REGISTERED)
    for bundle, runs in zip(POST, (12, 3), strict=True):
        reg = yaml.safe_load((ROOT / bundle / "registered.yaml").read_text())["runs"]
        rows = eager.registered_rows(ROOT / bundle)
        assert len(rows) == len(reg) == runs
        registered = {(r["preset"], r["mode"]): r["predicted"]["h200"]["step_ms"] / 1e3 for r in reg}
        for row in rows:
            preset, mode = row["label"].split()[:2]
            assert row["predicted_s"] == pytest.approx(registered[(preset, mode)]) and row["gpus"] == 2


def test_the_range_rule_for_memory():
    pred = {"stage_mem_GiB": [50.0], "steady_mem_GiB": [40.0]}
    assert regimes.mem_error(pred, 0, 45.0) == 0.0
    assert regimes.mem_error(pred, 0, 55.0) == regimes.pct(50.0, 55.0) < 0
    assert regimes.mem_error(pred, 0, 36.0) == regimes.pct(40.0, 36.0) > 0
    assert regimes.mem_error({"stage_mem_GiB": [50.0]}, 0, 45.0) == regimes.pct(50.0, 45.0)   # an older registration
