"""Session 55 (error bands, band55): the adoption rule of the source-weighted band (simcluster/trust/sourceband.py, OFF),
registered before the candidate was printed on any row, judged only on sources whose files were merged into main after
the rule's commit (REGISTERED REVISION 2, mendA55, after cold review A55).

    PYTHONPATH=. python validation/band55.py --register calibration/rule-band55-2026-12-01/registered.yaml
    PYTHONPATH=. python validation/band55.py [BUNDLE] [--table PATH]   # the judgement (NOT JUDGED until enough new rows)

Judged table (the new rows' rho): --table PATH; else BUNDLE/runs/error_bands.json where the judging read froze the table
it read; else simcluster/trust/error_bands.json as shipped when read (the lead regenerates it with `simcluster validate
--error-bands` first); its sha256 is printed, with the main commit runs/commit.txt records.
OLD rows (the bands' rows): the error-band table as committed at the rule's commit (`commit`), read from git there, its
sha256 checked against registered.yaml `table_sha256` (revision 2: not the later table, so the bands neither grow nor
move with a later model). A row is NEW when its source (a source_group, R1-R4) is not among that table's sources
(`sources`) and every published file its rows come from (calibration/published/STEM.yaml, STEM the row's first word or
its source) was absent from the rule's commit's tree and entered main's first-parent history at a commit descending from
it: MERGED into main after the rule's commit, whenever it was recorded on a branch. Rows of a registered source that the
table at `commit` lacks (a later file joining a held group, e.g. fabpub55's MIT Engaging H100 file) are neither old nor
new: counted, not judged, not in the bands. New sources naming no published file (lab bundles: every ddp, llm eager, llm
local spec and transport source, the lab machines of collective one node) are counted, not judged.
Frozen code (revision 2): registered.yaml `frozen` holds the sha256 of the band code at the registration (sourceband.py,
band.py, table.py) and `level` / `sw_min_sources` the candidate's parameters; where the checkout's differ, the read-out
prints NOT JUDGED naming the change.
Rule (registered.yaml `rule`, `thresholds`):
  NOT JUDGED   fewer than MIN_NEW_SOURCES new sources or fewer than MIN_NEW_ROWS new rows with a band (per family); no git
               history; the frozen code or the table at `commit` changed;
  judge(rows)  ADOPT if the candidate's coverage of the rows, each new source weighing one (the mean over new sources of
               the share of their rows inside), is >= FLOOR_PCT, and either the shipped rule's is < FLOOR_PCT with the
               ratio of the median half-widths (median candidate / median shipped, over the judged rows) <= MAX_RATIO,
               or that ratio is <= 1; else KEEP;
  per family   (revision 2) ADOPT only where judge(the family's new rows) (revision 1) AND judge(all new rows pooled) (the
               first registration) both say ADOPT; ADOPT moves that family's bands only; else KEEP.
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
RULE_COMMIT = "005ea59b98cb07e3c2544c30787769fdbdf6be56"   # the rule's commit since revision 1: sources, old table, window
FROZEN = ("simcluster/trust/sourceband.py", "simcluster/trust/band.py", "simcluster/trust/table.py")
MIN_NEW_SOURCES, MIN_NEW_ROWS, FLOOR_PCT, MAX_RATIO = 2, 20, 70.0, 3.0
RULE = (f"new rows = held-out rows of the judged error-band table whose source is not in `sources` and whose published files were all "
        f"absent from `commit`'s tree and entered main's first-parent history at a commit descending from it (merged after it); "
        f"bands from the old rows only = the table as committed at `commit` (sha256 `table_sha256`; rows of registered sources "
        f"it lacks are neither old nor new); shipped: trust/band.trust_of; candidate: trust/sourceband.candidate_trust, each "
        f"source weighing one, >= {sourceband.SW_MIN_SOURCES} sources for a band of its own; the code in `frozen` unchanged, "
        f"else NOT JUDGED; judge(rows) = NOT JUDGED if < {MIN_NEW_SOURCES} new sources or < {MIN_NEW_ROWS} new rows with a "
        f"band, else ADOPT if the candidate's coverage with each new source weighing one is >= {FLOOR_PCT}% and either the "
        f"shipped rule's is < {FLOOR_PCT}% with the ratio of median half-widths (median candidate / median shipped) <= "
        f"{MAX_RATIO}, or that ratio is <= 1, else KEEP; per family of the new rows (revision 2): ADOPT only where judge(the "
        f"family's new rows) (revision 1) and judge(all new rows) (the first registration) both say ADOPT, moving that "
        f"family's bands only; else KEEP (NOT JUDGED where the family's own judge is)")


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


def git_bytes(commit: str, path: str) -> bytes:
    """The bytes of `path` as committed at `commit` (NoHistory where git cannot say)."""
    try:
        got = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=ROOT, capture_output=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as exc:
        raise NoHistory(f"git show: {exc}") from None
    if got.returncode:
        raise NoHistory(f"git show {commit[:12]}:{path}: {got.stderr.decode(errors='replace').strip() or 'failed'}")
    return got.stdout


def table_at(commit: str) -> tuple[Table, str]:
    """The error-band table as committed at `commit` (git) and its sha256."""
    data = git_bytes(commit, TABLE)
    return Table.from_json(json.loads(data), f"{commit}:{TABLE}"), hashlib.sha256(data).hexdigest()


def register(path: Path) -> None:
    revised = registering_commit(ROOT)
    try:
        table, sha = table_at(RULE_COMMIT)
        frozen = {p: hashlib.sha256(git_bytes(revised, p)).hexdigest() for p in FROZEN}
    except NoHistory as exc:
        raise SimclusterError(f"cannot read the table or the band code from git ({exc})") from None
    sources: dict[str, list[str]] = {}
    for r in table.residuals:
        sources.setdefault(r.family, [])
        if r.source not in sources[r.family]:
            sources[r.family].append(r.source)
    doc = {"set": "band55", "issue": "error bands", "revision": 2, "commit": RULE_COMMIT, "revised_at": revised,
           "candidate": "simcluster/trust/sourceband.py", "frozen": frozen, "level": LEVEL,
           "sw_min_sources": sourceband.SW_MIN_SOURCES, "table": TABLE, "table_sha256": sha,
           "table_rows": len(table.residuals), "rule": RULE,
           "thresholds": {"min_new_sources": MIN_NEW_SOURCES, "min_new_rows": MIN_NEW_ROWS, "floor_pct": FLOOR_PCT,
                          "max_ratio": MAX_RATIO},
           "expectation_scored": "the first registration's (6d2953b3): KEEP about 60%, ADOPT about 30%, else NOT JUDGED",
           "sources": {f: sorted(s) for f, s in sorted(sources.items())}}
    write_registration(path, "# REGISTERED REVISION 2 (mendA55, cold review A55): the band code frozen by sha256, the bands from the "
                       "table at `commit`, a family ADOPTs only where the first registration's pooled rule and revision 1's "
                       "per-family rule both do; made with 0 new sources in existence (validation/band55.py --register)\n"
                       + yaml.safe_dump(doc, sort_keys=False, width=140))


def read_registration(bundle: Path) -> dict:
    return read_rule_registration(bundle, "band55", lambda reg: (
        reg["commit"], reg["frozen"].items(), reg["level"], reg["sw_min_sources"], reg["table_sha256"], reg["sources"].items(),
        reg["thresholds"]["floor_pct"]), "set, commit, frozen, level, sw_min_sources, table_sha256, sources, thresholds")


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


def split(table: Table, reg: dict, old: Table, after=entered_after) -> tuple[list, list, list[str], list]:
    """(old rows, new rows, new sources without a published file, rows of registered sources `old` lacks) of the judged
    `table` against the registration; the old rows are `old`'s (the table at the rule's commit), not `table`'s."""
    held = {s for v in reg["sources"].values() for s in v}
    known = {(r.source, r.row) for r in old.residuals}
    neither = [r for r in table.residuals if r.source in held and (r.source, r.row) not in known]
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
    return list(old.residuals), new, lab, neither


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


def changed_code(reg: dict) -> list[str]:
    """What differs from the registration in the judged code: each frozen file whose sha256 in this checkout is not the
    registered one, and the candidate's parameters (LEVEL, SW_MIN_SOURCES) where the code's are not registered.yaml's."""
    out = []
    for path, sha in reg["frozen"].items():
        file = ROOT / path
        now = hashlib.sha256(file.read_bytes()).hexdigest() if file.is_file() else "missing"
        if now != sha:
            out.append(f"{path} sha256 {now[:12]}, registered {sha[:12]}")
    for key, now in (("level", LEVEL), ("sw_min_sources", sourceband.SW_MIN_SOURCES)):
        if reg[key] != now:
            out.append(f"{key} {now}, registered {reg[key]}")
    return out


def read_out(bundle: Path, table_path: str | None = None) -> dict:
    from simcluster.trust.table import load_table

    reg = read_registration(bundle)
    if table_path is not None and not Path(table_path).is_file():
        raise SimclusterError(f"{table_path}: no error-band table there (expected a file written by simcluster validate "
                              "--error-bands)")
    frozen = Path(bundle) / "runs" / "error_bands.json"
    path = Path(table_path) if table_path else frozen if frozen.is_file() else ROOT / TABLE
    table = load_table(str(path))
    stamp = Path(bundle) / "runs" / "commit.txt"
    res = {"commit": reg["commit"], "revised_at": reg.get("revised_at", "?"), "checks": [], "lab": [], "neither": [],
           "table": ("given with --table" if table_path else "runs/error_bands.json" if path == frozen else TABLE,
                     hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "none", len(table.residuals)),
           "read_at": stamp.read_text().split()[0] if stamp.is_file() and stamp.read_text().split() else None}
    changed = changed_code(reg)
    if changed:
        return {**res, "verdicts": [f"RULE ADOPT: NOT JUDGED (the judged code changed since the registration: {'; '.join(changed)})"]}
    try:
        if git("merge-base", "--is-ancestor", reg["commit"], "HEAD", ok=(0, 1, 128)).returncode != 0:
            raise NoHistory(f"the registering commit {reg['commit'][:12]} is not in this checkout's history")
        before, sha = table_at(reg["commit"])
        if sha != reg["table_sha256"]:
            return {**res, "verdicts": [f"RULE ADOPT: NOT JUDGED (the table at {reg['commit'][:12]} has sha256 {sha[:12]}, "
                                        f"registered {reg['table_sha256'][:12]})"]}
        old, new, lab, neither = split(table, reg, before)
    except NoHistory as exc:
        return {**res, "verdicts": [f"RULE ADOPT: NOT JUDGED (no git history: {exc})"]}
    checks = sourceband.compare(new, Table(old))
    return {**res, "checks": checks, "lab": lab, "neither": neither, "verdicts": verdicts(checks, reg["thresholds"])}


def verdicts(checks, th: dict) -> list[str]:
    """One `RULE ADOPT FAMILY: ...` line per family of the new rows (revision 2: ADOPT where the family's own judge
    (revision 1) and the pooled judge of all new rows (the first registration) both say ADOPT); with none, one NOT
    JUDGED line."""
    if not checks:
        return [f"RULE ADOPT: {judge(checks, th)}"]
    pooled = judge(checks, th)
    out = [f"# all new rows pooled (the first registration's rule): {pooled}"]
    for family in sorted({c.row.family for c in checks}):
        own = judge([c for c in checks if c.row.family == family], th)
        word = own.split(" (")[0] if own.startswith("NOT JUDGED") else \
            "ADOPT" if own.startswith("ADOPT") and pooled.startswith("ADOPT") else "KEEP"
        out.append(f"RULE ADOPT {family}: {word} (needs ADOPT both pooled and per family; per family: {own})")
    return out


def _pct(x: float | None) -> str:
    return "  n/a" if x is None else f"{x:5.1f}%"


def show(res: dict) -> None:
    print(f"# band55: the source-weighted band's adoption rule, registered at {res['commit']} (revision 2 at "
          f"{res['revised_at']})")
    where, sha, n = res["table"]
    print(f"# judged table: {where}, sha256 {sha}, {n} rows; read at main "
          f"{res['read_at'] or 'not recorded (no runs/commit.txt)'}")
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
    if res["neither"]:
        names = sorted({r.source for r in res["neither"]})
        print(f"# rows of registered sources the table at the rule's commit lacks (neither old nor new; not judged, not in "
              f"the bands): {len(res['neither'])} from {', '.join(names)}")
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
