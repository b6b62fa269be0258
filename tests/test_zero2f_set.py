"""Session 48's zero2f set (calibration/h200x2-zero2f-2026-11-30, validation/zero2f.py): FSDP2 ZeRO-2's forward re-gather
priced exposed (FrameworkSpec.zero2_exposed with zero2_regather and zero2_fsdp2: llm/fsdp2_zero2.exposed_gathers_s; the
zero2e set's report X made the candidate), zero2d's two variants on GPU-bound 8b and 3b shapes. The registration against
a fresh --register at its commit, the device script against the registered rows, the shapes new to calibration/,
synthetic runs through rules R and C and D's consequence, and the error-band rows; the switch itself: on for zero 2 since adopt2g, zero
3 unmoved, the zero2e set's exposed column reproduced."""

from __future__ import annotations

import math
import re
from dataclasses import replace

import test_nosync_set
import test_zero2e_set
from conftest import ROOT, assert_adopted_zero2_scope, load_script, registered_before_adopt2g

from simcluster.heldout.registration import before_adopt2g

BUNDLE = ROOT / "calibration" / "h200x2-zero2f-2026-11-30"
SHAPES = ("8b-2592x1", "3b-2592x2")


def script():
    return load_script("validation/zero2f.py")


def predicted(bundle=BUNDLE) -> dict:
    return {r["name"]: r["predicted"] for r in test_nosync_set.registered(bundle)["rows"]}


def synthetic(tmp_path, scale=None, jitter=(0.001, -0.001, 0.0), drop=(), bundle=BUNDLE):
    """test_zero2e_set.synthetic on this bundle (test_zero2g_set's on its own)."""
    return test_zero2e_set.synthetic(tmp_path, scale, jitter, drop, source=bundle)


def at(key: str, bundle=BUNDLE) -> dict:
    """Synthetic scales putting every row at its `key` column."""
    p = predicted(bundle)
    return {n: p[n][key] / p[n]["step_ms"] for n in p}


def test_a_fresh_register_at_the_registering_commit_equals_the_registration(tmp_path, monkeypatch):
    reg, p = registered_before_adopt2g(script(), BUNDLE, tmp_path, monkeypatch), predicted()
    assert [(r["name"], r["processes"]) for r in reg["rows"]] == [("8b-2592x1-regather", 3), ("8b-2592x1-gathered", 3),
                                                                 ("3b-2592x2-regather", 2), ("3b-2592x2-gathered", 2)]
    assert reg["judge"] == dict(load_script("validation/zero2e.py").JUDGE)   # zero2e's floors, by import
    for shape in SHAPES:
        a, b = p[f"{shape}-regather"], p[f"{shape}-gathered"]
        assert a["step_ms"] == b["step_ms"] and a["host_share"] < 0.06   # shipped: no regather, GPU-bound
        assert math.log(a["step_ms_candidate"] / b["step_ms_candidate"]) >= reg["judge"]["adopt_min_pct"] / 100   # deciding
    assert {r["name"]: r["reshard_after_backward"] for r in reg["rows"]} == {
        f"{s}-{v}": v == "regather" for s in SHAPES for v in ("regather", "gathered")}


def test_the_device_script_runs_the_registered_rows_abba():
    test_zero2e_set.assert_device_rows_abba(BUNDLE, script().TIMED_STEPS, ("2592:1", "2592:2"),
                                            ("validation/zero2f.py", "validation/zero2.py", "validation/zero2e.py"))


def test_the_registered_shapes_are_new_to_calibration():
    test_nosync_set.assert_new_to_calibration(BUNDLE)


def test_runs_at_the_shipped_step_reject_the_candidate_at_its_column_adopt_it_and_c_vetoes(tmp_path):
    s = script()
    shipped = s.read_out(synthetic(tmp_path / "shipped"))["verdicts"]
    assert list(shipped) == ["N", "M", "B", "P", "R", "C", "D"]
    assert shipped["R"].startswith("REJECT") and shipped["C"].startswith("SHIPPED BETTER"), shipped
    assert shipped["D"] == "EXPOSED REGATHER REJECTED; step within; memory met", shipped
    cand = s.read_out(synthetic(tmp_path / "cand", at("step_ms_candidate")))["verdicts"]
    assert cand["R"].startswith("ADOPT") and cand["C"].startswith("CANDIDATE BETTER"), cand
    assert cand["D"] == "EXPOSED REGATHER ADOPTED; step within; memory met", cand
    # the development reading: the ratio at the candidate's, both variants 6% below it (the gathered step's own miss)
    low = s.read_out(synthetic(tmp_path / "low", {n: 0.94 * x for n, x in at("step_ms_candidate").items()}))["verdicts"]
    assert low["R"].startswith("ADOPT") and low["C"].startswith("SHIPPED BETTER"), low
    assert low["D"].startswith("EXPOSED REGATHER REJECTED"), low   # C vetoes


def test_noise_missing_processes_and_a_registration_without_the_candidate(tmp_path):
    check_noise_missing_and_bare(script(), synthetic, tmp_path, "3b", 2592, 2)


def check_noise_missing_and_bare(read, synthetic, tmp_path, preset: str, seq: int, mb: int) -> None:
    """A zero2f-shaped set's read-out (zero2f's, zero2g's): loud processes read NOISE, a shape's gathered processes
    dropped read NO DATA in R, a registration without its candidate column is refused (exit 1)."""
    loud = read.read_out(synthetic(tmp_path / "loud", jitter=(0.3, -0.3, 0.1)))["verdicts"]
    assert loud["D"].startswith("NOISE") and loud["R"].startswith("UNDECIDED (NOISE)"), loud
    cut = read.read_out(synthetic(tmp_path / "cut", drop={f"{preset}-{seq}x{mb}-gathered-r{k}" for k in (1, 2)}))
    assert len(cut["left"]) == 2 and f"{preset} {seq}:{mb}: NO DATA" in cut["verdicts"]["R"]
    bare = synthetic(tmp_path / "bare")
    text = (bare / "registered.yaml").read_text()
    (bare / "registered.yaml").write_text(re.sub(r"\n    step_ms_candidate: [\d.]+", "", text))
    assert read.main([str(bare)]) == 1


def test_the_switch_is_adopted_for_zero_2_leaves_zero_3_and_reproduces_the_zero2e_exposed_column():
    from simcluster.heldout.eager_regimes import regime_predict
    from simcluster.llm import eager, fsdp2_zero2

    assert_adopted_zero2_scope("zero2_exposed")   # on for zero 2 since adopt2g: the steps below from before it
    assert fsdp2_zero2.exposed_gathers_s(0.5, 4, 0.25) == 0.5 + 3 * 0.25 and fsdp2_zero2.exposed_gathers_s(0.5, 1, 9.0) == 0.5

    def step(mode, **kw):
        with eager.torch_framework_as(lambda fw: replace(before_adopt2g(fw), **kw)):
            return regime_predict("3b", 2, mode, "h200", microbatches=4, seq=2592)["step_ms"]

    on = {"zero2_fsdp2": True, "zero2_regather": True, "zero2_exposed": True}
    assert step("fsdp", **on) == step("fsdp")   # zero 3 unmoved
    assert step("fsdp-zero2", zero2_exposed=True) == step("fsdp-zero2")   # without zero2_regather: nothing to expose
    assert step("fsdp-zero2", **on) > step("fsdp-zero2", zero2_fsdp2=True, zero2_regather=True)   # exposed > overlapped
    zero2e = load_script("validation/zero2e.py")   # development: its report X, priced by the product's switch
    for name, p in test_zero2e_set.predicted().items():
        if name.endswith("regather"):
            preset, shape = name.split("-")[0], name.split("-")[1]
            seq, mb = (int(x) for x in shape.split("x"))
            got = zero2e.step_candidate(preset, seq, mb, "fsdp-zero2", regather=True, exposed=True)
            assert math.isclose(got, p["step_ms_exposed"], abs_tol=0.01), (name, got, p["step_ms_exposed"])


def test_the_set_enters_the_error_bands_as_fsdp_zero2_rows(tmp_path):
    from simcluster.heldout import eager_nosync, step_sets

    assert eager_nosync.ZERO2F_BUNDLE in step_sets.STEP_SET_BUNDLES and BUNDLE.name in eager_nosync.ZERO2F_BUNDLE
    got = eager_nosync.held_out_rows(synthetic(tmp_path, {"8b-2592x1-regather": 1.1}))
    assert len(got) == 4 and {r["zero"] for r in got} == {2}
    a = next(r for r in got if "8b" in r["label"] and "regather" in r["label"])
    assert math.isclose(a["measured_s"], predicted()["8b-2592x1-regather"]["step_ms"] / 1e3 * 1.1, rel_tol=0.01)
