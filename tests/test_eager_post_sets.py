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
