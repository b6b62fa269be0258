"""Session 48's zero2e set (calibration/h200x2-zero2e-2026-11-30, validation/zero2e.py): FSDP2 ZeRO-2 re-priced as one
candidate (FrameworkSpec.zero2_fsdp2 with the regather, llm/fsdp2_zero2.py), zero2d's two variants (regather: FSDP2's
default reshard after backward; gathered: --reshard-after-backward false) on GPU-bound 1b and 3b shapes. The
registration against a fresh --register at its commit, the device script against the registered rows, the shapes new
to calibration/, synthetic runs through rules R (the candidate's ratio against the shipped one), X (the exposed
alternative) and C (the columns' mean |error|), D's consequence, and the error-band rows; the candidate itself: off by
default, zero 3 unmoved, its reduce-scatter one call per block."""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace

import test_nosync_set
import test_zero2_set
from conftest import ROOT, assert_adopted_zero2_scope, load_script, registered_before_adopt2g

from simcluster.heldout.registration import before_adopt2g

BUNDLE = ROOT / "calibration" / "h200x2-zero2e-2026-11-30"
SHAPES = ("3b-2400x2", "1b-3296x2")


def script():
    return load_script("validation/zero2e.py")


def predicted() -> dict:
    return {r["name"]: r["predicted"] for r in test_nosync_set.registered(BUNDLE)["rows"]}


def synthetic(tmp_path, scale=None, jitter=(0.001, -0.001, 0.0), drop=(), source=BUNDLE):
    """test_zero2_set.synthetic on this bundle (or `source`: test_zero2f_set's), the gathered processes' documents
    recording fsdp_reshard_after_backward false as the runner does."""
    bundle = test_zero2_set.synthetic(tmp_path, scale, jitter, drop, source=source)
    for path in (bundle / "runs").glob("*-gathered-r*.json"):
        head, body = path.read_text().split("\n", 1)
        path.write_text(head + "\n" + json.dumps(json.loads(body) | {"fsdp_reshard_after_backward": False}))
    return bundle


def at(key: str, regather_key: str | None = None) -> dict:
    """Synthetic scales putting every row at its `key` column (the regather rows at `regather_key` where given)."""
    p = predicted()
    return {n: p[n][regather_key if regather_key and n.endswith("regather") else key] / p[n]["step_ms"] for n in p}


def test_a_fresh_register_at_the_registering_commit_equals_the_registration(tmp_path, monkeypatch):
    reg, p = registered_before_adopt2g(script(), BUNDLE, tmp_path, monkeypatch), predicted()
    assert [(r["name"], r["processes"]) for r in reg["rows"]] == [("1b-3296x2-regather", 2), ("1b-3296x2-gathered", 2),
                                                                 ("3b-2400x2-regather", 3), ("3b-2400x2-gathered", 3)]
    for shape in SHAPES:
        a, b = p[f"{shape}-regather"], p[f"{shape}-gathered"]
        assert a["step_ms"] == b["step_ms"] and a["host_share"] < 0.1   # shipped: no regather, GPU-bound
        gap = math.log(a["step_ms_candidate"] / b["step_ms_candidate"])
        assert reg["judge"]["adopt_min_pct"] / 100 <= gap and math.log(a["step_ms_exposed"] / a["step_ms_candidate"]) > gap
    assert {r["name"]: r["reshard_after_backward"] for r in reg["rows"]} == {
        f"{s}-{v}": v == "regather" for s in SHAPES for v in ("regather", "gathered")}


def assert_device_rows_abba(bundle, timed_steps: int, shapes: tuple, pys: tuple) -> None:
    """The bundle's device_run.sh runs every registered process once, FSDP2 zero 2 with the gathered variant's flag,
    ABBA within each of `shapes`, naming `pys` (hashed into runs/commit.txt); test_zero2f_set's too."""
    text = (bundle / "device_run.sh").read_text()
    assert (f'--warmup 2 --steps {timed_steps} --profile 0 --mode fsdp --grad-accum 4 --reshard-after-forward '
            'false"') in text and '[ "$3" = gathered ] && flag="--reshard-after-backward false"' in text
    calls = re.findall(r"^one (\S+) (\S+) (regather|gathered) (\d)$", text, re.M)
    rows = test_nosync_set.registered(bundle)["rows"]
    assert calls and {f"{p}-{s.replace(':', 'x')}-{v}-r{k}" for p, s, v, k in calls} == {
        f"{r['process']}-r{k}" for r in rows for k in range(1, r["processes"] + 1)}
    assert len(calls) == sum(r["processes"] for r in rows)
    for shape in shapes:   # ABBA within each shape
        order = [v[0] for _, s, v, _ in calls if s == shape]
        assert "".join(order) in ("rggrrg", "grrg", "rggr"), order
    for py in pys:
        assert py in text


def test_the_device_script_runs_the_registered_rows_abba():
    assert_device_rows_abba(BUNDLE, script().TIMED_STEPS, ("2400:2", "3296:2"),
                            ("validation/zero2e.py", "validation/zero2.py", "validation/zero2b.py", "validation/zero2d.py"))


def test_the_registered_shapes_are_new_to_calibration():
    test_nosync_set.assert_new_to_calibration(BUNDLE)


def test_runs_at_the_shipped_step_reject_the_candidate_and_at_its_column_adopt_it(tmp_path):
    s = script()
    shipped = s.read_out(synthetic(tmp_path / "shipped"))["verdicts"]
    assert list(shipped) == ["N", "M", "B", "P", "R", "X", "C", "D"]
    assert shipped["R"].startswith("REJECT") and shipped["X"].startswith("UNDECIDED"), shipped   # X: beyond both columns
    assert shipped["C"].startswith("TIE") and shipped["D"] == "FSDP2 ZERO-2 REJECTED; step within; memory met", shipped
    cand = s.read_out(synthetic(tmp_path / "cand", at("step_ms_candidate")))["verdicts"]
    assert cand["R"].startswith("ADOPT") and cand["X"].startswith("REJECT") and cand["C"].startswith("TIE")
    assert cand["D"] == "FSDP2 ZERO-2 ADOPTED; step within; memory met", cand
    worse = s.read_out(synthetic(tmp_path / "worse", {n: 0.98 if n.endswith("regather") else 1.03 for n in at("step_ms")}))[
        "verdicts"]   # A below, B above the shipped step: the candidate moves both the wrong way
    assert worse["C"].startswith("SHIPPED BETTER") and worse["D"].startswith("FSDP2 ZERO-2 REJECTED"), worse   # C vetoes
    exposed = s.read_out(synthetic(tmp_path / "exposed", at("step_ms_candidate", "step_ms_exposed")))["verdicts"]
    assert exposed["X"].startswith("ADOPT") and not exposed["R"].startswith("ADOPT"), exposed
    assert exposed["D"].startswith("FSDP2 ZERO-2 REJECTED") or exposed["D"].startswith("FSDP2 ZERO-2 UNDECIDED"), exposed


def test_noise_missing_processes_and_a_registration_without_the_columns(tmp_path):
    loud = script().read_out(synthetic(tmp_path / "loud", jitter=(0.3, -0.3, 0.1)))["verdicts"]
    assert loud["D"].startswith("NOISE") and loud["X"].startswith("UNDECIDED (NOISE)"), loud
    cut = script().read_out(synthetic(tmp_path / "cut", drop={f"3b-2400x2-gathered-r{k}" for k in (1, 2, 3)}))
    assert len(cut["left"]) == 3 and "3b 2400:2: NO DATA" in cut["verdicts"]["R"]
    for key in ("step_ms_exposed", "step_ms_candidate"):
        bare = synthetic(tmp_path / key)
        text = (bare / "registered.yaml").read_text()
        (bare / "registered.yaml").write_text(re.sub(rf"\n    {key}: [\d.]+", "", text))
        assert script().main([str(bare)]) == 1


def test_the_candidate_is_adopted_for_zero_2_leaves_zero_3_and_reduces_once_a_block():
    from simcluster.heldout.eager_regimes import regime_predict
    from simcluster.llm import eager, framework, fsdp2_zero2
    from simcluster.llm.spec import ParallelSpec

    assert_adopted_zero2_scope("zero2_fsdp2")   # on for zero 2 since adopt2g: the steps below from before it
    assert fsdp2_zero2.group_bucket_params(10, 3) == 4 and fsdp2_zero2.group_bucket_params(5, 0) == 5
    assert not fsdp2_zero2.applies(ParallelSpec(dp=2, zero=3), replace(framework.MEGATRON, zero2_fsdp2=True))

    def step(mode, **kw):
        with eager.torch_framework_as(lambda fw: replace(before_adopt2g(fw), **kw)):
            return regime_predict("3b", 2, mode, "h200", microbatches=4, seq=2400)["step_ms"]

    assert step("fsdp", zero2_fsdp2=True, zero2_regather=True) == step("fsdp")   # zero 3 unmoved
    assert step("fsdp-zero2", zero2_fsdp2=True) < step("fsdp-zero2")   # 28 calls a backward in place of ~460 buckets


def test_the_power_reads_the_zero2d_set_s_processes():
    sd, dof = load_script("validation/zero2d.py").development(ROOT / "calibration" / "h200x2-zero2d-2026-11-30")
    assert dof == 6 and 0.001 < sd < 0.01, (sd, dof)


def test_the_set_enters_the_error_bands_as_fsdp_zero2_rows(tmp_path):
    from simcluster.heldout import eager_nosync, step_sets

    assert eager_nosync.ZERO2E_BUNDLE in step_sets.STEP_SET_BUNDLES and BUNDLE.name in eager_nosync.ZERO2E_BUNDLE
    got = eager_nosync.held_out_rows(synthetic(tmp_path, {"3b-2400x2-regather": 1.1}))
    assert len(got) == 4 and {r["zero"] for r in got} == {2}
    a = next(r for r in got if "3b" in r["label"] and "regather" in r["label"])
    assert math.isclose(a["measured_s"], predicted()["3b-2400x2-regather"]["step_ms"] / 1e3 * 1.1, rel_tol=0.01)
