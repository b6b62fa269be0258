"""The registered read-out of NCCL's tree-kernel ceiling on new published rows (studies/tree_ceiling_registered.py;
issue 41, session 42, treereg): its rule on synthetic rows (each clause can fail), and the registered predictions are
today's code's."""

from __future__ import annotations

import yaml
from conftest import load_script

reg = load_script("studies/tree_ceiling_registered.py")


def _row(alg, measured, shipped, candidate, kind="independent"):
    return {"algorithm": f"{alg}/Simple", "set": kind, "measured_GBps": measured, "shipped_GBps": shipped,
            "candidate_GBps": candidate}


def _good():
    trees = [_row("tree", 190.0, 380.0, 188.0, "independent" if i < 4 else "development cluster") for i in range(8)]
    return trees + [_row("ring", 300.0, 380.0, 380.0)]


def test_rule_adopts_when_every_clause_holds():
    ok, lines = reg.verdict(_good())
    assert ok and lines[-1] == "verdict: ADOPT"


def test_each_clause_can_fail():
    few = _good()[:7] + _good()[-1:]                                          # (0) 7 Tree rows
    assert not reg.verdict(few)[0]
    no_gain_indep = [dict(r, candidate_GBps=r["shipped_GBps"]) if r["set"] == "independent" else r for r in _good()]
    assert not reg.verdict(no_gain_indep)[0]                                  # (1)
    one_worse = _good()
    one_worse[0] = _row("tree", 380.0, 380.0, 188.0)                           # (3) 0% -> 50.5% on one row
    assert not reg.verdict(one_worse)[0]
    ring_moves = _good()
    ring_moves[-1] = _row("ring", 300.0, 380.0, 370.0)                         # (4)
    assert not reg.verdict(ring_moves)[0]


def test_todays_model_is_the_registered_candidate():
    """Adopted (the rule said so): the shipped model now prices every registered row as the candidate did."""
    doc = yaml.safe_load((reg.BUNDLE / "registered.yaml").read_text())
    today = {(r["source"], r["run"]): r for r in reg.predictions()}
    assert len(doc["rows"]) == len(today) == 24
    for r in doc["rows"]:
        assert today[(r["source"], r["run"])]["shipped_GBps"] == r["candidate_GBps"]
        assert "measured_GBps" not in r


def _refused(fn, *args) -> str:
    try:
        fn(*args)
    except reg.Refused as exc:
        assert "\n" not in str(exc)
        return str(exc)
    raise AssertionError("not refused")


def test_bad_input_is_a_one_line_refusal(tmp_path):
    assert "registered.yaml: missing" in _refused(reg.read, tmp_path)
    row = {"source": "nccl-b200-ib-x46-together-use3a", "run": 0, "set": "independent", "configuration": "c",
           "algorithm": "tree/Simple", "nccl": "2.29", "shipped_GBps": 1.0}
    (tmp_path / "registered.yaml").write_text(yaml.safe_dump({"rule": reg.RULE, "rows": [row]}))
    assert "rows[0] has no 'candidate_GBps'" in _refused(reg.read, tmp_path)
    (tmp_path / "registered.yaml").write_text(yaml.safe_dump({"rule": reg.RULE, "rows": [dict(row, candidate_GBps=1.0)]}))
    published = tmp_path / "published"
    published.mkdir()
    for name in reg.NEW_FILES:
        (published / f"{name}.yaml").write_text(yaml.safe_dump({"runs": [{"busbw_GBps": 100.0}, {"op": "all_reduce"}]}))
    assert "runs[1] has no number 'busbw_GBps'" in _refused(reg.read, tmp_path, published)
    assert "exists: the registration is written once" in _refused(reg.register, tmp_path)


def test_the_shipped_registration_is_never_overwritten():
    assert "exists" in _refused(reg.register)
