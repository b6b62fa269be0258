"""Rule V of a one-GPU registered set's read-out, shared by validation/lab1x52.py and later sets: a regime's verdict
today (the residuals of the sets it held at registration) and with the set's rows added, and the rows that landed in
regimes the set did not aim at. validation/lab1x51.py (run in session 51, hashed in its runs/commit.txt) keeps its own
copy of these lines as it ran; the regime key, the verdict and its text are imported from it unchanged."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from validation.lab1x51 import figures_text, regime_key, verdict  # noqa: E402


def move_lines(regime: str, mine: list, live: list, today_sets: set[str], target_pct: float) -> dict[str, str]:
    """Rule V of `regime` (its mode): 'V regime' (the verdict today over `live`'s residuals of `today_sets` and with
    `mine` added: LIFTED / SINKS / STAYS / 'was -> now') and, where `live` holds 1-GPU rows of other sets (listed after
    the registration), 'V regime later' naming them (not counted)."""
    key = regime_key(regime)
    before = [r for r in live if r.regime == key and r.source in today_sets]
    later = sorted({r.source for r in live if r.regime == key and r.scale == 1 and r.source not in today_sets})
    was, now = verdict(before, key, target_pct), verdict(before + mine, key, target_pct)
    move = ("NO DATA" if was is None or now is None else
            "LIFTED" if was["word"] != "met" and now["word"] == "met" else
            "SINKS" if was["word"] != "NOT met" and now["word"] == "NOT met" else
            "STAYS" if was["word"] == now["word"] else f"{was['word']} -> {now['word']}")
    out = {f"V {regime}": (f"{move}: with these rows {figures_text(now) if now else 'no row'}; today "
                           f"{figures_text(was) if was else 'no row'}")}
    if later:
        out[f"V {regime} later"] = f"not counted (listed after this registration): {', '.join(later)}"
    return out


def other_line(mine: list, regimes: tuple[str, ...]) -> dict[str, str]:
    """'V other' where `mine` holds rows in regimes (registered flags) outside `regimes`, else nothing."""
    others = sorted({r.regime.split(' | ')[2] for r in mine} - set(regimes))
    return {"V other": f"rows in regimes this set did not aim at (registered flags): {', '.join(others)}"} if others else {}


if __name__ == "__main__":   # a library of read-out lines: run alone it takes no argument and prints what it is
    from simcluster import script_args

    script_args.check(usage="no argument (rule V's shared lines, imported by validation/lab1x52.py)")
    print(__doc__.splitlines()[0])
