"""The MoE caveat's figures (llm/caveats.MOE_MEGATRON, printed with every Megatron MoE answer) recomputed from the
predictions: a model change that moves them fails here until the caveat is rewritten (cold review A50, finding 7)."""

import pytest
from conftest import load_script

from simcluster.llm.caveats import MOE_MEGATRON


@pytest.mark.slow
def test_the_moe_caveats_figures_are_todays_predictions():
    study = load_script("studies/moe_adopt50_reading.py")
    rows_then, rows = study.predictions()
    figures = study.caveat_figures(study.development(rows_then), study.development(rows), study.zoo_rows(rows))
    text = " ".join(MOE_MEGATRON.split())
    missing = [claim for claim in study.caveat_claims(figures) if claim not in text]
    assert not missing, (missing, figures)


def test_a_changed_figure_is_caught():
    """The comparison can fail: one figure off by one and its phrase is no longer in the caveat."""
    study = load_script("studies/moe_adopt50_reading.py")
    figures = {"rows": 70, "mean_pct": "17.3", "within": 14, "slow": 33, "slow_grok": 32, "fast": 23, "sources": 13,
               "each_source_pct": "17.3", "sources_worse": 7, "recent_rows": 13, "recent_fast": 11, "zoo_rows": 10,
               "zoo_mean_pct": "7.5", "gpu_work_s": "26.07", "gpu_active_s": "22.82"}
    text = " ".join(MOE_MEGATRON.split())
    assert all(claim in text for claim in study.caveat_claims(figures))
    assert not all(claim in text for claim in study.caveat_claims({**figures, "fast": 24}))
