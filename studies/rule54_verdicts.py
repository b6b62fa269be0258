"""Session 54, rule54: the verdicts under the two rules registered in docs/models/trust-findings.md ("Session 54: rule54",
commit 31595913) before this print (a diagnostic; no model input, nothing fitted).

Rule A (trust/thin.MIN_OTHER_SOURCES): a family's "met" also needs >= 2 sources outside its largest source. Printed: each
published LLM family's held-out verdict (`validate --published llm --families`), its rows and sources outside the largest.
Rule B (trust/targets): a regime with its own band reads validated only where its held-out rows' mean |error| (the band
table's, |1/rho - 1|) is within its family's target, else extrapolated. Printed: every regime of the shipped error-band
table with its own band, its mean |error|, its family's target and its status by trust/band.trust_of.
    python studies/rule54_verdicts.py [--no-families]     (the families part predicts every published row: ~1 min)
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.trust.band import trust_of  # noqa: E402
from simcluster.trust.regime import Regime  # noqa: E402
from simcluster.trust.table import load_table  # noqa: E402
from simcluster.trust.targets import target_of  # noqa: E402


def regime_lines(table) -> list[str]:
    """Rule B on the table: one line per regime with its own band (a regime key's answer at no scale and no GPU)."""
    lines = ["# rule B: regimes with their own band (>= 5 rows, >= 3 sources): mean |error| against the family's target"]
    for key, g in table.regimes.items():
        if not g.enough:
            continue
        target = target_of(g.family, key)
        trust = trust_of(Regime(g.family, key, None), table)
        lines.append(f"{key:<70} {len(g.rows):>5} {len(g.sources):>3} {100 * g.mean_abs_error:>6.1f}% "
                     f"{'-' if target is None else f'{target.fraction:.0%}':>4}  {trust.status}")
    return lines


def family_lines() -> list[str]:
    """Rule A on the published LLM families: the held-out verdict and what lies outside the largest source."""
    from simcluster.reference.families import FamilyValidation
    from simcluster.reference.llm import validate_published_llm

    lines = ["# rule A: published LLM families, held out: rows, sources, rows / sources outside the largest, verdict"]
    for f in FamilyValidation(validate_published_llm(None)).families():
        s = f["held_out"]
        grouping = "; ".join(f"{g}: {d}" for g, d in s["verdict_on_grouping"].items())
        lines.append(f"{f['family']:<14} {s['rows']:>4} {len(s['sources']):>3} {s['rows_outside_largest_source']:>4} "
                     f"{s['sources_outside_largest_source']:>3}  {s['verdict']}" + (f" ({s['thin_why']})" if s["thin_why"] else "")
                     + (f" [on grouping: {grouping}]" if grouping else ""))
    return lines


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import study_args  # an unknown argument refused before the study runs

    argv = study_args.check(options=("--no-families",))
    out = regime_lines(load_table())
    if "--no-families" not in argv:
        out = family_lines() + [""] + out
    print("\n".join(out))
