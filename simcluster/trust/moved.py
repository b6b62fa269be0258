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

    @property
    def earlier_model(self) -> bool:
        """More than half of the band's rows are registered rows today's model has moved on."""
        return self.moved * 2 > self.rows

    def to_json(self) -> dict:
        return {"rows": self.rows, "registered_rows": self.registered, "moved_rows": self.moved,
                "threshold_pct": MOVE_THRESHOLD * 100,
                "median_move_pct": None if self.median_move is None else round(self.median_move * 100, 1),
                "move_range_pct": None if self.move_range is None else [round(x * 100, 1) for x in self.move_range],
                "registered_at": dict(self.commits), "band_measured_on_earlier_model": self.earlier_model}

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
    return Moves(len(rows), len(reg), sum(round(abs(r.moved - 1), 9) > threshold for r in reg),
                 statistics.median(r.moved - 1 for r in reg) if reg else None,
                 tuple(sorted(commits.items(), key=lambda kv: (-kv[1], kv[0]))),
                 (min(r.moved for r in reg) - 1, max(r.moved for r in reg) - 1) if reg else None)
