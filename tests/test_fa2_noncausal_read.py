"""studies/fa2_noncausal_read.py: the non-causal flash probe's read-out on synthetic documents built from its
registration (no run yet)."""

from __future__ import annotations

import yaml
from conftest import ROOT, load_script, probe_document

read = load_script(ROOT / "studies" / "fa2_noncausal_read.py")
REG = read.BUNDLE / "registered.yaml"


def _doc(tmp_path, pick, control_scale=1.0, drop=0):
    """A run document whose probe flash times are `pick(row, pass)`, the controls their wave time x control_scale."""
    shapes = yaml.safe_load(REG.read_text())["shapes"]
    return probe_document(tmp_path / "noncausal.json", shapes, read.SHAPE + ("causal", "group"), pick, control_scale, drop)


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


def test_a_failed_default_record_reads_n_a_and_the_verdict_stands(tmp_path, capsys):
    """A failed record of torch's default backend (reported only) reads n/a; the verdict is the flash records'."""
    import json

    path = _doc(tmp_path, lambda r, p: r[f"form_{p}_s"] * 1.03)
    whole = _run(capsys, path)[1]
    doc = json.loads(path.read_text())
    for r in [r for r in doc["records"] if r["backend"] == "default"][::2]:
        del r["fwd_s"], r["bwd_s"]
        r["error"] = "RuntimeError: no kernel for this shape"
    path.write_text(json.dumps(doc))
    code, out, err = _run(capsys, path)
    assert code == 0 and err == "" and "verdict: KEEP" in out and "torch's default backend failed on" in out
    assert "    n/a" in out and whole.split("mean |error|")[1] == out.split("mean |error|")[1]
