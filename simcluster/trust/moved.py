"""How far the model has moved since a band's registered rows were predicted (issues 41 / 44).

A registered lab row enters its band at the step registered before it ran (heldout/: moe_lab, eager_regimes,
eager_registered, eager_pphost, eager_cudnnstep): held out, but a residual of the model of its registration day. Beside
it the row carries today's prediction of the same run (same layout, same host fits as the registration), as
move = today / registered (Residual.moved). The residual is never changed: the move only says whether the band
describes today's model.

A row has **moved** when |move - 1| > MOVE_THRESHOLD (2%). Why 2%: the move is model against model (no measurement
noise), and it matters only where it is a visible part of the band: 2% is a fifth of the llm eager family's median
half-width (10.8%) and a twentieth of the local spec's (38.4%); it lies above the product's drift that the pphost set
counted as the same model (<= 0.8%, tests/test_eager_pphost_set.py) and above the GPU-bound eager steps' spread between
processes (0.1-0.3%, calibration/h200x2-llm-eager-noise-2026-11-29), so a smaller move could not be told from noise on
the rows themselves. A band is **measured on an earlier model** when more than half of its rows (the regime's, or the
family's pooled rows for an unvalidated regime) are registered rows that have moved: then the band's spread and centre
are mostly an earlier model's, and the answer says so (Trust.moved_text). Both are model against model and flip where
a band's moves sit near 2%: docs/models/trust.md, "Sensitivity of the moved flag", prints them at 1/2/3/5%
(`python -m simcluster.trust.report`; docs/accuracy.md). Pure: the registering commit a row carries is read by trust/build.set_registered_at.

**Registered rows today's model still prices within 2%** (session 42, cold read D 41 5; named so by the cold read of
session 42): the registered rows that have not moved (today's step within MOVE_THRESHOLD of the registered one) are
held-out residuals of today's model too, read with today's step: rho_today = measured / today = rho / move. Every band
with registered rows, flagged or not, says how many there are, from how many sources, their mean |error| (today's
predicted / measured - 1) and how many of their rho_today lie inside the answer's band (beside how many of all its
rows do: they are among the rows the band was cut from, so the comparison, not the count alone, says whether today's
model sits as the band does): Moves.still_priced / still_priced_text (JSON `still_priced_by_todays_model`). The flag keeps
counting rows, so it falls when enough of them are today's: docs/models/trust.md, "Why the flag counts rows", says
why not sources or sets.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

MOVE_THRESHOLD = 0.02
SENSITIVITY = (0.01, 0.02, 0.03, 0.05)   # the thresholds docs/accuracy.md's sensitivity table reads the flag at


@dataclass(frozen=True)
class Moves:
    """The registered rows among a band's rows and how far today's model moved on them."""

    rows: int                         # the band's rows
    registered: int                   # of those, rows with a registered prediction and today's beside it
    moved: int                        # of those, |today / registered - 1| > MOVE_THRESHOLD
    median_move: float | None         # median of today / registered - 1 over the registered rows
    commits: tuple[tuple[str, int], ...] = ()   # registering commit -> registered rows, most rows first
    move_range: tuple[float, float] | None = None   # lowest and highest today / registered - 1
    rhos: tuple[float, ...] = ()      # every band row's rho (measured / predicted as a time)
    today: tuple[tuple[str, float], ...] = ()   # (source, measured / today's step) of the registered rows not moved

    @property
    def earlier_model(self) -> bool:
        """More than half of the band's rows are registered rows today's model has moved on."""
        return self.moved * 2 > self.rows

    def to_json(self, band: tuple[float, float] | None = None) -> dict:
        """The moves; with the answer's `band` (rho low, high) the still-priced rows' coverage by it (still_priced)."""
        return {"rows": self.rows, "registered_rows": self.registered, "moved_rows": self.moved,
                "threshold_pct": MOVE_THRESHOLD * 100,
                "median_move_pct": None if self.median_move is None else round(self.median_move * 100, 1),
                "move_range_pct": None if self.move_range is None else [round(x * 100, 1) for x in self.move_range],
                "registered_at": dict(self.commits), "band_measured_on_earlier_model": self.earlier_model,
                "still_priced_by_todays_model": self.still_priced(band)}

    def still_priced(self, band: tuple[float, float] | None = None) -> dict:
        """The registered rows today's model still prices within the threshold of their registered step: rows, sources,
        mean |today's predicted / measured - 1| (%), and with `band` how many of them (their measured / today's step)
        and of all the band's rows lie inside."""
        rhos = [rho for _, rho in self.today]
        out = {"rows": len(rhos), "sources": len({s for s, _ in self.today}),
               "mean_abs_error_pct": round(100 * statistics.fmean(abs(1 / r - 1) for r in rhos), 1) if rhos else None}
        if band is not None:
            out["inside_band"] = sum(_inside(r, band) for r in rhos)
            out["band_rows_inside"] = [sum(_inside(r, band) for r in self.rhos), len(self.rhos)]
        return out

    def still_priced_text(self, band: tuple[float, float] | None = None) -> str:
        """'registered rows today's model still prices within +-2%: 10 (2 sources): mean |error| 9.3% (today's step), 9 of
        10 inside the band (all its rows: 32 of 36)'; '' without registered rows. Where the band is
        not flagged but some rows moved, it first says how many (the flag's count: both sides of it)."""
        if not self.registered:
            return ""
        moved = ("" if self.earlier_model or not self.moved else
                 f"today's model moved beyond +-{MOVE_THRESHOLD:.0%} on {self.moved} of its {self.rows} rows since "
                 "registration (not more than half: not flagged); ")
        r = self.still_priced(band)
        if not r["rows"]:
            return (f"{moved}registered rows today's model still prices within +-{MOVE_THRESHOLD:.0%}: none "
                    f"({self.registered} of {self.registered} moved)")
        n = r["rows"]
        inside = "" if band is None else (f", {r['inside_band']} of {n} inside the band (all its rows: "
                                          f"{r['band_rows_inside'][0]} of {r['band_rows_inside'][1]})")
        return (f"{moved}registered rows today's model still prices within +-{MOVE_THRESHOLD:.0%}: {n} "
                f"({r['sources']} source{'s' * (r['sources'] != 1)}): mean |error| {r['mean_abs_error_pct']:.1f}% "
                f"(today's step){inside}")

    def text(self) -> str:
        """'band measured on an earlier model: today's model moved beyond +-2% on 19 of its 30 registered rows since
        (its step -0.9..+25.2% of the registered one, median +5.0%; registered at 6bacb939 (14 rows), ...): today's step is a
        median +5.0% of the registered one, so measured / today's step reads about 4.8% lower than this band' (the band is
        of measured / registered; 1 / (1 + median) - 1 says how far and which way); '' where the band is not."""
        if not self.earlier_model:
            return ""
        lo, hi = (x * 100 for x in self.move_range)
        at = ", ".join(f"{c} ({n} row{'s' * (n != 1)})" for c, n in self.commits)
        return (f"band measured on an earlier model: today's model moved beyond +-{MOVE_THRESHOLD:.0%} on {self.moved} of "
                f"its {self.registered} registered rows since (its step {lo:+.1f}..{hi:+.1f}% of the registered one, median "
                f"{self.median_move * 100:+.1f}%; registered at {at}): {self.direction()}")

    def direction(self) -> str:
        """Which way the band is off for a step priced by today's model: the band is of measured / registered, and
        measured / today = (measured / registered) / (1 + median move)."""
        shift = (1 / (1 + self.median_move) - 1) * 100
        way = "lower" if shift < 0 else "higher"
        return (f"today's step is a median {self.median_move * 100:+.1f}% of the registered one, so measured / today's "
                f"step reads about {abs(shift):.1f}% {way} than this band")


def moves_of(rows, threshold: float = MOVE_THRESHOLD) -> Moves:
    """Moves of a band's rows (trust/table.Residual: `moved` None for a row predicted by today's model); a row moved
    beyond `threshold` (MOVE_THRESHOLD, or another for the sensitivity table) counts as moved."""
    reg = [r for r in rows if r.moved is not None]
    commits: dict[str, int] = {}
    for r in reg:
        commits[r.registered_at or "?"] = commits.get(r.registered_at or "?", 0) + 1
    today = tuple((r.source, r.rho / r.moved) for r in reg if not _moved(r, threshold))   # measured / today's step
    return Moves(len(rows), len(reg), len(reg) - len(today),
                 statistics.median(r.moved - 1 for r in reg) if reg else None,
                 tuple(sorted(commits.items(), key=lambda kv: (-kv[1], kv[0]))),
                 (min(r.moved for r in reg) - 1, max(r.moved for r in reg) - 1) if reg else None,
                 tuple(r.rho for r in rows), today)


def _moved(row, threshold: float) -> bool:
    return round(abs(row.moved - 1), 9) > threshold


def _inside(rho: float, band: tuple[float, float]) -> bool:
    return band[0] <= rho <= band[1]
