"""Session 55 band55: the source-weighted band's registered adoption rule (validation/band55.py): NOT JUDGED at
registration, its verdict on synthetic new sources by the registered thresholds, which rows count as new (git and the
registered sources), a fresh registration, and one-line refusals."""

import dataclasses
import subprocess

import pytest
import yaml
from conftest import ROOT, fresh_register_equals, load_script

from simcluster.trust.sourceband import Compared
from simcluster.trust.table import Residual, Table

script = load_script("validation/band55.py")
BUNDLE = ROOT / "calibration" / "rule-band55-2026-12-01"
TH = {"min_new_sources": 2, "min_new_rows": 20, "floor_pct": 70.0, "max_ratio": 3.0}
REG_COMMIT = "005ea59b98cb07e3c2544c30787769fdbdf6be56"


def _history() -> bool:
    return subprocess.run(["git", "cat-file", "-e", f"{REG_COMMIT}^{{commit}}"], cwd=ROOT, capture_output=True).returncode == 0


needs_history = pytest.mark.skipif(not _history(), reason="no git history (the rule reads when files entered)")


def _checks(per_source: dict[str, tuple[int, int, int, tuple, tuple]]) -> list[Compared]:
    """{source: (rows, shipped covered, candidate covered, shipped band, candidate band)} as Compared rows at rho 1.0, a
    missed row's band the same band moved up by 5 (its width unchanged), so the covered counts come out as given."""
    out = []
    for s, (n, ship, cand, sb, cb) in per_source.items():
        for i in range(n):
            row = Residual("collective across nodes", "r", s, f"{s} runs[{i}]", 16.0, 1.0)
            out.append(Compared(row, sb if i < ship else (sb[0] + 5, sb[1] + 5), "validated",
                                cb if i < cand else (cb[0] + 5, cb[1] + 5), "unvalidated", True))
    return out


def test_verdicts_on_synthetic_new_sources():
    narrow, wide, wider = (0.95, 1.05), (0.8, 1.2), (0.5, 1.5)
    assert script.judge(_checks({"a": (10, 10, 10, narrow, wide)}), TH).startswith("NOT JUDGED (10 new held-out rows")
    assert script.judge(_checks({"a": (10, 10, 10, narrow, wide), "b": (9, 9, 9, narrow, wide)}), TH).startswith("NOT JUDGED")
    # the shipped band misses (50% each source once), the candidate holds at a ratio of 4: too wide -> KEEP
    assert script.judge(_checks({"a": (10, 5, 10, narrow, wide), "b": (10, 5, 10, narrow, wide)}), TH).startswith("KEEP")
    # the same at a ratio of 2 -> ADOPT
    got = script.judge(_checks({"a": (10, 5, 10, (0.9, 1.1), wide), "b": (10, 5, 10, (0.9, 1.1), wide)}), TH)
    assert got.startswith("ADOPT") and "candidate covers 100.0%, shipped 50.0%" in got
    # both hold, the candidate wider -> KEEP; both hold, the candidate no wider -> ADOPT
    assert script.judge(_checks({"a": (10, 8, 10, narrow, wide), "b": (10, 8, 10, narrow, wide)}), TH).startswith("KEEP")
    assert script.judge(_checks({"a": (10, 8, 8, wide, wide), "b": (10, 8, 8, wide, wide)}), TH).startswith("ADOPT")
    # the candidate misses its floor -> KEEP whatever the shipped rule did
    assert script.judge(_checks({"a": (10, 2, 6, narrow, (0.9, 1.1)), "b": (10, 2, 6, narrow, (0.9, 1.1))}), TH).startswith("KEEP")
    # each source weighs one: a 30-row source covered and a 3-row source missed is 50%, not 91%
    assert "candidate covers 50.0%" in script.judge(_checks({"a": (30, 30, 30, wider, wider), "b": (3, 0, 0, wider, wider)}), TH)


def _family(checks, family):
    return [Compared(Residual(family, c.row.regime, c.row.source, c.row.row, c.row.scale, c.row.rho), c.shipped,
                     c.shipped_status, c.candidate, c.candidate_status, c.candidate_finite) for c in checks]


def test_one_verdict_per_family_needs_the_pooled_and_the_family_rule():
    """Revision 2: a family ADOPTs only where its own new rows (revision 1) and all new rows pooled (the first
    registration) both say ADOPT; one NOT JUDGED line with no new rows."""
    wide = (0.8, 1.2)
    across = _checks({"a": (10, 5, 10, (0.9, 1.1), wide), "b": (10, 5, 10, (0.9, 1.1), wide)})
    llm = [Compared(Residual("llm", "r", "c", "c runs[0]", 8.0, 1.0), wide, "validated", wide, "unvalidated", True)]
    lines = script.verdicts(across + llm, TH)
    assert lines[0].startswith("# all new rows pooled (the first registration's rule): ADOPT (")
    assert lines[1].startswith("RULE ADOPT collective across nodes: ADOPT (needs ADOPT both pooled and per family; per "
                               "family: ADOPT (")
    assert lines[2].startswith("RULE ADOPT llm: NOT JUDGED (needs ADOPT both pooled and per family; per family: NOT JUDGED "
                               "(1 new held-out rows with a band from 1 new sources")
    # cold review A55 item 2's case: 2 across-nodes sources (candidate 100%, shipped 50%, ratio 2) and 2 llm sources
    # (candidate 0%, shipped 100%): revision 1 alone ADOPTs across nodes; pooled (the first registration) is KEEP -> KEEP
    llm = _family(_checks({"c": (10, 10, 0, (0.9, 1.1), wide), "d": (10, 10, 0, (0.9, 1.1), wide)}), "llm")
    lines = script.verdicts(across + llm, TH)
    assert lines[0].startswith("# all new rows pooled (the first registration's rule): KEEP (each new source weighing one: "
                               "candidate covers 50.0%, shipped 75.0%")
    assert lines[1].startswith("RULE ADOPT collective across nodes: KEEP (needs ADOPT both pooled and per family; per "
                               "family: ADOPT (")
    assert lines[2].startswith("RULE ADOPT llm: KEEP (needs ADOPT both pooled and per family; per family: KEEP (")
    assert script.verdicts([], TH) == ["RULE ADOPT: NOT JUDGED (0 new held-out rows with a band from 0 new sources; needs >= 20 "
                                       "from >= 2)"]


def test_split_takes_unregistered_sources_whose_files_entered_after():
    """Revision 2 (cold review A55 item 3): the old rows are the table's at the rule's commit (their rho as then, not the
    judged table's re-predicted ones); a registered source's rows that table lacks are neither old nor new."""
    reg = {"commit": "c0", "sources": {"collective across nodes": ["old"]}}
    then = Residual("collective across nodes", "r", "old", "runs[0] x", 16.0, 1.0)
    rows = [dataclasses.replace(then, rho=1.5),
            Residual("collective across nodes", "r", "old", "runs[1] later file", 16.0, 1.2),
            Residual("collective across nodes", "r", "nccl-h100-ib-x2-nebius-skypilot", "runs[0] x", 16.0, 1.0),
            Residual("llm eager", "e", "h200x2-lab", "lab row", 2.0, 1.0)]
    old, new, lab, neither = script.split(Table(rows), reg, Table([then]), after=lambda path, commit: True)
    assert old == [then] and [r.source for r in new] == ["nccl-h100-ib-x2-nebius-skypilot"]
    assert lab == ["h200x2-lab"] and [r.row for r in neither] == ["runs[1] later file"]
    assert script.split(Table(rows), reg, Table([then]), after=lambda path, commit: False)[1] == []   # there before: not new


@needs_history
def test_entered_after_reads_the_first_parent_history():
    path = "calibration/published/nccl-h100-ib-x2-nebius-skypilot.yaml"
    assert not script.entered_after(path, REG_COMMIT)      # there at the registration
    first = next(c for c in script.git("rev-list", "--first-parent", "--reverse", "HEAD", "--", path).stdout.split()
                 if script.git("cat-file", "-e", f"{c}:{path}", ok=(0, 128)).returncode == 0)
    assert script.entered_after(path, f"{first}^")          # as if registered just before it entered
    assert not script.entered_after("calibration/published/not-there.yaml", REG_COMMIT)


@needs_history
def test_registration_is_fresh(tmp_path, monkeypatch):
    reg = fresh_register_equals(script, BUNDLE, tmp_path, monkeypatch, "revised_at")
    assert reg["commit"] == REG_COMMIT and reg["table_rows"] == 2673 and reg["revision"] == 2
    assert sorted(reg["frozen"]) == sorted(script.FROZEN) and (reg["level"], reg["sw_min_sources"]) == (0.8, 9)
    assert sum(len(v) for v in reg["sources"].values()) == 168 and reg["thresholds"] == TH
    assert "/work" not in (BUNDLE / "registered.yaml").read_text()


@needs_history
def test_not_judged_at_registration(capsys):
    """The read-out as registered (no new source yet; when one enters this test's expectation is the readout.txt the lead
    saves: tests/test_registered_readouts.py)."""
    if (BUNDLE / "readout.txt").is_file():
        pytest.skip("judged: tests/test_registered_readouts.py reprints the read-out")
    from simcluster.trust.table import load_table

    reg = yaml.safe_load((BUNDLE / "registered.yaml").read_text())
    shipped = ROOT / "simcluster/trust/error_bands.json"
    new = script.split(load_table(str(shipped)), reg, script.table_at(REG_COMMIT)[0])[1]
    assert script.main([str(BUNDLE)]) == 0
    out, registered = capsys.readouterr().out, (BUNDLE / "readout-at-revision-2.txt").read_text()
    if script.hashlib.sha256(shipped.read_bytes()).hexdigest() == reg["table_sha256"]:   # the table as registered
        assert out == registered
    elif not new:   # regenerated (its sha256 and perhaps rows of held sources printed), still no new source
        assert out.splitlines()[-1] == registered.splitlines()[-1]
    else:           # new sources entered, not yet frozen and read: a verdict line per family of theirs
        verdicts = [line for line in out.splitlines() if line.startswith("RULE ADOPT ")]
        assert len(verdicts) == len({r.family for r in new if r.family}) or "NOT JUDGED" in out.splitlines()[-1]
        assert all(v.split(": ", 1)[1].startswith(("ADOPT (", "KEEP (", "NOT JUDGED (")) for v in verdicts)


@needs_history
def test_changed_band_code_is_not_judged(monkeypatch, capsys):
    """Revision 2 (cold review A55 item 1): a frozen file whose sha256 differs, or a parameter the code no longer has,
    prints one NOT JUDGED line naming it."""
    real = script.read_registration
    monkeypatch.setattr(script, "read_registration", lambda b: {**real(b), "frozen": {"simcluster/trust/band.py": "0" * 64}})
    assert script.main([str(BUNDLE)]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith(
        "RULE ADOPT: NOT JUDGED (the judged code changed since the registration: simcluster/trust/band.py sha256 ")
    monkeypatch.setattr(script, "read_registration", lambda b: {**real(b), "sw_min_sources": 8})
    assert script.main([str(BUNDLE)]) == 0
    assert capsys.readouterr().out.splitlines()[-1].endswith("(the judged code changed since the registration: "
                                                            "sw_min_sources 9, registered 8)")


def test_one_line_refusals(tmp_path, capsys):
    assert script.main([str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "registered.yaml: missing" in err and len(err.splitlines()) == 1
    assert script.main([str(BUNDLE), "--table", str(tmp_path / "none.json")]) == 1
    err = capsys.readouterr().err
    assert "none.json: no error-band table there" in err and len(err.splitlines()) == 1
    with pytest.raises(SystemExit) as exc:
        script.main(["--bogus"])
    assert exc.value.code == 2 and len(capsys.readouterr().err.splitlines()) == 1


def test_the_frozen_band_code_is_unchanged_or_the_rule_is_never_judged():
    """Final read 55 (the freeze trap): revision 2 froze trust/sourceband.py, band.py and table.py by sha256; an edit to any
    of them -- a comment included -- turns the rule's read-out NOT JUDGED for good. This fails at the edit, not later when
    the new sources arrive: before changing a frozen file, make a revision 3 while no new source exists (the README's
    REGISTERED REVISION 2), or record there that the rule is given up."""
    import hashlib

    frozen = yaml.safe_load((BUNDLE / "registered.yaml").read_text())["frozen"]
    changed = [p for p, sha in frozen.items() if hashlib.sha256((ROOT / p).read_bytes()).hexdigest() != sha]
    assert not changed, (f"{', '.join(changed)} changed since calibration/rule-band55-2026-12-01 froze it: that rule can no "
                         "longer be judged; register a revision 3 first (its README) or record the rule as given up")
