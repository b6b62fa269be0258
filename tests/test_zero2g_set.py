"""Session 48's zero2g set (calibration/h200x2-zero2g-2026-11-30, validation/zero2g.py): FSDP2 ZeRO-2 as one candidate of
four switches (FrameworkSpec.zero2_fsdp2, zero2_regather, zero2_exposed and zero2_bf16_weights: llm/fsdp2_zero2.py), zero2d's
two variants on GPU-bound 8b and 3b shapes. The registration against a fresh --register at its commit, the device script
against the registered rows, the shapes new to calibration/, synthetic runs through rules R, C and D's consequence, and
the error-band rows; the new switch itself: on for zero 2 since adopt2g (off elsewhere), zero 3 unmoved, the forward's weight casts and nothing else."""

from __future__ import annotations

import math
from dataclasses import replace

import test_nosync_set
import test_zero2e_set
import test_zero2f_set
from conftest import ROOT, assert_adopted_zero2_scope, load_script, registered_before_adopt2g

from simcluster.heldout.registration import before_adopt2g

BUNDLE = ROOT / "calibration" / "h200x2-zero2g-2026-11-30"
SHAPES = ("8b-2656x1", "3b-2656x2")
WORD = "FSDP2 ZERO-2 CANDIDATE"


def script():
    return load_script("validation/zero2g.py")


def predicted() -> dict:
    return test_zero2f_set.predicted(BUNDLE)


def synthetic(tmp_path, scale=None, jitter=(0.001, -0.001, 0.0), drop=()):
    return test_zero2f_set.synthetic(tmp_path, scale, jitter, drop, bundle=BUNDLE)


def at(key: str) -> dict:
    return test_zero2f_set.at(key, BUNDLE)


def test_a_fresh_register_at_the_registering_commit_equals_the_registration(tmp_path, monkeypatch):
    reg, p = registered_before_adopt2g(script(), BUNDLE, tmp_path, monkeypatch), predicted()
    assert [(r["name"], r["processes"]) for r in reg["rows"]] == [("8b-2656x1-regather", 2), ("8b-2656x1-gathered", 2),
                                                                 ("3b-2656x2-regather", 2), ("3b-2656x2-gathered", 2)]
    assert reg["judge"] == dict(load_script("validation/zero2e.py").JUDGE)   # zero2e's floors, by import
    assert {k: reg["rules"][k] for k in "NMBPRC"} == {k: load_script("validation/zero2f.py").RULES[k] for k in "NMBPRC"}
    for shape in SHAPES:
        a, b = p[f"{shape}-regather"], p[f"{shape}-gathered"]
        assert a["step_ms"] == b["step_ms"] and a["host_share"] < 0.055   # shipped: no regather, GPU-bound
        assert math.log(a["step_ms_candidate"] / b["step_ms_candidate"]) >= reg["judge"]["adopt_min_pct"] / 100   # deciding
        assert b["step_ms_candidate"] < b["step_ms"]   # the gathered step below the shipped one (no forward casts)
    assert {r["name"]: r["reshard_after_backward"] for r in reg["rows"]} == {
        f"{s}-{v}": v == "regather" for s in SHAPES for v in ("regather", "gathered")}


def test_the_device_script_runs_the_registered_rows_abba():
    test_zero2e_set.assert_device_rows_abba(BUNDLE, script().TIMED_STEPS, ("2656:1", "2656:2"),
                                            ("validation/zero2g.py", "validation/zero2.py", "validation/zero2e.py",
                                             "validation/zero2f.py"))
    text = (BUNDLE / "device_run.sh").read_text()
    assert "BUDGET_S=${BUDGET_S:-190}" in text and 'guarded "$stem" 45 ' in text   # worst case 190 + 45 = 235 s


def test_the_registered_shapes_are_new_to_calibration():
    test_nosync_set.assert_new_to_calibration(BUNDLE)


def test_runs_at_the_shipped_step_reject_the_candidate_at_its_column_adopt_it_and_c_vetoes(tmp_path):
    s = script()
    shipped = s.read_out(synthetic(tmp_path / "shipped"))["verdicts"]
    assert list(shipped) == ["N", "M", "B", "P", "R", "C", "D"]
    assert shipped["R"].startswith("REJECT") and shipped["C"].startswith("SHIPPED BETTER"), shipped
    assert shipped["D"] == f"{WORD} REJECTED; step within; memory met", shipped
    cand = s.read_out(synthetic(tmp_path / "cand", at("step_ms_candidate")))["verdicts"]
    assert cand["R"].startswith("ADOPT") and cand["C"].startswith("CANDIDATE BETTER"), cand
    assert cand["D"] == f"{WORD} ADOPTED; step within; memory met", cand
    # the ratio at the candidate's, both variants 6% above it (the forward casts real after all): C vetoes
    high = s.read_out(synthetic(tmp_path / "high", {n: 1.06 * x for n, x in at("step_ms_candidate").items()}))["verdicts"]
    assert high["R"].startswith("ADOPT") and high["C"].startswith("SHIPPED BETTER"), high
    assert high["D"].startswith(f"{WORD} REJECTED"), high


def test_noise_missing_processes_and_a_registration_without_the_candidate(tmp_path):
    test_zero2f_set.check_noise_missing_and_bare(script(), synthetic, tmp_path, "3b", 2656, 2)


def test_the_bf16_weights_switch_is_adopted_leaves_zero_3_and_drops_only_the_forward_casts():
    from simcluster.hardware.gpu import load_gpu
    from simcluster.heldout.eager_regimes import regime_predict
    from simcluster.llm import eager, framework, fsdp2_zero2

    assert_adopted_zero2_scope("zero2_bf16_weights")   # on for zero 2 since adopt2g: the steps below from before it
    assert framework.TORCHTITAN_FSDP2.cast_bytes == 0   # no autocast there: the switch has nothing to drop

    def step(mode, **kw):
        with eager.torch_framework_as(lambda fw: replace(before_adopt2g(fw), **kw)):
            return regime_predict("8b", 1, mode, "h200", microbatches=4, seq=2656)["step_ms"]

    four = {"zero2_fsdp2": True, "zero2_regather": True, "zero2_exposed": True, "zero2_bf16_weights": True}
    assert step("fsdp", **four) == step("fsdp")   # zero 3 unmoved
    assert step("fsdp-zero2", zero2_bf16_weights=True) == step("fsdp-zero2")   # without zero2_fsdp2: off
    with_casts, without = step("fsdp-zero2", zero2_fsdp2=True), step("fsdp-zero2", zero2_fsdp2=True, zero2_bf16_weights=True)
    # GPU-bound: the gathered step falls by the forward casts' HBM time (cast_bytes / 2 = 6 bytes a parameter, 4
    # micro-batches), to 10% (their host issue leaves with them)
    from simcluster.heldout.eager import H200, model_of
    from simcluster.heldout.eager_regimes import layout_of
    from simcluster.llm.param_counts import stage_params
    from simcluster.runner.llm_decoder import PRESETS

    par = layout_of("fsdp-zero2")[0]
    params = stage_params(model_of({"model": PRESETS["8b"]}, 2656), par, 0).total
    casts_ms = 4 * load_gpu(ROOT / H200)[0].memory_time_s(6.0 * params) * 1e3
    assert 0.9 * casts_ms < with_casts - without < 1.1 * casts_ms, (with_casts - without, casts_ms)
    assert fsdp2_zero2.forward_casts(par, framework.TORCHTITAN_FSDP2, ["c"]) == []   # adopted there (no casts anyway)
    assert fsdp2_zero2.forward_casts(replace(par, zero=3), framework.TORCHTITAN_FSDP2, ["c"]) == ["c"]   # zero 2 only

def test_the_set_enters_the_error_bands_as_fsdp_zero2_rows(tmp_path):
    from simcluster.heldout import eager_nosync, step_sets

    assert eager_nosync.ZERO2G_BUNDLE in step_sets.STEP_SET_BUNDLES and BUNDLE.name in eager_nosync.ZERO2G_BUNDLE
    got = eager_nosync.held_out_rows(synthetic(tmp_path, {"8b-2656x1-gathered": 0.9}))
    assert len(got) == 4 and {r["zero"] for r in got} == {2}
    b = next(r for r in got if "8b" in r["label"] and "gathered" in r["label"])
    assert math.isclose(b["measured_s"], predicted()["8b-2656x1-gathered"]["step_ms"] / 1e3 * 0.9, rel_tol=0.01)
