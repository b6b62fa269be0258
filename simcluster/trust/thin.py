"""A "met" must not rest on one source (issue 44, house rule of session 50; docs/models/trust.md, "A met that rests on
one source is thin").

Rows that meet a target pooled (each row weighing once) can meet it because one source holds most of them: FSDP/ZeRO's
published family read met with 17 of its 18 held-out rows from KempnerForge. The rule, one for the published families
(reference/families) and the lab eager modes (studies/eager_lab_modes.py, trust/noise.FloorVerdict), asks three more
things of rows that meet the target; where any fails the verdict is **thin: one source carries it**, not met:

    each source once   the target holds with each source weighing once: the mean over sources of the source's mean
                       |error| (and, where the target has one, the mean of the sources' within shares) meets it
    other rows         at least MIN_OTHER_ROWS rows come from sources other than the largest, so that the rest can
                       contradict it
    other sources      those rows come from at least MIN_OTHER_SOURCES sources (session 54, rule54, registered in
                       docs/models/trust-findings.md before its print): a "met" needs >= 3 sources, the band table's
                       MIN_SOURCES for a validated regime, not one other document's rows counted many times

A source is a `source_group` counted once (a published family) or a registered set (a lab regime: one read-out, one
lease). The lab regimes keep their earlier variant too (cold review B49: mean |error| + 1 se of the rows over the
target), now a reason for the same verdict. Nothing here loosens a verdict: it only turns a met into thin.
"""

from __future__ import annotations

import math
import statistics

MIN_OTHER_ROWS = 3   # rows outside the largest source; fewer and that source alone carries the verdict
MIN_OTHER_SOURCES = 2   # sources outside the largest holding those rows (session 54); fewer and one other source does


def source_figures(per_source: dict[str, list[float]], target: float) -> dict:
    """From each source's |errors| (any unit, the target's): the mean of the sources' mean |error|, the mean of their
    shares within the target, and the rows and sources outside the largest source."""
    if not per_source:
        return {"each_source_once_mean": None, "each_source_once_share": None, "rows_outside_largest": 0,
                "sources_outside_largest": 0}
    sizes = [len(e) for e in per_source.values()]
    return {"each_source_once_mean": statistics.mean(statistics.mean(e) for e in per_source.values()),
            "each_source_once_share": statistics.mean(sum(x <= target for x in e) / len(e) for e in per_source.values()),
            "rows_outside_largest": sum(sizes) - max(sizes), "sources_outside_largest": len(sizes) - 1}


def thin_why(figures: dict, target_pct: float, share: float | None = None, plus_se_pct: float | None = None) -> str:
    """Why rows meeting the target pooled are thin, else "": figures from source_figures in percent (share: the
    target's within share, where it has one; plus_se_pct: the rows' mean |error| + 1 se, where the margin is asked)."""
    why = []
    outside = figures["rows_outside_largest"]
    if outside < MIN_OTHER_ROWS:
        why.append(f"{outside} row{'s' * (outside != 1)} outside the largest source, {MIN_OTHER_ROWS} needed")
    others = figures["sources_outside_largest"]
    if others < MIN_OTHER_SOURCES:
        why.append(f"{others} source{'s' * (others != 1)} outside the largest source, {MIN_OTHER_SOURCES} needed")
    once, once_share = figures["each_source_once_mean"], figures["each_source_once_share"]
    if once is not None and (once > target_pct or (share is not None and once_share < share)):
        why.append(f"each source once {once:.1f}%" + (f", {once_share:.0%} within" if share is not None else ""))
    if plus_se_pct is not None and plus_se_pct > target_pct:
        why.append(f"mean + 1 se {plus_se_pct:.1f}%" if math.isfinite(plus_se_pct) else "one row: no se")
    return "; ".join(why)


def lab_figures(per_set: dict[str, list[float]], target_pct: float) -> dict:
    """A lab regime's rows (each set's |errors| in percent): source_figures, the rows' mean |error| and its se (the
    rows' sd / sqrt(rows); inf for one row), and `why`: thin_why with the 1-se margin where the mean meets the target,
    else "" (a miss is not thin: trust/noise judges it)."""
    errs = [e for v in per_set.values() for e in v]
    mean = statistics.mean(errs)
    se = statistics.stdev(errs) / math.sqrt(len(errs)) if len(errs) > 1 else math.inf
    figures = source_figures(per_set, target_pct)
    why = thin_why(figures, target_pct, plus_se_pct=mean + se) if mean <= target_pct else ""
    return figures | {"mean": mean, "se": se, "why": why}
