"""Session 48's compck set (calibration/h200x2-compck-2026-11-30, validation/compck.py): FSDP2 + whole-model compile +
full checkpointing, the shipped model and the candidate framework.whole_model_graph registered side by side, three
processes a shape. The registration against a fresh --register at its commit, both columns against the model today,
the device script against the registered rows (ABBA, three rounds, the budget), the shapes new to calibration/, rule R
on synthetic runs each way, the rows into the error bands in the FSDP+compile+ckpt regime."""

from __future__ import annotations

import test_compilefsdp_set
import test_nosync_set
import test_repeats47_set
import yaml
from conftest import ROOT, load_script

BUNDLE = ROOT / "calibration" / "h200x2-compck-2026-11-30"


def script():
    return load_script("validation/compck.py")


def registered() -> dict:
    return yaml.safe_load((BUNDLE / "registered.yaml").read_text())


def synthetic(tmp_path, scale=None, jitter=(0.01, -0.01, 0.0)):
    """A bundle whose processes measure each row's shipped registered step x scale[name] x exp(jitter[k])."""
    return test_nosync_set.synthetic(tmp_path, scale, jitter, (), BUNDLE, extra_doc=test_compilefsdp_set.as_run())


def test_a_fresh_register_at_the_registering_commit_equals_the_registration(tmp_path, monkeypatch):
    test_repeats47_set.registered_before_adopt48(script(), BUNDLE, tmp_path, monkeypatch)


def test_both_columns_are_the_model_before_adopt48_and_the_candidate_is_off_by_default():
    """`predicted` the product before session 48 adopt48 (before_adopt48), `predicted_candidate` that with
    whole_model_graph on, as validation/compck.candidate still prices it (fsdp_free_phases off)."""
    from dataclasses import replace

    from simcluster.heldout.eager_compilefsdp import before_adopt48, predict
    from simcluster.llm import eager
    from simcluster.llm.framework import FrameworkSpec

    assert FrameworkSpec.__dataclass_fields__["whole_model_graph"].default is False   # on by eager_compiled only
    for r in registered()["rows"]:
        with eager.torch_framework_as(before_adopt48):
            assert predict(r["preset"], r["seq"], r["micro_batch"], "fsdp") == r["predicted"], r["name"]
            with eager.torch_framework_as(lambda fw: replace(fw, whole_model_graph=True)):
                assert predict(r["preset"], r["seq"], r["micro_batch"], "fsdp") == r["predicted_candidate"], r["name"]
        assert script().candidate(r["preset"], r["seq"], r["micro_batch"]) == r["predicted_candidate"], r["name"]
        assert r["predicted_candidate"]["step_ms"] < r["predicted"]["step_ms"]
        assert r["predicted_candidate"]["peak_mem_GiB"] == r["predicted"]["peak_mem_GiB"]   # a time term, not memory


def test_the_device_script_runs_the_registered_rows_abba_within_the_budget():
    test_repeats47_set.check_abba_script(script(), BUNDLE, registered()["rows"], worst_s=300)   # session 48: <= 300 s


def test_the_registered_shapes_are_new_to_calibration():
    from conftest import measured_llm_tokens, registered_tokens, seqs_named_elsewhere

    rows = registered()["rows"]
    assert {r["seq"] for r in rows} <= {480, 736, 1248, 1696, 2336, 3232, 3872}   # this helper's own list (session 48)
    assert seqs_named_elsewhere(BUNDLE, {r["seq"] for r in rows}) == []
    assert registered_tokens(rows) & measured_llm_tokens(BUNDLE) == set()


def test_rule_r_reads_adopt_reject_and_undecided(tmp_path):
    rows = {r["name"]: r for r in registered()["rows"]}
    # measured at the candidate's steps: the candidate within, the shipped model not (1b: +8.7% off)
    at_cand = {n: r["predicted_candidate"]["step_ms"] / r["predicted"]["step_ms"] for n, r in rows.items()}
    v = script().read_out(synthetic(tmp_path / "a", at_cand))["verdicts"]
    assert v["R"].startswith("ADOPT") and v["MC"].startswith("within") and v["D"].startswith("MODEL"), v
    shipped = script().read_out(synthetic(tmp_path / "b"))["verdicts"]   # measured at the shipped steps
    assert shipped["R"].startswith("REJECT") and shipped["D"] == "MET", shipped
    both = script().read_out(synthetic(tmp_path / "c", {n: 0.7 for n in rows}))["verdicts"]   # both far off
    assert both["R"] == "UNDECIDED: candidate not within, shipped not within", both
    loud = script().read_out(synthetic(tmp_path / "d", jitter=(0.3, -0.3, 0.0)))["verdicts"]
    assert loud["R"].startswith("UNDECIDED: process noise"), loud


def test_the_set_enters_the_error_bands_in_the_compile_ckpt_regime(tmp_path):
    from simcluster.heldout import eager_compilefsdp

    check_bands(eager_compilefsdp.COMPCK_BUNDLE, BUNDLE, synthetic(tmp_path / "a"), registered()["rows"])


def check_bands(listed: str, bundle, ran, rows: list[dict]) -> None:
    """A compiled FSDP2 set (compck's, compck2's) listed in REGISTERED_STEP_SETS as `listed`: no row before its run, and
    from the synthetic bundle `ran` one row per registered row, three processes each, the shipped column entering."""
    from simcluster.heldout import eager_compilefsdp, step_sets
    from simcluster.trust.build import eager_residuals

    assert listed in step_sets.STEP_SET_BUNDLES and bundle.name in listed
    assert eager_compilefsdp.held_out_rows(bundle) == [] or (bundle / "runs").is_dir()
    got = eager_compilefsdp.held_out_rows(ran)
    assert len(got) == 2 and all(r["host_flag"] == "registered" and r["processes"] == 3 for r in got)
    for r, x in zip(got, rows, strict=True):
        assert r["predicted_s"] == x["predicted"]["step_ms"] / 1e3   # the shipped column enters, not a candidate's
    assert {x.regime for x in eager_residuals(got)} == {"llm | PyTorch eager | FSDP+compile+ckpt | bf16"}


def _layer_and_loss(fw, recompute: str = "full", dp: int = 2, zero: int = 3):
    from dataclasses import replace

    from simcluster.heldout.eager_regimes import layout_of, model_of
    from simcluster.llm import compiled, vocab_ops
    from simcluster.llm.spec import BatchSpec
    from simcluster.runner.llm_decoder import PRESETS

    par, _, _ = layout_of("fsdp+ckpt")
    par = replace(par, recompute=recompute, dp=dp, zero=zero)
    model, batch = model_of({"model": PRESETS["1b"]}, 2048), BatchSpec(2 * dp, 2, "bf16")
    return compiled.layer_ops(model, par, batch, fw)[1], vocab_ops.head_forward(model, par, batch, fw), model, batch


def test_the_candidate_drops_down_projs_recompute_and_prices_the_loss_inductors_only_where_the_graph_has_them():
    from dataclasses import replace

    from simcluster.heldout.eager_compilefsdp import fits
    from simcluster.heldout.eager_regimes import regime_framework
    from simcluster.llm import compiled

    on, _ = regime_framework("fsdp+ckpt", "h200", None, None, fits(), True)   # the registered rows' framework (shipped)
    assert on.ckpt_in_graph and on.loss_in_graph and on.whole_model_graph   # on since session 48 adopt48
    fw = replace(on, whole_model_graph=False)
    bwd_off, loss_off, model, batch = _layer_and_loss(fw)
    bwd_on, loss_on, _, _ = _layer_and_loss(on)
    names = lambda ops: [o.name for o in ops]   # noqa: E731
    assert "recompute.down" in names(bwd_off) and "recompute.down" not in names(bwd_on)
    assert [n for n in names(bwd_off) if n != "recompute.down"] == names(bwd_on)   # nothing else leaves the backward
    assert "logits_upcast" in names(loss_off) and "logits_upcast" not in names(loss_on)
    ce = next(o for o in loss_on if o.name == "cross_entropy")
    n = batch.micro_batch * model.seq * model.vocab
    assert ce.bytes == n * compiled.COMPILED_LOSS_BYTES[0]
    # no checkpointing: neither term (the compiled rows without ckpt do not move)
    assert _layer_and_loss(fw, "none")[:2] == _layer_and_loss(on, "none")[:2]
    # the checkpoint around the compiled block (not in the graph): the whole forward re-run, the loss eager
    around = replace(fw, ckpt_in_graph=False)
    assert _layer_and_loss(around)[:2] == _layer_and_loss(replace(around, whole_model_graph=True))[:2]
