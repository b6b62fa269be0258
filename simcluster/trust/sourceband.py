"""A candidate error band where each source weighs one (session 55, band55; OFF: no answer reads it, and the
import-linter contract "The product never imports the source-weighted candidate band" forbids the product to import it).

The shipped band (trust/table.conformal_bounds) is split-conformal over a regime's rows, each row weighing one, so a
source with many rows carries the tail (review C54 item 5: MIT Engaging's 9 rows hold the IB all_reduce band's upper
edge). The rows of one source share a cluster, a launch and a build: they are not exchangeable with a new cluster's rows;
the unit of exchangeability is the source.

The candidate (hierarchical split-conformal: each source weighs 1/(S+1), each of its n_k rows 1/n_k within it, the new
source's mass placed at infinity; Lee, Barber and Willett, "Distribution-free inference with hierarchical data",
arXiv 2306.06342, and Dunn, Wasserman and Ramdas, JASA 2023, arXiv 1809.07441, for the setting):

    F_k(r) = share of source k's rows with rho <= r,  G_k(r) = share with rho >= r,  t = (1 - LEVEL) / 2 = 0.1
    upper = the smallest row rho r with  sum_k F_k(r) >= (1 - t) (S + 1)
    lower = the largest row rho r with   sum_k G_k(r) >= (1 - t) (S + 1)

Promise: for a row drawn at random from a NEW source whose rows are exchangeable at the source level with the S sources
behind the band (sources drawn from one population of clusters and setups, rows exchangeable within a source), each edge
is crossed with probability <= t, so the band holds the row with probability >= 1 - 2t = 80%, marginally over sources
(not per source). The argument: with the new source's rows in, the (1 - t) quantile Q of the measure that gives each of
the S + 1 sources 1/(S + 1) is symmetric in the sources, so E[share of the new source's rows above Q] = E[mass above Q] <= t;
putting the new source's mass at +infinity only raises the quantile. With one row per source it is the shipped rule's
order statistic (ceil(0.9 (S + 1))-th of S).

Minimum sources: sum_k F_k <= S, so an edge exists only where (1 - t)(S + 1) <= S, i.e. S >= SW_MIN_SOURCES = 9 at 80%.
A regime with fewer sources gets no band of its own: its answer reads unvalidated and takes its pool's source-weighted
band (the family's rows over its link where those come from >= 9 sources, else the family's), widened to the regime's
own rows' range as the shipped pooled band is (band.pooled_band); where the pool too has fewer than 9 sources there is no
finite 80% bound and the candidate gives the pool's whole range, marked `finite` False (no coverage promised).

Status otherwise as the shipped rule decides it (band.trust_of: the family's target, the thin rule, the axis, the GPU, the
noise verdict); only the band and the source minimum change. Its adoption is registered in
calibration/rule-band55-2026-12-01 (validation/band55.py), judged only on sources whose files were merged into main after
the rule's commit; the registration freezes this file by its sha256 (REGISTERED REVISION 2): an edit makes the read-out
print NOT JUDGED.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from simcluster.trust.table import LEVEL, Residual, Table, link_of


def min_sources(level: float = LEVEL) -> int:
    """The fewest sources with a finite source-weighted edge at `level`: the smallest S with (1 - t)(S + 1) <= S."""
    tail = round((1 - level) / 2, 9)
    return math.ceil(round((1 - tail) / tail, 9))


SW_MIN_SOURCES = min_sources()   # 9 at 80%


def _by_source(rows: Sequence[Residual]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for r in rows:
        out.setdefault(r.source, []).append(r.rho)
    return out


def source_weighted_bounds(rows: Sequence[Residual], level: float = LEVEL) -> tuple[float, float] | None:
    """The candidate's (lower, upper) rho of `rows` (module docstring); None where they come from fewer sources than
    min_sources(level) (no finite bound)."""
    per = _by_source(rows)
    s = len(per)
    if not rows or s < min_sources(level):
        return None
    need = round((1 - round((1 - level) / 2, 9)) * (s + 1), 9)
    values = sorted({r.rho for r in rows})

    def mass(r: float, below: bool) -> float:
        return round(sum(sum((x <= r) if below else (x >= r) for x in xs) / len(xs) for xs in per.values()), 9)

    upper = next(r for r in values if mass(r, True) >= need)
    lower = next(r for r in reversed(values) if mass(r, False) >= need)
    return lower, upper


@dataclass(frozen=True)
class CandidateBand:
    """The candidate's band for one answer: rho (lower, upper) as a time; the status it reads; where the band is from
    ('own': its regime's rows; 'pool': its pool's rows); the rows and sources behind it; finite False where the pool has
    fewer than SW_MIN_SOURCES sources (the pool's whole range, no promise)."""

    rho: tuple[float, float]
    status: str
    basis: str
    rows: int
    sources: int
    finite: bool = True


def pool_rows(table: Table, family: str, regime: str) -> tuple[Residual, ...]:
    """The candidate's pool for a regime with too few sources: the family's rows over the regime's link (link_of) where
    they come from >= SW_MIN_SOURCES sources, else every row of the family."""
    link = link_of(regime)
    if link:
        over = table.family_rows(family, link)
        if len({r.source for r in over}) >= SW_MIN_SOURCES:
            return over
    return table.family_rows(family)


def candidate_trust(regime, table: Table) -> CandidateBand | None:
    """The candidate's band for an answer of `regime` (trust/regime.Regime) from `table`; None where the shipped rule
    gives it no band either (never checked, or a machine-marked shape). The shipped rule (band.trust_of) is read, not
    changed."""
    from simcluster.trust.band import pooled_band, trust_of

    shipped = trust_of(regime, table)
    if shipped.rho is None:
        return None
    own = table.regimes.get(regime.key)
    own_range = (min(r.rho for r in own.rows), max(r.rho for r in own.rows)) if own is not None else None
    if own is not None and own.enough and len(own.sources) >= SW_MIN_SOURCES:
        band = source_weighted_bounds(own.rows)
        if shipped.noise_limited:   # as the shipped rule: a regime at its noise floor keeps all its rows' range
            band = pooled_band(band, own_range)
        return CandidateBand(band, shipped.status, "own", len(own.rows), len(own.sources))
    pool = pool_rows(table, regime.family, regime.key)
    band = source_weighted_bounds(pool)
    finite = band is not None
    if band is None:
        band = (min(r.rho for r in pool), max(r.rho for r in pool))
    return CandidateBand(pooled_band(band, own_range), "unvalidated", "pool", len(pool), len({r.source for r in pool}), finite)


@dataclass(frozen=True)
class Compared:
    """One row against the band each rule gives it from rows that do not include its source."""

    row: Residual
    shipped: tuple[float, float]
    shipped_status: str
    candidate: tuple[float, float]
    candidate_status: str
    candidate_finite: bool

    @staticmethod
    def inside(band: tuple[float, float], rho: float) -> bool:
        return band[0] <= rho <= band[1]

    @property
    def shipped_covered(self) -> bool:
        return self.inside(self.shipped, self.row.rho)

    @property
    def candidate_covered(self) -> bool:
        return self.inside(self.candidate, self.row.rho)

    def of(self, rule: str) -> tuple[tuple[float, float], str, bool]:
        """(band, status, covered) by `rule`: 'shipped' or 'candidate'."""
        if rule == "shipped":
            return self.shipped, self.shipped_status, self.shipped_covered
        return self.candidate, self.candidate_status, self.candidate_covered


def half_width_pct(band: tuple[float, float]) -> float:
    """A band's half-width as a percentage of the answer: (upper - lower) / 2 x 100, as build.held_out_coverage's."""
    return (band[1] - band[0]) / 2 * 100


def compare(rows: Sequence[Residual], before: Table) -> list[Compared]:
    """Each of `rows` (none of whose sources is in `before`) against the shipped rule's and the candidate's band from
    `before`; rows the shipped rule gives no band are left out."""
    from simcluster.trust.band import trust_of
    from simcluster.trust.regime import Regime

    out = []
    for row in rows:
        regime = Regime(row.family, row.regime, row.scale, gpu=row.gpu)
        shipped = trust_of(regime, before)
        cand = candidate_trust(regime, before)
        if shipped.rho is None or cand is None:
            continue
        out.append(Compared(row, shipped.rho, shipped.status, cand.rho, cand.status, cand.finite))
    return out


def leave_one_source_out(table: Table, family: str | None = None) -> list[Compared]:
    """compare() with each source left out in turn (as build.leave_one_source_out checks the shipped rule)."""
    rows = [r for r in table.residuals if family is None or r.family == family]
    out = []
    for source in sorted({r.source for r in rows}):
        out += compare([r for r in rows if r.source == source], Table([r for r in rows if r.source != source]))
    return out
