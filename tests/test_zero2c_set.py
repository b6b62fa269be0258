"""Session 47's zero2c set (calibration/h200x2-zero2c-2026-11-30, validation/zero2c.py): FSDP2 ZeRO-2's forward
re-gather alone on a GPU-bound 8b shape, 4 processes a variant. The registration against a fresh --register at its
commit, the device script against the registered rows, the shape new to calibration/, synthetic runs through rule R
(ADOPT at the regather's column, REJECT at the product's, UNDECIDED between), and the error-band rows."""

from __future__ import annotations

import math
import re

import test_nosync_set
import test_zero2_set
import test_zero2b_set
from conftest import ROOT, load_script, registered_before_adopt2g

BUNDLE = ROOT / "calibration" / "h200x2-zero2c-2026-11-30"
ZERO2 = "8b-1440x2-zero2"


def script():
    return load_script("validation/zero2c.py")


def synthetic(tmp_path, scale=None, jitter=(0.002, -0.002, 0.0, 0.001), drop=()):
    """test_zero2_set.synthetic on this bundle, a GPU-bound set's small jitter (0.2%)."""
    return test_zero2_set.synthetic(tmp_path, scale, jitter, drop, source=BUNDLE)


def zero2_predicted() -> dict:
    """The zero2 row's registered predictions: step_ms (the product, regather off), step_ms_regather, step_ms_nowait."""
    return {r["name"]: r["predicted"] for r in test_nosync_set.registered(BUNDLE)["rows"]}[ZERO2]


def test_a_fresh_register_at_the_registering_commit_equals_the_registration(tmp_path, monkeypatch):
    reg, p = registered_before_adopt2g(script(), BUNDLE, tmp_path, monkeypatch), zero2_predicted()
    assert p["step_ms_regather"] / p["step_ms"] > 1.02 and p["step_ms"] / p["step_ms_nowait"] < 1.005, p   # GPU-bound: the wait at 0
    assert p["host_share"] < 0.1 and [r["processes"] for r in reg["rows"]] == [4, 4]
    assert {r["name"]: r["reshard_after_forward"] for r in reg["rows"]} == {ZERO2: False, "8b-1440x2-control": True}


def test_the_device_script_runs_the_registered_rows_abba():
    text = test_zero2b_set.assert_abba_device_script(BUNDLE, script(), "1440:2")
    assert script().TIMED_STEPS == 5 and "validation/zero2c.py" in text and "validation/zero2b.py" in text   # hashed


def test_the_registered_shape_is_new_to_calibration():
    test_nosync_set.assert_new_to_calibration(BUNDLE)


def assert_rule_r_both_ways(s, synthetic, tmp_path, row: str, p: dict, first: str) -> None:
    """Rule R on synthetic runs of set script s: at the product's step REJECT (R's line starting `first`), at the
    `row`'s regather column ADOPT, halfway (log) UNDECIDED; p the row's predictions (tests/test_zero2d_set.py's too)."""
    out = s.read_out(synthetic(tmp_path))
    v = out["verdicts"]
    assert list(v)[-2:] == ["R", "D"] and v["D"] == "REGATHER REJECTED; step within; memory met", v
    assert v["R"].startswith(first) and "with the regather" in v["R"], v
    assert len(out["procs"]) == 8 and not out["left"]
    on = s.read_out(synthetic(tmp_path / "on", {row: p["step_ms_regather"] / p["step_ms"]}))["verdicts"]
    assert on["R"].startswith("ADOPT") and on["D"].startswith("REGATHER ADOPTED"), on
    mid = math.sqrt(p["step_ms_regather"] / p["step_ms"])   # halfway (log): within the floor of both columns
    assert s.read_out(synthetic(tmp_path / "mid", {row: mid}))["verdicts"]["R"].startswith("UNDECIDED")


def test_runs_at_the_product_s_step_reject_the_regather_and_at_its_column_adopt_it(tmp_path):
    assert_rule_r_both_ways(script(), synthetic, tmp_path, ZERO2, zero2_predicted(),
                            "REJECT | 8b 1440:2: REJECT: zero2 / control measured")


def test_noise_missing_processes_and_a_registration_without_the_regather(tmp_path):
    loud = script().read_out(synthetic(tmp_path / "loud", jitter=(0.3, -0.3, 0.0, 0.1)))["verdicts"]
    assert loud["D"].startswith("NOISE") and loud["R"].startswith("UNDECIDED (NOISE)"), loud
    cut = script().read_out(synthetic(tmp_path / "cut", drop={f"8b-1440x2-control-r{k}" for k in range(1, 5)}))
    assert len(cut["left"]) == 4 and cut["verdicts"]["R"].startswith("NO DATA")
    bare = synthetic(tmp_path / "bare")
    text = (bare / "registered.yaml").read_text()
    (bare / "registered.yaml").write_text(re.sub(r"\n    step_ms_regather: [\d.]+", "", text))
    assert script().main([str(bare)]) == 1


def test_the_power_reads_the_development_sets_gpu_bound_rows():
    """The sd that plans the power: the zero2 set's 0.5b 3456:4 and the nosync set's 1b 2112:4 processes (development)."""
    sd, dof, lines = script().development()
    assert dof == 4 and 0.002 < sd < 0.01 and len(lines) == 2, (sd, dof, lines)
    assert script().zero2b.power(0.0271, sd)[0] == 0.02   # 4 + 4 processes: the limit is the floor, below the gap


def test_the_set_enters_the_error_bands_as_fsdp_rows(tmp_path):
    got = test_zero2b_set.assert_enters_as_zero2_and_control_rows(tmp_path, "ZERO2C_BUNDLE", BUNDLE, synthetic, ZERO2,
                                                                   zero2_predicted()["step_ms"])
    z = next(r for r in got if r["label"].startswith("8b fsdp zero2"))
    assert z["host_bound"] is False
