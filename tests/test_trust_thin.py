"""trust/thin.py: a met that rests on one source is thin, not met (issue 44's house rule, session 50; the sources
outside the largest counted since session 54, rule54)."""

from __future__ import annotations

import math

import pytest

from simcluster.trust.noise import FloorCheck, FloorVerdict, verdict
from simcluster.trust.thin import MIN_OTHER_ROWS, MIN_OTHER_SOURCES, lab_figures, source_figures, thin_why


def test_each_source_weighs_once_and_the_rows_outside_the_largest_count():
    figures = source_figures({"k": [2.0] * 17, "a": [4.0]}, 10.0)
    assert figures == {"each_source_once_mean": pytest.approx(3.0), "each_source_once_share": 1.0, "rows_outside_largest": 1,
                       "sources_outside_largest": 1}
    assert thin_why(figures, 10.0, 0.8) == (f"1 row outside the largest source, {MIN_OTHER_ROWS} needed; 1 source outside "
                                            f"the largest source, {MIN_OTHER_SOURCES} needed")   # FSDP/ZeRO's session-50 shape
    wide = source_figures({"k": [2.0] * 17, "a": [4.0], "b": [5.0], "c": [6.0]}, 10.0)
    assert thin_why(wide, 10.0, 0.8) == ""                                   # three rows elsewhere, each source meets it
    bad = source_figures({"k": [1.0] * 40, "a": [15.0] * 3, "b": [15.0] * 3}, 10.0)
    assert thin_why(bad, 10.0, 0.8) == "each source once 10.3%, 33% within"   # pooled 2.2%, 87% within: met pooled only
    assert thin_why(bad, 12.0) == ""                                         # no share asked, 10.3% under 12%


def test_rows_outside_the_largest_source_from_one_other_source_are_thin():
    """Session 54 (rule54, rule A, registered before its print): the rows outside the largest source must come from >= 2
    sources. One other document's 3 rows met the session-50 rule (rows only) and are thin now; 2 other sources holding 3
    or 4 rows between them (fp8's and FSDP/ZeRO's shapes today) still meet it."""
    one_other = source_figures({"kempner": [5.0] * 17, "alibaba": [0.8, 8.4, 6.8]}, 10.0)
    assert one_other["rows_outside_largest"] == MIN_OTHER_ROWS and one_other["sources_outside_largest"] == 1
    assert thin_why(one_other, 10.0, 0.8) == f"1 source outside the largest source, {MIN_OTHER_SOURCES} needed"
    two_others = source_figures({"kempner": [5.0] * 17, "alibaba": [0.8, 8.4, 6.8], "aws": [3.0]}, 10.0)
    assert two_others["sources_outside_largest"] == 2 and thin_why(two_others, 10.0, 0.8) == ""
    assert source_figures({}, 10.0)["sources_outside_largest"] == 0


def test_the_lab_form_adds_the_one_se_margin_and_judges_no_miss():
    lab = lab_figures({"s1": [5.0, 11.0, 6.0], "s2": [7.5, 8.0, 7.5], "s3": [7.0]}, 8.0)
    assert lab["mean"] == pytest.approx(52 / 7) and lab["rows_outside_largest"] == 4 and lab["se"] > 0.5
    assert lab["why"] == f"mean + 1 se {lab['mean'] + lab['se']:.1f}%"
    assert lab_figures({"s1": [9.0, 9.5, 9.0], "s2": [9.0, 9.0, 9.0]}, 8.0)["why"] == ""     # a miss, not thin
    one = lab_figures({"s1": [3.0]}, 8.0)
    assert math.isinf(one["se"]) and one["why"] == ("0 rows outside the largest source, 3 needed; 0 sources outside the "
                                                    "largest source, 2 needed; one row: no se")


def test_thin_is_a_verdict_of_the_one_rule_and_not_met():
    ok = FloorCheck("p", 40, 12, (10.9, 11.2), 11.0, 10.9, 0.1, 0.4, 10.0, 1.0, 1.0, True)
    assert verdict((ok,), 7.0) == "met: no mark" and verdict((ok,), 7.0, thin="mean + 1 se 9.0%") == "thin"
    assert verdict((ok,), 9.0, thin="anything") == "noise-limited"           # a miss is judged by the floor rule
    v = FloorVerdict("llm | PyTorch eager | FSDP | bf16", 2, 6, 3, 7.0, (ok,), mean_se_pct=0.5, each_set_pct=7.0,
                     rows_outside_largest=3)
    assert v.verdict == "met: no mark" and v.thin_why == "" and "thin_why" not in v.to_json()
    two_sets = FloorVerdict(v.regime, 2, 6, 2, 7.0, (ok,), mean_se_pct=0.5, each_set_pct=7.0, rows_outside_largest=3)
    assert two_sets.verdict == "thin" and two_sets.thin_why == "1 source outside the largest source, 2 needed"   # s54: its sets - 1
    thin = FloorVerdict(v.regime, 2, 6, 2, 7.0, (ok,), mean_se_pct=1.5, each_set_pct=8.5, rows_outside_largest=2)
    assert thin.verdict == "thin" and thin.to_json()["thin_why"] == thin.thin_why
    assert thin.thin_why == ("2 rows outside the largest source, 3 needed; 1 source outside the largest source, 2 needed; "
                             "each source once 8.5%; mean + 1 se 8.5%")
    assert thin.text().startswith("thin at 2 GPUs (H200): 6 rows from 2 sets at 7.0% mean |error| (target 8%), it reaches "
                                  "the target pooled only (2 rows outside")
    assert FloorVerdict(v.regime, 2, 6, 2, 7.0, (ok,)).verdict == "met: no mark"   # figures not recorded: not judged thin
