"""Session 57 hfmemh57: the HF frameworks' memory terms' registered held-out set (validation/hfmemh57.py;
calibration/h200x1-hfmemh57-2026-12-02; studies/hfmemh57_device.py): the registration fresh, the committed read-out,
the rule on synthetic rows, the measurement taken per process, one-line refusals."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml
from conftest import ROOT, fresh_register_equals, load_script, refused_in_one_line, wrong_bundles

BUNDLE = ROOT / "calibration" / "h200x1-hfmemh57-2026-12-02"
s = load_script("validation/hfmemh57.py")


def test_register_reproduces_the_registration_byte_for_byte(tmp_path, monkeypatch):
    reg = fresh_register_equals(s, BUNDLE, tmp_path, monkeypatch, "commit")
    assert len(reg["rows"]) == 18 and {r["framework"] for r in reg["rows"]} == {"hf-fsdp1", "hf-deepspeed"}
    assert all(r["on_gib"] > r["off_gib"] for r in reg["rows"])      # the terms add memory on every row
    assert "/work" not in (BUNDLE / "registered.yaml").read_text()


def test_the_committed_read_out_is_todays():
    res = s.read_out(BUNDLE)
    assert res["verdicts"]["MEM"].startswith("HOLDS (ON mean |error| 1.3%")
    assert all(r["start_gib"] == 0.0 for r in res["rows"])          # one process a configuration: nothing carried in
    assert "RULE MEM: " + res["verdicts"]["MEM"] in (BUNDLE / "readout.txt").read_text()


@pytest.mark.parametrize("on, want", [(1.0, "HOLDS"), (1.04, "HOLDS"), (1.06, "FAILS"), (0.94, "FAILS")])
def test_the_rule_judges_the_mean_and_the_worst_row(on, want):
    rows = [{"on_gib": on, "off_gib": 0.9, "measured_gib": 1.0}] * 18     # mean = every row's error
    assert s.verdict(rows).startswith(want)
    worst = [{"on_gib": 1.11, "off_gib": 1.0, "measured_gib": 1.0}] + [{"on_gib": 1.0, "off_gib": 1.0, "measured_gib": 1.0}] * 17
    assert s.verdict(worst).startswith("FAILS")      # mean 0.6% but one row 11% off


def test_a_row_is_its_peak_less_its_start_bytes(tmp_path):
    """The largest phase peak less what was allocated when the configuration began (hfmem57's finding 1)."""
    shutil.copytree(BUNDLE, tmp_path / "b")
    path = tmp_path / "b" / "runs" / "s0.2b-mb2-fsdp1.json"
    doc = json.loads(path.read_text())
    rec = doc["records"][0]
    peak = max(ph["peak_bytes"] for ph in rec["phases"].values())
    rec["start_bytes"] = 2**30
    path.write_text(json.dumps(doc))
    reg = next(r for r in yaml.safe_load((BUNDLE / "registered.yaml").read_text())["rows"] if r["name"] == "s0.2b-mb2-fsdp1")
    assert s.measured(tmp_path / "b", reg)["measured_gib"] == pytest.approx(peak / 2**30 - 1)


def test_refusals_are_one_line(tmp_path, capsys):
    empty, other, keyless = wrong_bundles(tmp_path, "hfhook55", "hfmemh57")
    missing = tmp_path / "missing"
    shutil.copytree(BUNDLE, missing)
    (missing / "runs" / "s0.7b-mb8-zero3.json").unlink()
    failed = tmp_path / "failed"
    shutil.copytree(BUNDLE, failed)
    p = failed / "runs" / "s0.2b-mb1-fsdp1.json"
    p.write_text(p.read_text().replace('"status": "ok"', '"status": "failed: OOM"'))
    odd = []
    for name, edit in (("records", lambda d: {**d, "records": [1]}),
                       ("saved", lambda d: {**d, "records": [{**d["records"][0], "saved": "x"}]})):
        bad = tmp_path / name
        shutil.copytree(BUNDLE, bad)
        p = bad / "runs" / "s0.2b-mb1-fsdp1.json"
        p.write_text(json.dumps(edit(json.loads(p.read_text()))))
        odd.append((bad, "s0.2b-mb1-fsdp1.json"))   # cold read s57 item 3: each was a traceback
    refused_in_one_line(s.main, capsys, tmp_path, [(empty, "missing"), (other, "another set"), (keyless, "expected the 18"),
                                                   (missing, "did not run"), (failed, "status 'ok'"), *odd])
