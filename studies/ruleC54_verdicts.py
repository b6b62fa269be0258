"""mendC54 rule C's one print (docs/models/trust-findings.md, "Session 54: mendC54 rule C"; its text committed first,
6b6f0ac9): every regime of the shipped table with its own band whose rows meet the family's target, and whether
trust/thin reads its rows thin (then its answers read extrapolated). `PYTHONPATH=. python studies/ruleC54_verdicts.py`
writes the lines of studies/ruleC54_verdicts.txt to stdout."""

from pathlib import Path

from simcluster.trust.table import load_table
from simcluster.trust.targets import target_miss


def lines() -> list[str]:
    out = []
    for key, g in load_table().regimes.items():
        if g.enough and not target_miss(g.family, g.regime, g.mean_abs_error):
            out.append(f"{key}: {len(g.rows)} rows / {len(g.sources)} sources, {100 * g.mean_abs_error:.1f}%: "
                       f"{g.thin_miss() or 'validated (not thin)'}")
    return out


if __name__ == "__main__":
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import study_args  # an unknown argument refused before the study runs

    study_args.check()
    print("\n".join(lines()))
