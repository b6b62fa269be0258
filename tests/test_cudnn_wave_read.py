"""studies/cudnn_wave_read.py: the cuDNN probe's read-out on synthetic documents built from its registration (no run
yet), and the registration itself (new shapes, the groups the brief asks for, predictions that can be told apart)."""

from __future__ import annotations

import json

import pytest
import yaml
from conftest import ROOT, load_script, probe_document

read = load_script(ROOT / "studies" / "cudnn_wave_read.py")
REG = read.BUNDLE / "registered.yaml"
CAL = ROOT / "calibration"


def _doc(tmp_path, pick, control_scale=1.0, drop=(), fail=()):
    """A run document: the probe's default times pick(row, pass), flash the registered 'fa2' time (or 1 ms), the
    controls their prior times x control_scale (start and end); probe shapes at indices `drop` left out, at `fail` failed."""
    return probe_document(tmp_path / "cudnn.json", yaml.safe_load(REG.read_text())["shapes"], read.SHAPE + ("causal", "group"),
                          pick, control_scale, backend="default", other=lambda r, p: r.get(f"fa2_{p}_s") or 1e-3,
                          skip=drop, fail=fail)


def _run(capsys, path):
    code = read.main([str(path), str(REG)])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def _measured_shapes() -> set[tuple]:
    """(d, b, h, kv, s_q, s_kv, causal) of every attention shape the bundles before this one timed."""
    from simcluster.llm.attention_kernels import backend_rows

    seen = {(r["head_dim"], r["batch"], r["heads"], r["kv_heads"], r["seq_q"], r["seq_kv"], bool(r["causal"]))
            for r in backend_rows()}
    seen |= {(r["head_dim"], 1, r["heads"], r["kv_heads"], r["seq"], r["seq"], True)
             for r in json.loads((CAL / "h200x1-attention-gqa-2026-11-29" / "gqa.json").read_text())["records"]}
    for name in ("h200x1-attention-wave-2026-11-29/wave.json", "h200x1-attention-noncausal-2026-11-29/noncausal.json"):
        for r in json.loads((CAL / name).read_text())["records"]:
            sq, skv = r.get("seq_q", r.get("seq")), r.get("seq_kv", r.get("seq"))
            seen.add((r["head_dim"], r["batch"], r["heads"], r["kv_heads"], sq, skv, bool(r.get("causal", True))))
    for path in [*CAL.glob("h200x1-attention-clocks-2026-11-27/*.json"), *CAL.glob("h200x4-cp-attention-2026-11-27/*.json")]:
        doc = json.loads(path.read_text())
        a = doc["attention"]
        seen |= {(a["head_dim"], a["batch"], a["heads"], a["kv_heads"], r["seq"], r["seq"], bool(a["causal"]))
                 for r in doc["records"]}
    return seen


def test_the_registration_covers_new_shapes_that_can_tell_the_two_apart():
    rule, rows = read.registered(REG)
    probe = [k for k, r in rows.items() if r["role"] == "probe"]
    assert len(probe) >= 50
    assert not set(probe) & _measured_shapes()                       # no bundle measured any probe shape
    assert {k for k, r in rows.items() if r["role"] == "control"} <= _measured_shapes()
    assert {k[0] for k in probe} == {64, 128}
    assert sum(not k[6] for k in probe) >= 3 and sum(k[2] != k[3] for k in probe) >= 3   # non-causal, GQA
    assert min(k[4] for k in probe) == 4096 and max(k[4] for k in probe) == 131072
    waves = [rows[k]["units_fwd"] / rows[k]["slots_fwd"] for k in probe]
    assert min(waves) < 1 < max(waves) and max(waves) > 50         # one partial wave to many waves
    assert all(rows[k]["form_fwd_s"] != rows[k]["card_fwd_s"] for k in probe)
    assert float(rule["max_ratio"]) == 0.5 and float(rule["max_mean_abs"]) == 0.05


def test_measured_as_the_form_predicts_adopts_it(tmp_path, capsys):
    code, out, _ = _run(capsys, _doc(tmp_path, lambda r, p: r[f"form_{p}_s"] * 1.03))
    assert code == 0 and "verdict: ADOPT: the form meets the rule over every probe shape" in out


def test_measured_as_the_card_predicts_changes_nothing(tmp_path, capsys):
    code, out, _ = _run(capsys, _doc(tmp_path, lambda r, p: r[f"card_{p}_s"]))
    assert code == 0 and "verdict: NOT ADOPTED" in out


def test_the_form_right_only_at_full_waves_is_adopted_there(tmp_path, capsys):
    def pick(r, p):
        return r[f"form_{p}_s"] if r["units_fwd"] >= 2 * r["slots_fwd"] else r[f"form_{p}_s"] * 2.5
    code, out, _ = _run(capsys, _doc(tmp_path, pick))
    assert code == 0 and "verdict: ADOPT FOR >= 2 FORWARD WAVES ONLY" in out


def test_a_drifted_lease_is_void(tmp_path, capsys):
    code, out, _ = _run(capsys, _doc(tmp_path, lambda r, p: r[f"form_{p}_s"], control_scale=1.15))
    assert code == 0 and "verdict: VOID" in out


@pytest.mark.parametrize("lost, word", [((3,), "ADOPT"), (tuple(range(10)), "INCOMPLETE")])
def test_missing_or_failed_default_records_are_listed_and_judged_by_share(tmp_path, capsys, lost, word):
    for kw in ({"drop": lost}, {"fail": lost}):
        code, out, _ = _run(capsys, _doc(tmp_path, lambda r, p: r[f"form_{p}_s"] * 1.03, **kw))
        assert code == 0 and f"{len(lost)} probe shape(s) without a default record" in out
        assert f"verdict: {word}" in out


def _truncated(path, keep_probes: int):
    """The document of a run cut short: control-start, the first `keep_probes` probe shapes' records, no control-end."""
    doc = json.loads(path.read_text())
    seen, recs = [], []
    for rec in doc["records"]:
        if rec["role"] == "control-end":
            continue
        if rec["role"] == "probe":
            key = read._key(rec)
            if key not in seen:
                seen.append(key)
            if len(seen) > keep_probes:
                continue
        recs.append(rec)
    path.write_text(json.dumps({"records": recs}))
    return path


@pytest.mark.parametrize("scale", [1.0, 1.15])
def test_a_run_cut_short_is_incomplete_never_void(tmp_path, capsys, scale):
    """A truncated document lacks its end control: below 90% of the shapes it is INCOMPLETE on the share; with every
    probe shape but no end control, INCOMPLETE on the control (not measured is not off tolerance), even if the start
    control drifted."""
    n = sum(r["role"] == "probe" for r in read.registered(REG)[1].values())
    half = _truncated(_doc(tmp_path, lambda r, p: r[f"form_{p}_s"], control_scale=scale), n // 2)
    code, out, _ = _run(capsys, half)
    assert code == 0 and f"verdict: INCOMPLETE ({n // 2} of {n} probe shapes measured)" in out
    (tmp_path / "b").mkdir()
    whole = _truncated(_doc(tmp_path / "b", lambda r, p: r[f"form_{p}_s"], control_scale=scale), n)
    code, out, _ = _run(capsys, whole)
    assert code == 0 and "verdict: INCOMPLETE (control not measured: " in out and "control-end" in out


def test_the_real_read_prints_the_readmes_result(capsys):
    """calibration/h200x1-attention-cudnn-2026-11-30/README.md's Result: 4.2% vs 13.0% over 114 passes, 7.6 vs 39.8%
    below 2 forward waves, controls within, ADOPT."""
    code = read.main([])
    out = capsys.readouterr().out
    assert code == 0
    assert "all probe passes          4.2%   13.0%    4.6%   (114 passes)" in out
    assert "<  2 fwd waves            7.6%   39.8%   14.7%   (18 passes)" in out
    assert "(default vs its prior time, tolerance 8%): all within" in out
    assert "verdict: ADOPT: the form meets the rule over every probe shape\n" in out


def test_bad_input_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    for text in ("not json", json.dumps({"records": [{"role": "probe"}]}), json.dumps({"nothing": 1})):
        bad.write_text(text)
        code, out, err = _run(capsys, bad)
        assert code == 1 and err.startswith("cudnn_wave_read: ") and err.count("\n") == 1 and "Traceback" not in err
    code, _, err = _run(capsys, tmp_path / "absent.json")
    assert code == 1 and "No such file" in err
