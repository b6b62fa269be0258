"""Cold review C47 items 3 and 6 (mendC47): the noise rule with an unknown lease term (across-set dof 0), and the
sensitivity line's 'met with a margin' variant (trust/noise.check_verdict / verdict; studies/eager_noise_floors.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import load_script

from simcluster.trust.noise import FloorCheck, floor_verdict, verdict


@pytest.fixture(scope="module")
def floors():
    return {(f["regime"], f["gpus"]): f for f in load_script("studies/eager_noise_floors.py").floors()}


def test_an_unknown_lease_term_leaves_the_row_floor_unknown():
    """Cold review C47 item 3: across-set dof 0 (no shape ran on two leases) leaves the lease term, so the row-level
    floor, unknown: 'undecided', not 'model-limited' by a row floor that took it as zero (the old rule, kept as the
    sensitivity line's lease_zero variant); the excess and the bias clauses still decide where they fire, and
    single+sac-op+host-bound at 1 GPU, decided by that clause alone before, is undecided."""
    ok = FloorCheck("p", 40, 12, (10.9, 11.2), 11.0, 10.9, 0.1, 0.4, 4.7, 1.0, 1.0, False, False)
    assert verdict((ok,), 9.0) == "undecided: test too weak"
    assert verdict((ok,), 9.0, lease_zero=True) == "model-limited"                     # the rule before mendC47
    assert verdict((replace(ok, excess_pct=0.9),), 9.0) == "model-limited"             # the excess clause needs no lease
    assert verdict((replace(ok, bias_pct=9.2, bias_se_pct=3.3),), 9.0) == "model-limited"
    sac = floor_verdict("llm | PyTorch eager | single+sac-op+host-bound | bf16", 1, "H200")
    assert sac.verdict == "undecided: test too weak" and not sac.checks[0].lease_known
    assert "per row unknown" in sac.checks[0].text()


def test_met_with_a_margin_is_the_sensitivity_lines_variant(floors):
    """Cold review C47 item 6: 'met' is a point comparison in the rule; the sensitivity line's variant asks mean |error|
    + margin (1 se of the mean) <= target. FSDP+host-bound at 2 GPUs (7.77% over 21 rows; 7.78% before session 48 adopt2g) is met by the rule and not
    with the margin: its status rests on the 0.2-point margin (trust.md)."""
    ok = FloorCheck("p", 40, 12, (10.9, 11.2), 11.0, 10.9, 0.1, 0.4, 10.0, 1.0, 1.0, True)
    assert verdict((ok,), 7.8) == "met: no mark" and verdict((ok,), 7.8, margin_pct=1.41) == "noise-limited"
    fsdp = floor_verdict("llm | PyTorch eager | FSDP+host-bound | bf16", 2, "H200")
    assert fsdp.verdict == "met: no mark"
    assert verdict(fsdp.checks, fsdp.mean_abs_pct, margin_pct=1.41) == "model-limited"
    f = floors[(fsdp.regime, 2)]                             # the study's own line: the rows' se of the mean, 1.41 points
    assert f["mean_se_pct"] == pytest.approx(1.41, abs=0.005) and f["with_margin"] == "model-limited"
    sac = floors[("llm | PyTorch eager | single+sac-op+host-bound | bf16", 1)]
    assert (sac["verdict"], sac["lease_zero"]) == ("undecided: test too weak", "model-limited")
