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
are mostly an earlier model's, and the answer says so (Trust.moved_text).
"""

from __future__ import annotations

import re
import statistics
import subprocess
from dataclasses import dataclass
from pathlib import Path

MOVE_THRESHOLD = 0.02
COMMIT = re.compile(r"(?:registered_at_commit:|model at|\"commit\":)\s*\"?([0-9a-f]{7,40})")


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
        (its step -0.9..+25.2% of the registered one, median +5.0%; registered at 6bacb939 (14 rows), ...): read on today's
        step the band is off by about as much'; '' where the band is not."""
        if not self.earlier_model:
            return ""
        lo, hi = (x * 100 for x in self.move_range)
        at = ", ".join(f"{c} ({n} row{'s' * (n != 1)})" for c, n in self.commits)
        return (f"band measured on an earlier model: today's model moved beyond +-{MOVE_THRESHOLD:.0%} on {self.moved} of "
                f"its {self.registered} registered rows since (its step {lo:+.1f}..{hi:+.1f}% of the registered one, median "
                f"{self.median_move * 100:+.1f}%; registered at {at}): read on today's step the band is off by about as much")


def moves_of(rows) -> Moves:
    """Moves of a band's rows (trust/table.Residual: `moved` None for a row predicted by today's model)."""
    reg = [r for r in rows if r.moved is not None]
    commits: dict[str, int] = {}
    for r in reg:
        commits[r.registered_at or "?"] = commits.get(r.registered_at or "?", 0) + 1
    return Moves(len(rows), len(reg), sum(round(abs(r.moved - 1), 9) > MOVE_THRESHOLD for r in reg),
                 statistics.median(r.moved - 1 for r in reg) if reg else None,
                 tuple(sorted(commits.items(), key=lambda kv: (-kv[1], kv[0]))),
                 (min(r.moved for r in reg) - 1, max(r.moved for r in reg) - 1) if reg else None)


def registering_commit(folder: Path) -> str:
    """The commit a registered set's predictions were made at (8 hex digits): the one its registered.yaml names
    (`registered_at_commit:` or a header 'model at SHA'), else the first commit that added its registered file
    (registered.yaml / .json, or the compile set's readout-registered.json) by git; '' when none is found."""
    files = [folder / n for n in ("registered.yaml", "registered.json", "readout-registered.json") if (folder / n).is_file()]
    for f in files:
        m = COMMIT.search(f.read_text(errors="replace")[:2000])
        if m:
            return m.group(1)[:8]
    for f in files:
        try:
            out = subprocess.run(["git", "log", "--diff-filter=A", "--format=%H", "--", f.name], cwd=folder,
                                 capture_output=True, text=True, timeout=30).stdout.split()
        except (OSError, subprocess.SubprocessError):
            out = []
        if out:
            return out[-1][:8]
    return ""
