"""Cold review C47 items 3 and 6 (mendC47): the noise rule with an unknown lease term (across-set dof 0), and the
sensitivity line's 'met with a margin' variant (trust/noise.check_verdict / verdict; studies/eager_noise_floors.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import load_script

from simcluster.trust.noise import FloorCheck, check_verdict, floor_verdict, verdict

SACOP_HB = ("llm | PyTorch eager | single+sac-op+host-bound | bf16", 1)


@pytest.fixture(scope="module")
def floors():
    return {(f["regime"], f["gpus"]): f for f in load_script("studies/eager_noise_floors.py").floors()}


def test_an_unknown_lease_term_leaves_the_row_floor_unknown():
    """Cold review C47 item 3: across-set dof 0 (no shape ran on two leases) leaves the lease term, so the row-level
    floor, unknown: 'undecided', not 'model-limited' by a row floor that took it as zero (the old rule, kept as the
    sensitivity line's lease_zero variant); the excess and the bias clauses still decide where they fire.
    PP+host-bound's own rows (no shape on two leases) are such a population; single+sac-op+host-bound at 1 GPU was,
    until session 49's hb49 re-ran three of its shapes on a second lease (test_the_op_host_bound_regime_...)."""
    ok = FloorCheck("p", 40, 12, (10.9, 11.2), 11.0, 10.9, 0.1, 0.4, 4.7, 1.0, 1.0, False, False)
    assert verdict((ok,), 9.0) == "undecided: test too weak"
    assert verdict((ok,), 9.0, lease_zero=True) == "model-limited"                     # the rule before mendC47
    assert verdict((replace(ok, excess_pct=0.9),), 9.0) == "model-limited"             # the excess clause needs no lease
    assert verdict((replace(ok, bias_pct=9.2, bias_se_pct=3.3),), 9.0) == "model-limited"
    pp = floor_verdict("llm | PyTorch eager | PP+host-bound | bf16", 2, "H200").checks[0]   # its table rows' own
    assert check_verdict(pp) == "undecided: test too weak" and not pp.lease_known
    assert "per row unknown" in pp.text()


def test_met_with_a_margin_is_the_sensitivity_lines_variant(floors):
    """Cold review C47 item 6: 'met' is a point comparison in the rule; the sensitivity line's variant asks mean |error|
    + margin (1 se of the mean) <= target. FSDP+host-bound at 2 GPUs (7.77% over 21 rows; 7.78% before session 48 adopt2g) is met by the rule and not
    with the margin: its status rests on the 0.2-point margin (trust.md). Session 50 (trust/thin): that margin is a
    reason of the thin verdict now, so the rule reads it thin, not met; the variant still names the miss it would be."""
    ok = FloorCheck("p", 40, 12, (10.9, 11.2), 11.0, 10.9, 0.1, 0.4, 10.0, 1.0, 1.0, True)
    assert verdict((ok,), 7.8) == "met: no mark" and verdict((ok,), 7.8, margin_pct=1.41) == "noise-limited"
    fsdp = floor_verdict("llm | PyTorch eager | FSDP+host-bound | bf16", 2, "H200")
    assert fsdp.verdict == "thin" and fsdp.thin_why == "mean + 1 se 9.2%"
    assert verdict(fsdp.checks, fsdp.mean_abs_pct, margin_pct=1.41) == "model-limited"
    f = floors[(fsdp.regime, 2)]                             # the study's own line: the rows' se of the mean, 1.41 points
    assert f["mean_se_pct"] == pytest.approx(1.41, abs=0.005) and f["with_margin"] == "model-limited"


def test_the_op_host_bound_regime_is_model_limited_with_its_lease_term_known(floors):
    """Session 49 (wire49): hb49's rows (three re-runs of opcheck's, opsplit's and hostsingle's op host-bound shapes on
    another 2 x H200 lease, one new shape) brought single+sac-op+host-bound at 1 GPU to 8 rows from 5 sets at 7.46%, met
    pooled; since session 50 (trust/thin) thin (each set once 9.8%). Session 52: lab1x52's two op rows (registered before
    their run, -13.8 / -10.0%) sink it to 10 rows from 6 sets at 8.35%: a miss, and the rule reads it model-limited (its
    own rows' floor has a lease term from the re-run shapes, a row floor under the target, 6.7%), recorded."""
    s = load_script("studies/eager_noise_floors.py")
    f = s.floor_of(*SACOP_HB, s.regime_rows()[SACOP_HB])
    assert SACOP_HB in floors and floor_verdict(SACOP_HB[0], 1, "H200").verdict == "model-limited"
    assert (f["rows"], f["sets"], f["verdict"]) == (10, 6, "model-limited") and f["mean_abs_pct"] == pytest.approx(8.35, abs=0.005)
    own = f["own"]["check"]
    assert own.lease_known and f["own"]["lease_sd"] > 0 and own.row_floor_pct == pytest.approx(6.68, abs=0.05)
    assert {"h200x1-hb49-2026-12-01", "h200x1-lab1x52-2026-12-01"} <= set(f["own"]["sets_with_repeats"])
    assert f["mean_abs_pct"] > 8.0 and own.row_floor_pct < 8.0   # a miss its own rows' row floor does not explain
