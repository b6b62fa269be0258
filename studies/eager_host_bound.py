"""The host-bound axis of the eager error bands on the llm eager family alone (issue 44, session 38; a read-out, not a test).

Prints each held-out eager row's host share (llm/host_bound.py: the part of its predicted step that moves with a 10%
slower host) by runner mode, then the family's regimes without the axis (every row as if GPU-bound, the table before
session 38) and with it: rows, sources, 80% band, mean |error|, and the family's leave-one-source-out coverage
(trust/build.held_out_coverage on the family's residuals: a family's coverage depends on its own rows only, so this is
the shipped table's figure for it once the lead regenerates; `simcluster validate --error-bands` is the lead's).
Then a sensitivity check of the definition's threshold (HOST_BOUND_SHARE 0.5, fixed before this read-out; the rows'
residuals were public before it): the family's coverage and the FSDP / DDP / single bands at thresholds 0.4 and 0.6
beside 0.5. --shares also prints the multi-GPU rows' shares nearest the line.
    python studies/eager_host_bound.py [--shares]
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.llm.host_bound import HOST_BOUND_SHARE  # noqa: E402
from simcluster.trust.build import eager_held_out_rows, eager_residuals, held_out_coverage, regime_summary  # noqa: E402
from simcluster.trust.table import Table  # noqa: E402


def shares(rows: list[dict]) -> None:
    by = defaultdict(list)
    for r in rows:
        by[r["label"].split()[1] + (" ac " + r["label"].split()[3] if " ac " in r["label"] else "")].append(r["host_share"] or 0.0)
    print("host share by mode (sorted; host-bound at >= 0.5):")
    for mode, got in sorted(by.items()):
        print(f"  {mode:16s} {len(got):3d}  " + " ".join(f"{s:.2f}" for s in sorted(got)))


def nearest(rows: list[dict]) -> None:
    multi = [r["host_share"] or 0.0 for r in rows if r["gpus"] > 1]
    below = max((x for x in multi if x < HOST_BOUND_SHARE), default=None)
    above = min((x for x in multi if x >= HOST_BOUND_SHARE), default=None)
    print(f"multi-GPU rows: {len(multi)}, nearest the line {below:.2f} below and {above:.2f} at or above it")


THRESHOLDS = (0.4, HOST_BOUND_SHARE, 0.6)
SENSITIVE = ("FSDP", "DDP", "single")   # the modes whose rows lie on both sides of the line


def sensitivity(rows: list[dict]) -> None:
    print("== threshold sensitivity (host-bound at share >= t; the definition's t is 0.5)")
    for t in THRESHOLDS:
        tab = Table(eager_residuals([{**r, "host_bound": (r["host_share"] or 0.0) >= t} for r in rows]))
        cov = next(c for c in held_out_coverage(tab) if c.family == "llm eager")
        bands = [s for s in sorted(regime_summary(tab), key=lambda s: s["regime"])
                 if s["regime"].split(" | ")[2].removesuffix("+host-bound") in SENSITIVE]
        print(f"  t {t:.1f}: coverage {cov.coverage_pct:.1f}% (each source weighing one {cov.by_source_pct:.1f}%), median "
              f"half-width validated {cov.median_half_width_validated_pct:.1f}%")
        for b in bands:
            print(f"    {b['regime'].split(' | ')[2]:18s} {b['rows']:3d} rows  band {b['band_pct'][0]:+6.1f}..{b['band_pct'][1]:+6.1f}%"
                  f"  {'validated' if b['enough'] else 'too few'}")


def table(name: str, rows: list[dict]) -> None:
    t = Table(eager_residuals(rows))
    print(f"== {name}")
    for s in sorted(regime_summary(t), key=lambda s: s["regime"]):
        print(f"  {s['regime']:55s} {s['rows']:4d} rows {s['sources']:3d} src  band {s['band_pct'][0]:+6.1f}..{s['band_pct'][1]:+6.1f}%"
              f"  mean|err| {s['mean_abs_error_pct']:5.1f}%  {'validated' if s['enough'] else 'too few'}")
    for c in held_out_coverage(t):
        print(f"  coverage {c.family}: {c.rows} rows {c.sources} sources, source left out {c.coverage_pct:.1f}% (each source "
              f"weighing one {c.by_source_pct:.1f}%), median half-width {c.median_half_width_pct:.1f}% (validated "
              f"{c.median_half_width_validated_pct:.1f}%)")


def main(argv: list[str]) -> int:
    rows = eager_held_out_rows()   # the table's (since session 39 with the pphost set's 8)
    if argv:
        shares(rows)
        nearest(rows)
    table("without the axis (every row GPU-bound)", [{**r, "host_bound": False} for r in rows])
    table("with the host-bound axis", rows)
    sensitivity(rows)
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check(options=("--shares",))
    sys.exit(main(sys.argv[1:]))
