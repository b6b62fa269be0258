"""Session 46's zero2b set (calibration/h200x2-zero2b-2026-11-30, validation/zero2b.py): the zero2 set's wait rule on
one 8b shape with 4 processes a variant. The registration against a fresh --register at its commit, the device script
against the registered rows, the shape new to calibration/, synthetic runs through the rules (A and G, whose readings
of a step near the wait-without-regather prediction disagree: the README's said confound), and the error-band rows."""

from __future__ import annotations

import math
import re

import test_nosync_set
import test_zero2_set
from conftest import ROOT, assert_adopted_zero2_scope, load_script, registered_before_adopt2g

from simcluster.heldout.registration import before_adopt2g

BUNDLE = ROOT / "calibration" / "h200x2-zero2b-2026-11-30"
ZERO2 = "8b-448x1-zero2"


def script():
    return load_script("validation/zero2b.py")


def registered() -> dict:
    return test_nosync_set.registered(BUNDLE)


def synthetic(tmp_path, scale=None, jitter=(0.01, -0.01, 0.0, 0.005), drop=()):
    return test_zero2_set.synthetic(tmp_path, scale, jitter, drop, source=BUNDLE)


def zero2_predicted() -> dict:
    return next(r["predicted"] for r in registered()["rows"] if r["name"] == ZERO2)


def test_a_fresh_register_at_the_registering_commit_equals_the_registration(tmp_path, monkeypatch):
    reg = registered_before_adopt2g(script(), BUNDLE, tmp_path, monkeypatch)
    p = zero2_predicted()
    assert p["step_ms"] / p["step_ms_nowait"] > 1.05 and p["step_ms_regather"] / p["step_ms_regather_nowait"] > 1.05, p
    assert p["step_ms_regather"] > p["step_ms"] and [r["processes"] for r in reg["rows"]] == [4, 4]
    assert {r["name"]: r["reshard_after_forward"] for r in reg["rows"]} == {ZERO2: False, "8b-448x1-control": True}


def assert_abba_device_script(bundle, s, shape: str) -> str:
    """The bundle's device_run.sh runs its registered rows' processes, and no other, zero2 / control in ABBA order
    (one shape, 8b `shape` as SEQ:MB, --steps s.TIMED_STEPS, the zero2 variant with --reshard-after-forward false);
    returns the script's text (test_zero2c_set's too)."""
    text = (bundle / "device_run.sh").read_text()
    assert f'--warmup 2 --steps {s.TIMED_STEPS} --profile 0 --mode fsdp --grad-accum 4"' in text
    assert '[ "$1" = zero2 ] && flag="--reshard-after-forward false"' in text and f"--preset 8b --shapes {shape}" in text
    calls = re.findall(r"^one (zero2|control) (\d)$", text, re.M)
    assert [v for v, _ in calls] == ["zero2", "control", "control", "zero2", "zero2", "control", "control", "zero2"]
    stem = "8b-{}x{}".format(*shape.split(":"))
    ran = {f"{stem}-{v}-r{k}" for v, k in calls}
    rows = test_nosync_set.registered(bundle)["rows"]
    assert ran == {f"{r['process']}-r{k}" for r in rows for k in range(1, r["processes"] + 1)}
    return text


def test_the_device_script_runs_the_registered_rows_abba():
    assert_abba_device_script(BUNDLE, script(), "448:1") and script().TIMED_STEPS == 7


def test_the_registered_shape_is_new_to_calibration():
    test_nosync_set.assert_new_to_calibration(BUNDLE)


def test_runs_at_the_registered_steps_adopt_the_wait_and_g_rejects_it(tmp_path):
    """Measured at the product's with-wait step: A ADOPTs; G, under the regather, sees the regather-without-wait step
    within 0.3% of it and REJECTs (the confound the README says before the run)."""
    out = script().read_out(synthetic(tmp_path))
    v = out["verdicts"]
    assert list(v)[-2:] == ["G", "D"] and v["D"] == "WAIT ADOPTED; step within; memory met", v
    assert v["A"].startswith("ADOPT | 8b 448:1: ADOPT") and v["G"].startswith("REJECT | 8b 448:1: REJECT"), v
    assert len(out["procs"]) == 8 and not out["left"]


def test_runs_at_the_regather_with_the_wait_adopt_by_g_and_not_by_a(tmp_path):
    p = zero2_predicted()
    v = script().read_out(synthetic(tmp_path, {ZERO2: p["step_ms_regather"] / p["step_ms"]}))["verdicts"]
    assert v["G"].startswith("ADOPT") and not v["A"].startswith("ADOPT"), v
    nowait = {ZERO2: p["step_ms_nowait"] / p["step_ms"]}   # neither term: A rejects the wait
    assert script().read_out(synthetic(tmp_path / "n", nowait))["verdicts"]["A"].startswith("REJECT")


def test_noise_missing_processes_and_a_registration_without_the_regather(tmp_path):
    loud = script().read_out(synthetic(tmp_path / "loud", jitter=(0.3, -0.3, 0.0, 0.1)))["verdicts"]
    assert loud["D"].startswith("NOISE") and loud["G"].startswith("UNDECIDED (NOISE)"), loud
    cut = script().read_out(synthetic(tmp_path / "cut", drop={f"8b-448x1-control-r{k}" for k in range(1, 5)}))
    assert len(cut["left"]) == 4 and cut["verdicts"]["A"].startswith("NO DATA") and cut["verdicts"]["G"].startswith("NO DATA")
    bare = synthetic(tmp_path / "bare")
    text = (bare / "registered.yaml").read_text()
    (bare / "registered.yaml").write_text(re.sub(r"\n    step_ms_regather_nowait: [\d.]+", "", text))
    assert script().main([str(bare)]) == 1


def test_the_power_is_the_normal_chance_and_the_limit_the_rule_s():
    s = script()
    limit, chance = s.power(0.0756, 0.049)
    assert math.isclose(limit, 2 * 0.049 * math.sqrt(0.5)) and 0.5 < chance < 0.6
    assert s.power(0.0756, 0.001)[0] == 0.02 and s.power(0.0756, 0.001)[1] > 0.999   # the floor; no noise: certain
    assert s.power(0.01, 0.049)[1] < 0.05   # a gap inside the limit: ADOPT only beyond the with-wait side, rarely


def assert_enters_as_zero2_and_control_rows(tmp_path, bundle_key: str, bundle, synthetic, zero2: str, step_ms: float) -> list:
    """A zero2 / control set (zero2b, zero2c) enters the error bands through heldout/eager_nosync: no rows without runs/,
    a zero-2 and a zero-3 row with them, the zero2 row at its processes' step; returns the rows (shared, cold review
    B47 item 12)."""
    from simcluster.heldout import eager_nosync, step_sets

    key = getattr(eager_nosync, bundle_key)
    assert key in step_sets.STEP_SET_BUNDLES and bundle.name in key
    assert eager_nosync.held_out_rows(tmp_path) == []
    got = eager_nosync.held_out_rows(synthetic(tmp_path / "a", {zero2: 1.1}))
    assert len(got) == 2 and sorted(r["zero"] for r in got) == [2, 3]
    z = next(r for r in got if r["label"].startswith("8b fsdp zero2"))
    assert math.isclose(z["measured_s"], step_ms / 1e3 * 1.1, rel_tol=0.01)
    return got


def test_the_set_enters_the_error_bands_as_fsdp_rows(tmp_path):
    assert_enters_as_zero2_and_control_rows(tmp_path, "ZERO2B_BUNDLE", BUNDLE, synthetic, ZERO2, zero2_predicted()["step_ms"])


def test_the_regather_is_adopted_for_zero_2_and_moves_zero_2_only():
    """FrameworkSpec.zero2_regather (llm/work.py): on for zero 2 since adopt2g (before it, off); on, the zero 3 control is
    unchanged and a GPU-bound zero 2 step (where the wait moves nothing) grows by its forward gathers."""
    from dataclasses import replace

    from simcluster.heldout.eager_regimes import regime_predict
    from simcluster.llm import eager

    assert_adopted_zero2_scope("zero2_regather")   # on for zero 2 since adopt2g: the steps below from before it
    s = script()

    def step(mode, **flags):
        with eager.torch_framework_as(lambda fw: replace(before_adopt2g(fw), **flags)):
            return regime_predict("8b", 1, mode, "h200", microbatches=4, seq=2048)["step_ms"]

    assert step("fsdp", zero2_regather=True) == step("fsdp")
    assert step("fsdp-zero2", zero2_wait=False) < 1.005 * step("fsdp-zero2")   # GPU-bound: the wait ends inside
    assert step("fsdp-zero2", zero2_regather=True) > 1.01 * step("fsdp-zero2")
    with eager.torch_framework_as(before_adopt2g):   # the registration's model (zero2b.step_regather adds its switch)
        registered = s.step_regather("8b", 2048, 1, "fsdp-zero2", wait=True)
    assert registered == step("fsdp-zero2", zero2_regather=True)
