"""Session 55 (error bands, band55): the adoption rule of the source-weighted band (simcluster/trust/sourceband.py, OFF),
registered before the candidate was printed on any row, judged only on sources recorded after the registration.

    PYTHONPATH=. python validation/band55.py --register calibration/rule-band55-2026-12-01/registered.yaml
    PYTHONPATH=. python validation/band55.py [BUNDLE] [--table PATH]   # the judgement (NOT JUDGED until enough new rows)

Rows: the error-band table's held-out rows (--table PATH; else BUNDLE/runs/error_bands.json where the judging read froze
the table it read; else simcluster/trust/error_bands.json as shipped when read, which the lead regenerates with
`simcluster validate --error-bands` first). A row is NEW when its source (the table's unit held out
together: a source_group, R1-R4) is not among the sources the table held at the registering commit (registered.yaml
`sources`, read from git at that commit) and every published file its rows come from (calibration/published/STEM.yaml,
STEM the row's first word or its source) entered the checkout's first-parent history (main) at or after a commit that
descends from the registering commit and was absent from the registering commit's tree. New rows whose source names no
published file (lab bundles) are counted, not judged. The bands are built from the OLD rows only (the rows of registered
sources in the same table), by the shipped rule (trust/band.trust_of) and by the candidate (sourceband.candidate_trust).
Rule (fixed at registration; registered.yaml `rule`, `thresholds`), per family of the new rows (REGISTERED REVISION 1, made
after the development print studies/band55_dev.txt with 0 new rows in existence: the candidate pools every one-node
collective and every published llm regime, so a verdict on one family's new sources says nothing of another's):
  NOT JUDGED   fewer than MIN_NEW_SOURCES new sources or fewer than MIN_NEW_ROWS new rows with a band; or no git history;
  ADOPT        the candidate's coverage of the new rows, each new source weighing one (the mean over new sources of the
               share of their rows inside), is >= FLOOR_PCT, and either the shipped rule's is < FLOOR_PCT with the
               median half-width ratio (candidate / shipped, over the judged rows) <= MAX_RATIO, or the ratio is <= 1;
  KEEP         otherwise (the shipped row-weighted band stays).
Printed beside, not judged: each rule's row-weighted coverage, and its coverage of the rows whose answer it calls validated.
"""

from __future__ import annotations

import hashlib
import json
import statistics
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.heldout.registration import (  # noqa: E402
    read_rule_registration,
    refuse_existing,
    registering_commit,
    write_registration,
)
from simcluster.script_args import ArgumentParser  # noqa: E402
from simcluster.trust import sourceband  # noqa: E402
from simcluster.trust.table import LEVEL, Table  # noqa: E402

BUNDLE = ROOT / "calibration" / "rule-band55-2026-12-01"
TABLE = "simcluster/trust/error_bands.json"
PUBLISHED = "calibration/published"
MIN_NEW_SOURCES, MIN_NEW_ROWS, FLOOR_PCT, MAX_RATIO = 2, 20, 70.0, 3.0
RULE = (f"new rows = held-out rows of the error-band table whose source is not in `sources` and whose published files all entered "
        f"the first-parent history at or after a descendant of `commit` (absent from its tree); bands from the old rows only "
        f"(shipped: trust/band.trust_of; candidate: trust/sourceband.candidate_trust, each source weighing one, >= "
        f"{sourceband.SW_MIN_SOURCES} sources for a band of its own); NOT JUDGED if < {MIN_NEW_SOURCES} new sources or < "
        f"{MIN_NEW_ROWS} new rows with a band; judged per family (revision 1: each family of the new rows its own verdict, from its own new "
        f"rows; ADOPT moves that family's bands only); else ADOPT if the candidate's coverage with each new source weighing one is >= "
        f"{FLOOR_PCT}% and either the shipped rule's is < {FLOOR_PCT}% with the median half-width ratio candidate / shipped "
        f"<= {MAX_RATIO}, or that ratio is <= 1; else KEEP")


class NoHistory(Exception):
    """git cannot say when a file entered (no repository, a shallow copy, the registering commit not in the history)."""


def git(*args: str, ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess:
    try:
        got = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as exc:
        raise NoHistory(f"git {args[0]}: {exc}") from None
    if got.returncode not in ok:
        raise NoHistory(f"git {' '.join(args[:2])}: {got.stderr.strip().splitlines()[0] if got.stderr.strip() else 'failed'}")
    return got


def table_at(commit: str) -> tuple[Table, str]:
    """The error-band table as committed at `commit` (git) and its sha256."""
    text = git("show", f"{commit}:{TABLE}").stdout
    return Table.from_json(json.loads(text), f"{commit}:{TABLE}"), hashlib.sha256(text.encode()).hexdigest()


def register(path: Path) -> None:
    commit = registering_commit(ROOT)
    try:
        table, sha = table_at(commit)
    except NoHistory as exc:
        raise SimclusterError(f"cannot read the table at the registering commit ({exc})") from None
    sources: dict[str, list[str]] = {}
    for r in table.residuals:
        sources.setdefault(r.family, [])
        if r.source not in sources[r.family]:
            sources[r.family].append(r.source)
    doc = {"set": "band55", "issue": "error bands", "revision": 1, "commit": commit, "candidate": "simcluster/trust/sourceband.py",
           "level": LEVEL, "sw_min_sources": sourceband.SW_MIN_SOURCES, "table": TABLE, "table_sha256": sha,
           "table_rows": len(table.residuals), "rule": RULE,
           "thresholds": {"min_new_sources": MIN_NEW_SOURCES, "min_new_rows": MIN_NEW_ROWS, "floor_pct": FLOOR_PCT,
                          "max_ratio": MAX_RATIO},
           "sources": {f: sorted(s) for f, s in sorted(sources.items())}}
    write_registration(path, "# REGISTERED REVISION 1: the source-weighted band's adoption rule, judged per family; made after the "
                       "development print (studies/band55_dev.txt) with 0 new rows in existence (validation/band55.py --register)\n"
                       + yaml.safe_dump(doc, sort_keys=False, width=140))


def read_registration(bundle: Path) -> dict:
    return read_rule_registration(bundle, "band55", lambda reg: (reg["commit"], reg["sources"].items(), reg["thresholds"]["floor_pct"]),
                                  "set, commit, sources, thresholds")


def files_of(rows) -> set[str] | None:
    """The published files (paths from the root) a source's rows come from: the row's first word where
    calibration/published/WORD.yaml exists, else the source's name; None where a row names none (a lab bundle)."""
    out = set()
    for r in rows:
        stem = next((s for s in (r.row.split(" runs[")[0], r.source) if (ROOT / PUBLISHED / f"{s}.yaml").is_file()), None)
        if stem is None:
            return None
        out.add(f"{PUBLISHED}/{stem}.yaml")
    return out


def entered_after(path: str, commit: str) -> bool:
    """Whether `path` was absent at `commit` and entered the first-parent history (HEAD's: main's, where read on main) at a
    commit that descends from `commit` (NoHistory where git cannot say)."""
    if git("cat-file", "-e", f"{commit}:{path}", ok=(0, 128)).returncode == 0:
        return False
    for c in git("rev-list", "--first-parent", "--reverse", "HEAD", "--", path).stdout.split():
        if git("cat-file", "-e", f"{c}:{path}", ok=(0, 128)).returncode == 0:
            return git("merge-base", "--is-ancestor", commit, c, ok=(0, 1)).returncode == 0
    return False   # not committed


def split(table: Table, reg: dict, after=entered_after) -> tuple[list, list, list[str]]:
    """(old rows, new rows, new sources without a published file) of `table` against the registration."""
    held = {s for v in reg["sources"].values() for s in v}
    old = [r for r in table.residuals if r.source in held]
    by: dict[str, list] = {}
    for r in table.residuals:
        if r.source not in held:
            by.setdefault(r.source, []).append(r)
    new, lab = [], []
    for source, rows in sorted(by.items()):
        files = files_of(rows)
        if files is None:
            lab.append(source)
        elif all(after(f, reg["commit"]) for f in files):
            new += rows
    return old, new, lab


def _cov(checks, attr: str) -> float | None:
    """Coverage in % with each source weighing one (attr: 'shipped_covered' / 'candidate_covered')."""
    by: dict[str, list[bool]] = {}
    for c in checks:
        by.setdefault(c.row.source, []).append(getattr(c, attr))
    return 100 * statistics.fmean(sum(v) / len(v) for v in by.values()) if by else None


def judge(checks, th: dict) -> str:
    """The verdict line from compared new rows (sourceband.Compared)."""
    sources = {c.row.source for c in checks}
    if len(sources) < th["min_new_sources"] or len(checks) < th["min_new_rows"]:
        return (f"NOT JUDGED ({len(checks)} new held-out rows with a band from {len(sources)} new sources; needs >= "
                f"{th['min_new_rows']} from >= {th['min_new_sources']})")
    ship, cand = _cov(checks, "shipped_covered"), _cov(checks, "candidate_covered")
    w_ship = statistics.median(sourceband.half_width_pct(c.shipped) for c in checks)
    w_cand = statistics.median(sourceband.half_width_pct(c.candidate) for c in checks)
    ratio = w_cand / w_ship if w_ship > 0 else float("inf")
    floor, most = th["floor_pct"], th["max_ratio"]
    adopt = cand >= floor and ((ship < floor and ratio <= most) or ratio <= 1.0)
    return (f"{'ADOPT' if adopt else 'KEEP'} (each new source weighing one: candidate covers {cand:.1f}%, shipped {ship:.1f}%, "
            f"floor {floor}%; median half-width candidate {w_cand:.1f}% / shipped {w_ship:.1f}% = {ratio:.2f}, adopt needs <= "
            f"{most} where the shipped rule misses the floor, <= 1 where it holds; {len(checks)} rows from {len(sources)} sources)")


def read_out(bundle: Path, table_path: str | None = None) -> dict:
    from simcluster.trust.table import load_table

    reg = read_registration(bundle)
    if table_path is not None and not Path(table_path).is_file():
        raise SimclusterError(f"{table_path}: no error-band table there (expected a file written by simcluster validate "
                              "--error-bands)")
    frozen = Path(bundle) / "runs" / "error_bands.json"
    table = load_table(table_path or (str(frozen) if frozen.is_file() else None))
    try:
        if git("merge-base", "--is-ancestor", reg["commit"], "HEAD", ok=(0, 1, 128)).returncode != 0:
            raise NoHistory(f"the registering commit {reg['commit'][:12]} is not in this checkout's history")
        old, new, lab = split(table, reg)
    except NoHistory as exc:
        return {"commit": reg["commit"], "checks": [], "lab": [], "verdicts": [f"RULE ADOPT: NOT JUDGED (no git history: {exc})"]}
    checks = sourceband.compare(new, Table(old))
    return {"commit": reg["commit"], "checks": checks, "lab": lab, "verdicts": verdicts(checks, reg["thresholds"])}


def verdicts(checks, th: dict) -> list[str]:
    """One `RULE ADOPT FAMILY: ...` line per family of the new rows (revision 1); with none, one NOT JUDGED line."""
    if not checks:
        return [f"RULE ADOPT: {judge(checks, th)}"]
    return [f"RULE ADOPT {family}: {judge([c for c in checks if c.row.family == family], th)}"
            for family in sorted({c.row.family for c in checks})]


def _pct(x: float | None) -> str:
    return "  n/a" if x is None else f"{x:5.1f}%"


def show(res: dict) -> None:
    print(f"# band55: the source-weighted band's adoption rule, registered at {res['commit']}")
    by: dict[str, list] = {}
    for c in res["checks"]:
        by.setdefault(c.row.source, []).append(c)
    print("# new source | family | rows | shipped covered | candidate covered | median half-width shipped / candidate")
    for source, cs in by.items():
        print(f"{source} | {cs[0].row.family} | {len(cs)} | {sum(c.shipped_covered for c in cs)} | "
              f"{sum(c.candidate_covered for c in cs)} | {statistics.median(sourceband.half_width_pct(c.shipped) for c in cs):.1f}% / "
              f"{statistics.median(sourceband.half_width_pct(c.candidate) for c in cs):.1f}%")
    cs = res["checks"]
    if cs:
        for name, cov, status in (("shipped", "shipped_covered", "shipped_status"), ("candidate", "candidate_covered", "candidate_status")):
            val = [c for c in cs if getattr(c, status) == "validated"]
            print(f"# {name}: row-weighted {_pct(100 * sum(getattr(c, cov) for c in cs) / len(cs))}; validated answers "
                  f"{sum(getattr(c, cov) for c in val)} of {len(val)} covered (printed, not judged)")
    if res["lab"]:
        print(f"# new sources naming no published file (not judged): {', '.join(res['lab'])}")
    print("\n".join(res["verdicts"]))


def main(argv: list[str] | None = None) -> int:
    ap = ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bundle", nargs="?", type=Path, default=BUNDLE)
    ap.add_argument("--register", type=Path, help="write the registration to this registered.yaml")
    ap.add_argument("--table", help="an error-band table (default: the shipped one)")
    args = ap.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        if args.register:
            register(refuse_existing(args.register))
            return 0
        result = read_out(args.bundle, args.table)
    except SimclusterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2 if args.register else 1
    show(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
