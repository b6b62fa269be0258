"""The MoE caveat's figures (llm/caveats.MOE_MEGATRON, printed with every Megatron MoE answer) recomputed from the
predictions: a model change that moves them fails here until the caveat is rewritten (cold review A50, finding 7)."""

import re

import pytest
from conftest import load_script

from simcluster.llm.caveats import MOE_MEGATRON


@pytest.mark.slow
def test_the_moe_caveats_figures_are_todays_predictions():
    study = load_script("studies/moe_adopt50_reading.py")
    rows_then, rows = study.predictions()
    figures = study.caveat_figures(study.development(rows_then), study.development(rows), study.zoo_rows(rows),
                                 study.moe_held_out(rows))
    text = " ".join(MOE_MEGATRON.split())
    missing = [claim for claim in study.caveat_claims(figures) if claim not in text]
    assert not missing, (missing, figures)


class _Probe(dict):
    """A figures dict whose every key reads as a marker, to turn caveat_claims' phrases into patterns."""

    def __missing__(self, key: str) -> str:
        return f"\0{key}\0"


def _caveat_figures_as_written(study) -> dict:
    """The figures llm/caveats.MOE_MEGATRON states, read from the caveat itself (the one source of truth): each of
    caveat_claims' phrases, its figures as groups, found in the caveat's text."""
    text, figures = " ".join(MOE_MEGATRON.split()), {}
    for claim in study.caveat_claims(_Probe()):
        parts = claim.split("\0")   # literal, key, literal, key, ..., literal
        pattern = "".join(re.escape(p) if i % 2 == 0 else rf"(?P<{p}>[0-9]+(?:\.[0-9]+)?)" for i, p in enumerate(parts))
        found = re.search(pattern, text)
        assert found, f"caveat_claims' phrase {claim!r} is not in the caveat's wording"
        figures |= found.groupdict()
    return figures


def test_a_changed_figure_is_caught():
    """The comparison can fail, for every figure: the figures read from the caveat's own text make every phrase, and any
    one figure moved (its last digit) drops its phrase from the caveat."""
    study = load_script("studies/moe_adopt50_reading.py")
    figures = _caveat_figures_as_written(study)
    text = " ".join(MOE_MEGATRON.split())
    assert len(figures) == 18 and all(claim in text for claim in study.caveat_claims(figures))
    for key, value in figures.items():
        moved = value[:-1] + str((int(value[-1]) + 1) % 10)
        assert not all(claim in text for claim in study.caveat_claims({**figures, key: moved})), key
