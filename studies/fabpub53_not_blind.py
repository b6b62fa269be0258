"""Cold review A53 item 3 (mendA53): the held-out nccl figures with and without the rows that are not blind.

nccl-tests#309's first cluster's full tables (calibration/published/nccl-h100-ib-x2-x4-nccltests309-tables.yaml, 16 rows,
session 53 fabpub53) are held out by commit order, but they are not blind: session 31 read the tables, and the
expectation committed with the file was arithmetic on printed errors. The same holds for xa2a53's EP-backend alltoall
file (nccl-aws-p5-x4-x8-epbackend-alltoall.yaml, 2 rows: moe53 read its rows and their predictions first; final read 53
item 3, mendF53): 18 rows in all. The files stay in every table. This study prints
the figures that count its rows beside the same figures without them (the file left out of the check's eta / t0 fit
too, not only out of the mean): `validate --published nccl --held-out-systems`' headline and studies/fabnoise52.py's
part 4 (by error-band regime: the paired floors). No model figure changes.
Run: PYTHONPATH=. python studies/fabpub53_not_blind.py"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

NOT_BLIND = ("nccl-h100-ib-x2-x4-nccltests309-tables",   # fabpub53: read in session 31; expectation from printed errors
             "nccl-aws-p5-x4-x8-epbackend-alltoall")    # xa2a53: its rows and predictions read by moe53 first (its `why`)


def headline(drop: tuple[str, ...]) -> str:
    """The held-out check's headline (sources within 10%, all rows' mean |error|) with the files in `drop` left out."""
    from simcluster.reference.nccl_held_out import _headline, held_out_systems, load_systems, sources

    groups = sources(held_out_systems(systems=[s for s in load_systems() if s.name not in drop]))
    met, rows, mean, shipped = _headline(groups)
    others = [g for g in groups if not g.development]
    o_met, o_rows, o_mean, _ = _headline(others)
    return (f"sources within 10%: {met} of {len(groups)}; all {rows} rows: mean |error| {mean:.1f}% (shipped cards "
            f"{shipped:.1f}%); others (not ^): {o_met} of {len(others)} within 10%, {o_rows} rows {o_mean:.1f}%")


def main() -> None:
    import fabnoise52

    print("# Held-out nccl figures with and without the not-blind rows (studies/fabpub53_not_blind.py)")
    print(f"# not blind: {', '.join(NOT_BLIND)}")
    for label, drop in (("with them", ()), ("without them", NOT_BLIND)):
        print(f"\n## validate --published nccl --held-out-systems headline, {label}\n{headline(drop)}")
    for label, drop in (("with them", ()), ("without them", NOT_BLIND)):
        rows = fabnoise52.collect(drop)
        print(f"\n## fabnoise52 part 4, {label}", end="")
        fabnoise52.print_regimes(rows, fabnoise52.pairs_of(rows))


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    raise SystemExit(main())
