"""DEVELOPMENT print of the source-weighted candidate band (simcluster/trust/sourceband.py, OFF) on today's rows, beside
the shipped row-weighted rule (session 55, band55). Printed AFTER the candidate's adoption rule was registered
(calibration/rule-band55-2026-12-01, REGISTERED commit 6d2953b3): every source here has been seen, so nothing printed
here judges the candidate -- only sources whose files are merged into main after the registration do (validation/band55.py).

Reads the shipped error-band table (or --table PATH). Prints:
1. per family, every row checked against the band each rule gives it with its source left out (the shipped rule's
   check, trust/build.leave_one_source_out; the candidate's, sourceband.leave_one_source_out): coverage of all rows
   (each row once, and each source weighing one), coverage of the rows whose answer reads validated, and the median
   half-widths (all / validated);
2. per regime with its own shipped band, the band each rule gives from all its rows (no source left out): its sources,
   the shipped band, and the candidate's (own where >= 9 sources, else its pool's, widened to the regime's rows).

    python studies/band55_dev.py [--table PATH]
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.script_args import ArgumentParser  # noqa: E402
from simcluster.trust import sourceband  # noqa: E402
from simcluster.trust.table import Table, load_table  # noqa: E402


def _by_source_pct(flags: list[tuple[str, bool]]) -> float | None:
    by: dict[str, list[bool]] = {}
    for source, ok in flags:
        by.setdefault(source, []).append(ok)
    return 100 * statistics.fmean(sum(v) / len(v) for v in by.values()) if by else None


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.1f}%"


def _med(xs: list[float]) -> str:
    return "n/a" if not xs else f"{statistics.median(xs):.1f}%"


def family_lines(checks: list[sourceband.Compared]) -> list[str]:
    """Section 1's rows, one per family and rule."""
    out = ["| family | rule | rows checked | covered | each source once | validated answers: covered | median half-width "
           "all / validated |", "| --- | --- | ---: | ---: | ---: | ---: | --- |"]
    for family in sorted({c.row.family for c in checks}):
        fam = [c for c in checks if c.row.family == family]
        for rule in ("shipped", "candidate"):
            got = [(c.row.source, *c.of(rule)) for c in fam]
            val = [g for g in got if g[2] == "validated"]
            covered_val = sum(g[3] for g in val)
            out.append(f"| {family} | {rule} | {len(fam)} | {_pct(100 * sum(g[3] for g in got) / len(fam))} | "
                       f"{_pct(_by_source_pct([(g[0], g[3]) for g in got]))} | {covered_val} of {len(val)}"
                       f"{f' ({100 * covered_val / len(val):.1f}%)' if val else ''} | "
                       f"{_med([sourceband.half_width_pct(g[1]) for g in got])} / {_med([sourceband.half_width_pct(g[1]) for g in val])} |")
    return out


def fmt(band: tuple[float, float]) -> str:
    """A band as the answer's time: '-4.4..+179.6%'."""
    return f"{(band[0] - 1) * 100:+.1f}..{(band[1] - 1) * 100:+.1f}%"


def regime_lines(table: Table) -> list[str]:
    """Section 2's rows: each regime with enough rows for its own shipped band."""
    from simcluster.trust.band import trust_of
    from simcluster.trust.regime import Regime

    out = ["| regime | rows | sources | shipped band | candidate band (basis, sources) |", "| --- | ---: | ---: | --- | --- |"]
    for key, rows in table.regimes.items():
        if not rows.enough:
            continue
        regime = Regime(rows.family, key, rows.scale_range[1])
        shipped, cand = trust_of(regime, table), sourceband.candidate_trust(regime, table)
        out.append(f"| {key} | {len(rows.rows)} | {len(rows.sources)} | {fmt(shipped.rho)} ({shipped.status}) | "
                   f"{fmt(cand.rho)} ({cand.basis}, {cand.sources}{'' if cand.finite else ', whole range: no finite bound'}; "
                   f"{cand.status}) |")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", help="an error-band table (default: the shipped one)")
    args = ap.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        if args.table is not None and not Path(args.table).is_file():
            raise SimclusterError(f"{args.table}: no error-band table there (expected a file written by simcluster "
                                  "validate --error-bands)")
        table = load_table(args.table)
    except SimclusterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print("# DEVELOPMENT (band55): the source-weighted candidate on today's rows, every source already seen; not a judgement")
    print(f"# table: {len(table.residuals)} rows; candidate: >= {sourceband.SW_MIN_SOURCES} sources for a band of its own\n")
    print("## 1. Each source left out: coverage and half-widths, shipped rule vs candidate\n")
    print("\n".join(family_lines(sourceband.leave_one_source_out(table))))
    print("\n## 2. Regimes with their own shipped band: the band from all their rows\n")
    print("\n".join(regime_lines(table)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
