"""studies/fa2_noncausal_read.py: the non-causal flash probe's read-out on synthetic documents built from its
registration (no run yet)."""

from __future__ import annotations

import json

import yaml
from conftest import ROOT, load_script

read = load_script(ROOT / "studies" / "fa2_noncausal_read.py")
REG = read.BUNDLE / "registered.yaml"


def _doc(tmp_path, pick, control_scale=1.0, drop=0):
    """A run document whose probe flash times are `pick(row, pass)`, the controls their wave time x control_scale."""
    recs = []
    for r in yaml.safe_load(REG.read_text())["shapes"]:
        shape = {k: r[k] for k in read.SHAPE + ("causal", "group")}
        for role in (("control-start", "control-end") if r["role"] == "control" else ("probe",)):
            if r["role"] == "control":
                flash = {p: r[f"before_{p}_s"] * control_scale for p in read.PASSES}
            else:
                flash = {p: pick(r, p) for p in read.PASSES}
            recs.append({"role": role, "backend": "flash", **shape, "fwd_s": flash["fwd"], "bwd_s": flash["bwd"]})
            recs.append({"role": role, "backend": "default", **shape, "fwd_s": r["card_fwd_s"], "bwd_s": r["card_bwd_s"]})
    path = tmp_path / "noncausal.json"
    path.write_text(json.dumps({"records": recs[: len(recs) - drop]}))
    return path


def _run(capsys, path):
    code = read.main([str(path), str(REG)])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_the_registration_is_complete_and_non_causal():
    rule, rows = read.registered(REG)
    probe = [r for r in rows.values() if r["role"] == "probe"]
    assert len(probe) == 17 and not any(r["causal"] for r in probe)
    assert {r["group"] for r in probe} == {"mpt_2k", "long", "cp_ring"}
    assert any(r["seq_q"] != r["seq_kv"] for r in probe)          # the cp ring's half steps
    assert all(r["form_fwd_s"] != r["ratio_fwd_s"] for r in probe)   # the two prices differ: the run can tell them apart


def test_measured_as_the_form_predicts_keeps_it(tmp_path, capsys):
    code, out, _ = _run(capsys, _doc(tmp_path, lambda r, p: r[f"form_{p}_s"] * 1.03))
    assert code == 0 and "verdict: KEEP" in out


def test_measured_as_the_ratio_predicts_reverts(tmp_path, capsys):
    code, out, _ = _run(capsys, _doc(tmp_path, lambda r, p: r[f"ratio_{p}_s"]))
    assert code == 0 and "verdict: REVERT" in out


def test_a_drifted_lease_is_void(tmp_path, capsys):
    code, out, _ = _run(capsys, _doc(tmp_path, lambda r, p: r[f"form_{p}_s"], control_scale=1.15))
    assert code == 0 and "verdict: VOID" in out


def test_a_run_cut_short_is_one_line(tmp_path, capsys):
    code, out, err = _run(capsys, _doc(tmp_path, lambda r, p: r[f"form_{p}_s"], drop=6))
    assert code == 1 and err.startswith("fa2_noncausal_read: ") and err.count("\n") == 1 and "Traceback" not in err
