"""The error-band table: per regime, the held-out residuals validation found, and the 80% band they give.

A residual is rho = measured / predicted as a time (a rate's ratio inverted: rho > 1, the truth is slower than the
answer). Only rows the model was not fitted on enter (a published row marked held out; a machine's collectives
predicted from a kind card fitted on the other machines and that machine's 30-second probe).

The 80% band of a regime with n rows is the split-conformal interval of its residuals: the k-th smallest and the
k'-th smallest rho, k = floor(0.1 (n + 1)), k' = ceil(0.9 (n + 1)) (1-based, clamped to [1, n]): for rows
exchangeable with the regime's own, the truth falls inside with probability >= 80% (at n < 9 the band is the
rows' whole range). A time T gets [T rho_k, T rho_k']; a rate R gets [R / rho_k', R / rho_k].

Status of an answer: `validated` when its regime has >= MIN_ROWS rows from >= MIN_SOURCES sources, its scale (GPUs) lies in
the rows' range and its rows' mean |error| is within its family's target (trust/targets.py, session 54) and not thin
(trust/thin.py on its rows: RegimeRows.thin_miss, mendC54's rule C); `extrapolated`
when the regime has them but the scale is outside (the axis is named) or its rows miss the target or are thin (said); `unvalidated`
when the regime has fewer rows: its band then comes from its pool (Table.pool_link: a collective regime's rows over the
same link where they are enough for a band, else every row of its family) pooled, and says so.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from pathlib import Path

from simcluster.errors import SimclusterError
from simcluster.trust.moved import Moves, moves_of
from simcluster.trust.regime import gpu_model
from simcluster.trust.targets import target_miss, target_of
from simcluster.trust.thin import source_figures, thin_why

TABLE = Path(__file__).with_name("error_bands.json")
MIN_ROWS = 5
MIN_SOURCES = 3
LEVEL = 0.80


@dataclass(frozen=True)
class Residual:
    family: str
    regime: str
    source: str            # the unit held out together (a published file, a machine)
    row: str               # which row of the source
    scale: float
    rho: float             # measured / predicted, as a time
    gpu: str = ""          # the GPU model the row ran on (trust/regime.gpu_model: 'H200'); '' where the row names none
    moved: float | None = None   # a registered row: today's prediction / the registered one (trust/moved.py); None: today's
    registered_at: str = ""      # a registered row: the commit its prediction was registered at

    @property
    def today_error(self) -> float:
        """Today's model's relative error on the row as a time, + = predicted slower: today's prediction / measured - 1
        (a registered row at today's prediction, `moved` / rho - 1; otherwise 1 / rho - 1)."""
        return (self.moved if self.moved is not None else 1.0) / self.rho - 1

    def to_json(self) -> dict:
        return {"family": self.family, "regime": self.regime, "source": self.source, "row": self.row,
                "scale": self.scale, "rho": round(self.rho, 6), **({"gpu": self.gpu} if self.gpu else {}),
                **({"today_over_registered": round(self.moved, 6), "registered_at": self.registered_at}
                   if self.moved is not None else {})}


def link_of(regime: str) -> str:
    """A collective regime's link, its key's last field ('rdma-efa', 'rdma-ib', 'nvlink-h200': trust/regime.collective_regime);
    '' for any other regime (their keys name no link)."""
    return regime.rsplit(" | ", 1)[-1] if regime.startswith("collective |") else ""


EDGE_MIN_ROWS = 3      # an edge's tail named where it holds at least this many rows ...
EDGE_MAX_SOURCES = 2   # ... from at most this many sources (review C54 item 4)


def band_edges(rows, band: tuple[float, float]) -> tuple[tuple[str, tuple[tuple[str, int], ...]], ...]:
    """Where a band's edge rests on one or two sources: per side ('lower', 'upper'), the sources of the rows at or beyond
    that edge (rows each, most first), named only where those rows are >= EDGE_MIN_ROWS from <= EDGE_MAX_SOURCES sources
    (one or two rows at an edge are one source by construction and say nothing). So an answer can tell one cluster's
    tail (e.g. one-process-per-node runs, fabric-findings "Session 54: fabpub54") from a model miss. Display only."""
    out = []
    for side, tail in (("lower", [r for r in rows if r.rho <= band[0]]), ("upper", [r for r in rows if r.rho >= band[1]])):
        counts: dict[str, int] = {}
        for r in tail:
            counts[r.source] = counts.get(r.source, 0) + 1
        if len(tail) >= EDGE_MIN_ROWS and len(counts) <= EDGE_MAX_SOURCES:
            out.append((side, tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))))
    return tuple(out)


def edges_text(edges) -> str:
    """'upper edge: rows of mit-orcd-engaging-b200 (9), chris-nccl-notes (1) at or beyond it'; '' where none named."""
    return "; ".join(f"{side} edge: rows of " + ", ".join(f"{s} ({n})" for s, n in by) + " at or beyond it"
                     for side, by in edges)


def gpu_counts(rows) -> dict[str, int]:
    """Rows per GPU model, most rows first ('' : rows that name none)."""
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.gpu] = counts.get(r.gpu, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def conformal_bounds(rhos: list[float], level: float = LEVEL) -> tuple[float, float]:
    """The split-conformal (k, k') order statistics of `rhos` for a two-sided `level` interval."""
    if not rhos:
        raise ValueError("no residuals")
    r = sorted(rhos)
    n = len(r)
    tail = round((1 - level) / 2, 9)            # 0.1, not 0.0999...: floor(0.1 x 20) is 2
    lo = min(n, max(1, math.floor(round(tail * (n + 1), 9))))
    hi = min(n, max(1, math.ceil(round((1 - tail) * (n + 1), 9))))
    return r[lo - 1], r[hi - 1]


@dataclass(frozen=True)
class RegimeRows:
    regime: str
    family: str
    rows: tuple[Residual, ...]

    @property
    def sources(self) -> tuple[str, ...]:
        return tuple(sorted({r.source for r in self.rows}))

    @property
    def scale_range(self) -> tuple[float, float]:
        return min(r.scale for r in self.rows), max(r.scale for r in self.rows)

    @property
    def enough(self) -> bool:
        return len(self.rows) >= MIN_ROWS and len(self.sources) >= MIN_SOURCES

    @property
    def gpus(self) -> dict[str, int]:
        """Rows per GPU model the regime's rows ran on (gpu_counts)."""
        return gpu_counts(self.rows)

    def bounds(self) -> tuple[float, float]:
        return conformal_bounds([r.rho for r in self.rows])

    def thin_miss(self) -> str:
        """Rule C (mendC54, trust-findings "Session 54: mendC54 rule C"): where the rows meet the family's target but
        trust/thin.thin_why finds them thin (each source once, >= 3 rows from >= 2 sources outside the largest), why
        ('thin: 2 rows outside the largest source, 3 needed (trust/thin)'); else ''."""
        target = target_of(self.family, self.regime)
        if target is None or self.mean_abs_error > target.fraction:
            return ""
        per_source: dict[str, list[float]] = {}
        for r in self.rows:
            per_source.setdefault(r.source, []).append(100 * abs(1 / r.rho - 1))
        why = thin_why(source_figures(per_source, 100 * target.fraction), 100 * target.fraction)
        return f"thin: {why} (trust/thin)" if why else ""

    def misses(self) -> tuple[str, str]:
        """Why rows enough for a band may still not read validated: (their mean |error| over the family's target,
        trust/targets; thin by trust/thin, rule C), '' each where it holds. The one decision trust/band.trust_of and the
        accuracy page's status column both read."""
        return target_miss(self.family, self.regime, self.mean_abs_error), self.thin_miss()

    @functools.cached_property
    def mean_abs_error(self) -> float:
        """The rows' mean |error| as a fraction, each row once: |1/rho - 1| = |predicted time / measured time - 1|
        (the "mean abs error" of docs/accuracy.md; what trust/targets judges against the family's target)."""
        return sum(abs(1 / r.rho - 1) for r in self.rows) / len(self.rows)

    @functools.cached_property
    def moves(self) -> Moves:
        """Today's model's move on the regime's registered rows (trust/moved.py)."""
        return moves_of(self.rows)


class Table:
    """The residuals of every regime, read from error_bands.json (or built from validation results)."""

    def __init__(self, residuals: list[Residual], built_from: dict | None = None):
        self.residuals = residuals
        self.built_from = built_from or {}
        groups: dict[str, list[Residual]] = {}
        for r in residuals:
            groups.setdefault(r.regime, []).append(r)
        self.regimes = {k: RegimeRows(k, v[0].family, tuple(v)) for k, v in sorted(groups.items())}
        families: dict[str, list[Residual]] = {}
        for r in residuals:
            families.setdefault(r.family, []).append(r)
        self._families = {k: tuple(v) for k, v in families.items()}

    def family_rows(self, family: str, link: str = "") -> tuple[Residual, ...]:
        """The family's held-out rows; with `link`, those of its regimes over that link (link_of)."""
        rows = self._families.get(family, ())
        return rows if not link else tuple(r for r in rows if link_of(r.regime) == link)

    def pool_link(self, family: str, regime: str) -> str:
        """Where an unvalidated regime's band is pooled from: its link (link_of) where the family's rows over that link
        are enough for a band of their own (MIN_ROWS from MIN_SOURCES), else '' (every row of the family). An EFA
        answer's band from EFA rows, not from InfiniBand systems' (docs/models/trust.md, "Unvalidated regimes")."""
        link = link_of(regime)
        rows = self.family_rows(family, link) if link else ()
        return link if len(rows) >= MIN_ROWS and len({r.source for r in rows}) >= MIN_SOURCES else ""

    @functools.lru_cache(maxsize=64)  # noqa: B019 (a table lives as long as the process: load_table caches it)
    def pooled_bounds(self, family: str, link: str = "") -> tuple[float, float] | None:
        """The pooled band of the family's rows (over `link`: pool_link), computed once per table."""
        rows = self.family_rows(family, link)
        return conformal_bounds([r.rho for r in rows]) if rows else None

    @functools.lru_cache(maxsize=64)  # noqa: B019 (as pooled_bounds)
    def family_moves(self, family: str, link: str = "") -> Moves:
        """Today's model's move on the pooled rows' registered rows: the pooled band's (trust/moved.py)."""
        return moves_of(self.family_rows(family, link))

    def to_json(self) -> dict:
        return {"what": "held-out residuals per regime (simcluster/trust/table.py); rho = measured / predicted as a time",
                "regenerate": "simcluster validate --error-bands", "built_from": self.built_from,
                "gpus_by_regime": {k: g.gpus for k, g in self.regimes.items()},   # derived from the rows (read back: ignored)
                # derived likewise: per regime with registered rows, today's model's move on them (trust/moved.py)
                "model_moves_by_regime": {k: g.moves.to_json(g.bounds()) for k, g in self.regimes.items() if g.moves.registered},
                "rows": [r.to_json() for r in self.residuals]}

    @classmethod
    def from_json(cls, doc: dict, where: str) -> Table:
        try:
            rows = [Residual(str(r["family"]), str(r["regime"]), str(r["source"]), str(r["row"]), float(r["scale"]),
                             float(r["rho"]), _gpu(r.get("gpu"), i), _moved(r.get("today_over_registered"), i),
                             str(r.get("registered_at") or "")) for i, r in enumerate(doc["rows"])]
        except (KeyError, TypeError, ValueError) as exc:
            raise SimclusterError(f"not an error-band table ({type(exc).__name__}: {exc})", where=where) from None
        if any(not (math.isfinite(r.rho) and r.rho > 0 and math.isfinite(r.scale)) for r in rows):
            raise SimclusterError("an error-band row has a non-finite or non-positive value", where=where)
        return cls(rows, doc.get("built_from") or {})


def _gpu(value, i: int) -> str:
    """A row's `gpu` as gpu_model names it ('h200' -> 'H200'); absent or empty: ''; anything naming no GPU (a list, 'foo')
    is refused (ValueError, reported as the table's one-line error)."""
    if value is None or value == "":
        return ""
    model = gpu_model(value) if isinstance(value, str) else ""
    if not model:
        raise ValueError(f"rows[{i}].gpu: {value!r} names no GPU model (A100, H100, H200, B200, GB200, ...)")
    return model


def _moved(value, i: int) -> float | None:
    """A row's `today_over_registered`: absent or null, None (today's model predicted the row); else a positive finite
    number (ValueError otherwise, reported as the table's one-line error)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and value > 0):
        raise ValueError(f"rows[{i}].today_over_registered: {value!r} is not a positive number")
    return float(value)


@functools.lru_cache(maxsize=4)
def load_table(path: str | None = None) -> Table:
    """The shipped table (read once per process), or another one's path."""
    file = Path(path) if path else TABLE
    if not file.is_file():
        return Table([])
    try:
        doc = json.loads(file.read_text())
    except (OSError, ValueError) as exc:
        raise SimclusterError(f"cannot read the error-band table ({exc})", where=str(file)) from None
    return Table.from_json(doc, str(file))
