"""studies/fa2_wave_read.py and studies/fa2_wave.py: the wave probe's read-out on synthetic documents built from its
registration (no run yet), and the form's pieces."""

from __future__ import annotations

import json

import pytest
import yaml
from conftest import ROOT, load_script, probe_document

read = load_script(ROOT / "studies" / "fa2_wave_read.py")
form = load_script(ROOT / "studies" / "fa2_wave.py")
REG = read.BUNDLE / "registered.yaml"


def _doc(tmp_path, pick, control_scale=1.0, drop=0):
    """A run document whose flash times are what `pick(row, pass)` says (default: the card's curve)."""
    shapes = yaml.safe_load(REG.read_text())["shapes"]
    return probe_document(tmp_path / "wave.json", shapes, read.SHAPE, pick, control_scale, drop)


def _run(capsys, path):
    code = read.main([str(path), str(REG)])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_the_registration_is_complete():
    rule, rows = read.registered(REG)
    probe = [r for r in rows.values() if r["role"] == "probe"]
    assert len(probe) == 62 and sum(r["role"] == "control" for r in rows.values()) == 2
    assert float(rule["max_ratio"]) == 0.5 and float(rule["max_mean_abs"]) == 0.05
    assert any(r["ctas_fwd"] < r["slots_fwd"] for r in probe)   # some shapes are one partial wave


def test_measured_as_the_form_predicts_adopts(tmp_path, capsys):
    code, out, _ = _run(capsys, _doc(tmp_path, lambda r, p: r[f"form_{p}_s"] * (1.02 if r["seq"] % 3 else 0.98)))
    assert code == 0 and "verdict: ADOPT: the form meets the rule over every probe shape" in out


def test_measured_as_today_predicts_changes_nothing(tmp_path, capsys):
    code, out, _ = _run(capsys, _doc(tmp_path, lambda r, p: r[f"today_{p}_s"]))
    assert code == 0 and "verdict: NOT ADOPTED: nothing changes" in out


def test_the_form_right_only_in_full_waves_is_a_partial_adoption(tmp_path, capsys):
    def pick(r, p):
        full = r["ctas_fwd"] >= 2 * r["slots_fwd"]
        return r[f"form_{p}_s"] if full else r[f"today_{p}_s"]
    code, out, _ = _run(capsys, _doc(tmp_path, pick))
    assert code == 0 and "verdict: ADOPT FOR >= 2 FORWARD WAVES ONLY" in out


def test_a_drifted_lease_voids_the_verdict(tmp_path, capsys):
    code, out, _ = _run(capsys, _doc(tmp_path, lambda r, p: r[f"form_{p}_s"], control_scale=1.12))
    assert code == 0 and "verdict: VOID" in out


@pytest.mark.parametrize("how, words", [
    ("missing", "No such file"), ("garbage", "not the probe's document"), ("short", "without a flash record"),
    ("zero", "a time not > 0"), ("extra", "not registered")])
def test_bad_input_is_one_line(tmp_path, capsys, how, words):
    path = _doc(tmp_path, lambda r, p: r[f"form_{p}_s"])
    doc = json.loads(path.read_text())
    if how == "missing":
        path = tmp_path / "absent.json"
    elif how == "garbage":
        path.write_text("{not json")
    elif how == "short":
        doc["records"] = [r for r in doc["records"] if not (r["role"] == "probe" and r["seq"] == 65536)]
    elif how == "zero":
        doc["records"][5]["bwd_s"] = 0.0
    else:
        first = next(r for r in doc["records"] if r["role"] == "probe" and r["backend"] == "flash")
        doc["records"].append(dict(first, seq=2048))
    if how in ("short", "zero", "extra"):
        path.write_text(json.dumps(doc))
    code, out, err = _run(capsys, path)
    assert code == 1 and out == "" and len(err.strip().splitlines()) == 1 and words in err


def test_a_registration_missing_a_prediction_is_one_line(tmp_path, capsys):
    doc = yaml.safe_load(REG.read_text())
    del doc["shapes"][3]["form_bwd_s"]
    reg = tmp_path / "registered.yaml"
    reg.write_text(yaml.safe_dump(doc))
    assert read.main([str(_doc(tmp_path, lambda r, p: r[f"form_{p}_s"])), str(reg)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "lacks form_bwd_s" in err[0]


def test_the_forms_pieces():
    # causal forward tiles: d 128 (128 x 64) query block i sees 2 (i + 1) key blocks; backward d 128 (64 x 128) key
    # block j sees the query blocks from 2 j on
    assert form.cta_tiles("fwd", 128, 1, 1, 512) == [2, 4, 6, 8]
    assert form.cta_tiles("bwd", 128, 1, 1, 512) == [8, 6, 4, 2]
    assert form.cta_tiles("fwd", 64, 2, 1, 256) == [1, 2, 1, 2]
    assert form.makespan([4.0, 1.0, 1.0, 1.0], 2) == 4.0 and form.makespan([1.0, 1.0, 1.0, 4.0], 2) == 5.0
    consts = {("fwd", 64): (1e-6, 0.0)}
    assert form.form_time_s(consts, "fwd", 1, 8, 8, 4096, 64) == pytest.approx(32e-6)   # one partial wave: the last CTA
    assert form.fluid_time_s(consts, "fwd", 1, 8, 8, 4096, 64) == pytest.approx(8 * 528e-6 / 264)
    with pytest.raises(form.FormError, match="split-KV"):
        form.form_time_s(consts, "fwd", 1, 1, 1, 4096, 64)
    with pytest.raises(form.FormError, match="head size 96"):
        form.cta_tiles("fwd", 96, 1, 1, 4096)


def _fail_default(path, every: int = 3):
    """Every `every`-th default-backend record replaced by a failed one (no times, an error)."""
    doc = json.loads(path.read_text())
    defaults = [r for r in doc["records"] if r["backend"] == "default"]
    for r in defaults[::every]:
        del r["fwd_s"], r["bwd_s"]
        r["error"] = "RuntimeError: no kernel for this shape"
    path.write_text(json.dumps(doc))
    return len(defaults[::every])


def test_a_failed_default_record_reads_n_a_and_the_verdict_stands(tmp_path, capsys):
    """torch's default backend is only reported: its failed records read n/a and the rule is judged on flash alone,
    with the same verdict and means as the whole run's."""
    whole = _run(capsys, _doc(tmp_path, lambda r, p: r[f"form_{p}_s"]))[1]
    n = _fail_default(_doc(tmp_path, lambda r, p: r[f"form_{p}_s"]))
    code, out, err = _run(capsys, tmp_path / "wave.json")
    assert code == 0 and err == "" and "verdict: ADOPT: the form meets the rule" in out
    assert f"torch's default backend failed on {n} record(s)" in out and "    n/a" in out
    assert whole.split("mean |error|")[1] == out.split("mean |error|")[1]   # means, controls, verdict unchanged
    assert out.count("    n/a") < whole.count("\n")   # only the failed shapes' card cells


def test_a_failed_flash_record_still_stops_the_read(tmp_path, capsys):
    path = _doc(tmp_path, lambda r, p: r[f"form_{p}_s"])
    doc = json.loads(path.read_text())
    rec = next(r for r in doc["records"] if r["backend"] == "flash" and r["role"] == "probe")
    del rec["fwd_s"], rec["bwd_s"]
    rec["error"] = "RuntimeError: out of memory"
    path.write_text(json.dumps(doc))
    code, out, err = _run(capsys, path)
    assert code == 1 and out == "" and len(err.strip().splitlines()) == 1 and "flash" in err and "failed" in err
