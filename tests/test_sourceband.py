"""Session 55 band55: the source-weighted candidate band (trust/sourceband.py, OFF) on synthetic rows -- its order
statistic, its source minimum, that one many-row source cannot carry its tail, its coverage of new sources in a
simulation where the shipped row-weighted band misses, and that it changes no answer (trust_of is not touched)."""

import math
import random

import pytest

from simcluster.trust import sourceband
from simcluster.trust.band import trust_of
from simcluster.trust.regime import Regime
from simcluster.trust.table import Residual, Table, conformal_bounds

REGIME = "collective | all_reduce | ring | >=64MiB | rdma-ib"
FAMILY = "collective across nodes"


def _rows(per_source: dict[str, list[float]], regime: str = REGIME, family: str = FAMILY) -> list[Residual]:
    return [Residual(family, regime, s, f"{s} runs[{i}]", 16.0, rho) for s, rhos in per_source.items()
            for i, rho in enumerate(rhos)]


def test_nine_sources_minimum_at_80_percent():
    assert sourceband.SW_MIN_SOURCES == 9
    assert sourceband.min_sources(0.9) == 19 and sourceband.min_sources(0.5) == 3
    rows = _rows({f"s{k}": [1.0 + k / 100] for k in range(8)})
    assert sourceband.source_weighted_bounds(rows) is None
    assert sourceband.source_weighted_bounds(_rows({f"s{k}": [1.0 + k / 100] for k in range(9)})) == (1.0, 1.08)


@pytest.mark.parametrize("s", [9, 10, 19, 20, 37])
def test_one_row_per_source_is_the_shipped_order_statistic(s):
    rhos = [0.8 + 0.37 * ((7 * k) % s) / s for k in range(s)]
    rows = _rows({f"s{k}": [rho] for k, rho in enumerate(rhos)})
    assert sourceband.source_weighted_bounds(rows) == conformal_bounds(rhos)


def test_a_many_row_source_does_not_carry_the_tail():
    per = {f"s{k}": [1.0 + k / 1000] for k in range(19)} | {"big": [3.0] * 50}
    rows = _rows(per)
    assert conformal_bounds([r.rho for r in rows])[1] == 3.0          # row-weighted: the big source's tail
    lo, hi = sourceband.source_weighted_bounds(rows)
    assert (lo, hi) == (1.001, 1.018)   # each source once: 19 of the 20 sources at or inside either edge


def test_the_tail_source_counts_once_at_the_edge():
    """Twenty sources, two of them slow: the upper edge is ceil(0.9 x 21) = 19 sources' worth, so it reaches the slower
    one's rows only partly -- a source's weight is 1/S whatever its row count."""
    per = {f"s{k}": [1.0] * (1 + k % 3) for k in range(18)} | {"slow1": [1.5, 1.6], "slow2": [2.0] * 30}
    lo, hi = sourceband.source_weighted_bounds(_rows(per))
    assert lo == 1.0 and hi == 1.6


def _simulate(trials: int, seed: int = 55) -> tuple[float, float]:
    """Coverage of a new source's random row, each source weighing one, for the row-weighted and the candidate bands:
    clusters with a random offset (log-normal, sd 0.3) and a row noise (sd 0.03); one in four sources holds 20 rows, the
    rest 2; the band from 12 sources."""
    rng = random.Random(seed)
    shipped = candidate = 0
    for _ in range(trials):
        per = {}
        for k in range(13):
            offset = rng.gauss(0, 0.3)
            per[f"s{k}"] = [math.exp(offset + rng.gauss(0, 0.03)) for _ in range(20 if rng.random() < 0.25 else 2)]
        new = rng.choice(per.pop("s12"))
        rows = _rows(per)
        lo, hi = conformal_bounds([r.rho for r in rows])
        shipped += lo <= new <= hi
        lo, hi = sourceband.source_weighted_bounds(rows)
        candidate += lo <= new <= hi
    return shipped / trials, candidate / trials


def test_simulated_new_sources_are_covered_at_the_promise():
    """The promise (>= 80% for a new source's row) holds in simulation within its Monte-Carlo error; the shipped
    row-weighted band, carried by the large sources, covers less (the failure the candidate is for)."""
    shipped, candidate = _simulate(1500)
    assert candidate >= 0.78
    assert shipped < candidate - 0.03


def _regime_table(n_sources: int, extra: dict[str, list[float]] | None = None) -> Table:
    per = {f"s{k}": [1.0 + k / 100, 1.01 + k / 100] for k in range(n_sources)}
    rows = _rows(per)
    other = "collective | all_reduce | nvls-tree | >=64MiB | rdma-ib"
    rows += _rows({f"p{k}": [0.9 + k / 50] for k in range(10)} | (extra or {}), regime=other)
    return Table(rows)


def test_candidate_own_band_with_nine_sources_status_as_shipped():
    table = _regime_table(9)
    regime = Regime(FAMILY, REGIME, 16.0)
    cand, shipped = sourceband.candidate_trust(regime, table), trust_of(regime, table)
    assert cand.basis == "own" and cand.sources == 9 and cand.finite and cand.status == shipped.status
    assert cand.rho == sourceband.source_weighted_bounds(table.regimes[REGIME].rows)


def test_candidate_pools_a_regime_of_fewer_sources_and_widens_to_its_rows():
    table = _regime_table(4)
    regime = Regime(FAMILY, REGIME, 16.0)
    assert trust_of(regime, table).status != "unvalidated"        # the shipped rule: its own band (4 sources)
    cand = sourceband.candidate_trust(regime, table)
    assert cand.basis == "pool" and cand.status == "unvalidated" and cand.sources == 14 and cand.finite
    own = [r.rho for r in table.regimes[REGIME].rows]
    assert cand.rho[0] <= min(own) and cand.rho[1] >= max(own)


def test_candidate_without_nine_sources_anywhere_is_the_range_not_finite():
    rows = _rows({f"s{k}": [1.0 + k / 10] for k in range(5)})
    cand = sourceband.candidate_trust(Regime(FAMILY, REGIME, 16.0), Table(rows))
    assert not cand.finite and cand.rho == (1.0, 1.4)


def test_compare_scores_rows_outside_the_table():
    table = _regime_table(9)
    new = _rows({"new": [1.05, 5.0]})
    got = sourceband.compare(new, table)
    assert [c.candidate_covered for c in got] == [True, False] and [c.shipped_covered for c in got] == [True, False]
    assert sourceband.half_width_pct((0.9, 1.3)) == pytest.approx(20.0)


def test_leave_one_source_out_leaves_each_source_out():
    table = _regime_table(10)
    checks = [c for c in sourceband.leave_one_source_out(table, FAMILY) if c.row.regime == REGIME]
    assert len(checks) == 20
    for c in checks:   # 9 sources remain: the regime's own band, from the other sources' rows only
        rest = [r for r in table.regimes[REGIME].rows if r.source != c.row.source]
        assert c.candidate == sourceband.source_weighted_bounds(rest)
