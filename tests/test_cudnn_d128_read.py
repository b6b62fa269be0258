"""studies/cudnn_d128_read.py: the cudnnd128 probe's read-out on synthetic documents built from its registration (no
run yet), and the registration itself (new shapes, the cudnnstep set's call shapes, predictions that can be told apart)."""

from __future__ import annotations

import json

import pytest
import yaml
from conftest import ROOT, load_script

read = load_script("studies/cudnn_d128_read.py")
wave_test = load_script("tests/test_cudnn_wave_read.py")
device = load_script("calibration/h200x1-attention-cudnnd128-2026-11-30/device_run.py")
REG = read.BUNDLE / "registered.yaml"
STEP_CALLS = ROOT / "calibration" / "h200x2-eager-cudnnstep-2026-11-29" / "runs" / "sdpa.json"


def _doc(tmp_path, pick, control_scale=1.0, drop=(), no_end=False):
    """A run document: every probe / stepcall shape in the three harnesses at pick(row, harness, pass) seconds (a
    clock of 1700 MHz sustained, 1980 in bursts), the controls sustained at their prior times x control_scale; probe
    shapes at indices `drop` left out; no_end: the end controls left out (a run cut short)."""
    recs, i = [], -1
    for r in yaml.safe_load(REG.read_text())["shapes"]:
        shape = {k: r[k] for k in read.SHAPE} | {"group": r["group"], "causal": True, "backend": "default"}
        if r["role"] == "control":
            for role in ("control-start",) + (() if no_end else ("control-end",)):
                recs.append(shape | {"role": role, "harness": "sustained", "clock": {"sm_MHz": 1700.0}}
                            | {f"{p}_s": r[f"before_{p}_s"] * control_scale for p in read.PASSES})
            continue
        i += r["role"] == "probe"
        if r["role"] == "probe" and i in drop:
            continue
        for h in read.HARNESSES:
            recs.append(shape | {"role": r["role"], "harness": h, "clock": {"sm_MHz": 1700.0 if h == "sustained" else 1980.0}}
                        | {f"{p}_s": pick(r, h, p) for p in read.PASSES})
    path = tmp_path / "cudnnd128.json"
    path.write_text(json.dumps({"records": recs}))
    return path


def _run(capsys, path):
    code = read.main([str(path), str(REG)])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def _step_reading(r, h, p):
    """The cudnnstep reading's world: bursts as that set measured (form / 1.08 at head size 128), sustained at the form."""
    fast = 1.08 if r["head_dim"] == 128 else 1.04
    return r[f"form_{p}_s"] / fast if h != "sustained" else r[f"form_{p}_s"] * 1.01


def test_the_registration_covers_new_shapes_and_the_step_calls():
    rule, rows = read.registered(REG)
    probe = [k for k, r in rows.items() if r["role"] == "probe"]
    seen = wave_test._measured_shapes()
    seen |= {(r["head_dim"], r["batch"], r["heads"], r["kv_heads"], r["seq_q"], r["seq_kv"], r["causal"])
             for r in json.loads((ROOT / "calibration" / "h200x1-attention-cudnn-2026-11-30" / "cudnn.json").read_text())["records"]}
    calls = {c["name"] for c in json.loads(STEP_CALLS.read_text())["calls"]}
    steps = {(d, 1, h, kv, s) for _, d, h, kv, s in device.step_shapes()}
    seen |= {k + (k[4], True) for k in steps}
    assert not {k + (k[4], True) for k in probe} & seen                    # no bundle measured any probe shape
    assert {k for k, r in rows.items() if r["role"] == "stepcall"} == steps
    assert {r["group"] for r in rows.values() if r["role"] == "stepcall"} == calls
    assert {k + (k[4], True) for k, r in rows.items() if r["role"] == "control"} <= seen
    long128 = [k for k in probe if rows[k]["group"] == "d128long"]
    assert len(long128) >= 10 and all(k[0] == 128 and k[4] >= 16384 for k in long128)
    assert max(k[4] for k in long128) == 131072 and sum(k[2] != k[3] for k in long128) >= 5
    assert {rows[k]["group"] for k in probe} == {"d128long", "d64", "short"}
    assert all(rows[k][f"boost_{p}_s"] != rows[k][f"form_{p}_s"] for k in probe for p in read.PASSES)
    assert float(rule["max_ratio"]) == 0.5 and float(rule["harness_min"]) == 0.04


def test_the_registered_plan_is_the_device_scripts():
    rows = read.registered(REG)[1]
    planned = [(role, g, shape) for role, g, shape in device.plan() if role != "control-end"]
    assert [(("control" if role.startswith("control") else role), shape) for role, _, shape in planned] == \
        [(r["role"], k) for k, r in rows.items()]


def test_the_cudnnstep_reading_as_the_harness_explains_it(tmp_path, capsys):
    code, out, _ = _run(capsys, _doc(tmp_path, _step_reading))
    assert code == 0
    assert "verdict adopt: KEEP" in out and "verdict d128: HOLDS" in out and "verdict explain: EXPLAINED" in out
    assert "median SM clock, burst-ones, head size 128 >= 16K: 1980 MHz" in out


def test_a_form_slow_under_the_development_timer_reads_slow_and_unexplained(tmp_path, capsys):
    code, out, _ = _run(capsys, _doc(tmp_path, lambda r, h, p: r[f"form_{p}_s"] / (1.08 if r["head_dim"] == 128 else 1.0)))
    assert code == 0 and "verdict d128: SLOW" in out and "verdict explain: NOT EXPLAINED" in out


def test_measured_as_the_candidate_predicts_adopts_it(tmp_path, capsys):
    code, out, _ = _run(capsys, _doc(tmp_path, lambda r, h, p: r[f"boost_{p}_s"]))
    assert code == 0 and "verdict adopt: ADOPT boost" in out


def test_a_drifted_lease_is_void_and_a_short_run_incomplete(tmp_path, capsys):
    code, out, _ = _run(capsys, _doc(tmp_path, _step_reading, control_scale=1.15))
    assert code == 0 and "verdict VOID" in out and "verdict adopt" not in out
    code, out, _ = _run(capsys, _doc(tmp_path, _step_reading, drop=(0, 1, 2)))
    assert code == 0 and "verdict INCOMPLETE (15 of 18" in out
    code, out, _ = _run(capsys, _doc(tmp_path, _step_reading, drop=(4,)))
    assert code == 0 and "1 probe shape(s) without a sustained record" in out and "verdict explain: EXPLAINED" in out
    code, out, _ = _run(capsys, _doc(tmp_path, _step_reading, no_end=True))
    assert code == 0 and "verdict INCOMPLETE (control" in out


@pytest.mark.parametrize("text, word", [("{}", "not the probe's document"), ('{"records": []}', "no record")])
def test_a_bad_document_is_one_line(tmp_path, capsys, text, word):
    path = tmp_path / "cudnnd128.json"
    path.write_text(text)
    code, out, err = _run(capsys, path)
    assert code == 1 and word in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_the_device_script_runs_on_a_stand_in_torch_and_its_document_reads(tmp_path, monkeypatch, capsys):
    """device_run.measure() end to end with a stand-in torch (no GPU here: each timed call 10 us longer than the one before, from 1 ms; no nvidia-smi): one
    record a shape and harness, in plan order, that the read-out takes as a document."""
    import itertools
    import sys
    from unittest import mock

    fake = mock.MagicMock(__version__="0", version=mock.MagicMock(cuda="0"))
    fake.cuda.Event.return_value.elapsed_time.side_effect = itertools.count(1.0, 0.01)   # later calls longer
    fake.cuda.get_device_name.return_value = "stand-in"
    fake.backends.cudnn.version.return_value = 0
    fake.profiler.profile.return_value.__enter__.return_value.key_averages.return_value = []
    for name in ("torch", "torch.nn", "torch.nn.functional", "torch.nn.attention", "torch.profiler"):
        monkeypatch.setitem(sys.modules, name, getattr(fake, name[6:]) if name != "torch" else fake)
    monkeypatch.setattr(device, "IDLE_S", 0.0)
    monkeypatch.setattr("subprocess.run", mock.MagicMock(side_effect=OSError("no nvidia-smi")))
    doc = device.measure()
    capsys.readouterr()
    plan = device.plan()
    assert len(doc["records"]) == sum(1 if role.startswith("control") else 3 for role, _, _ in plan)
    assert all("error" not in r and r["clock"] == {"clock_samples": 0} for r in doc["records"])
    path = tmp_path / "cudnnd128.json"
    path.write_text(json.dumps(doc))
    meas = read.measured(path)
    rows = read.registered(REG)[1]
    assert {k for (_, _, k) in meas} == set(rows)
    assert len(read.errors(meas, rows)) == 2 * 3 * sum(r["role"] != "control" for r in rows.values())
