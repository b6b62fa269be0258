"""Session 46's compileac set (calibration/h200x2-compileac-2026-11-30, validation/compileac.py): the registration against
a fresh --register at its commit, the device script against the registered rows, the shapes new to calibration/, the
ADOPT rule on synthetic runs, the rows into the error bands; the cast fix itself (framework.casts_in_block, OFF)."""

from __future__ import annotations

import pytest
import test_compilefsdp_set
import test_nosync_set
import yaml
from conftest import ROOT, fresh_register_equals, load_script

BUNDLE = ROOT / "calibration" / "h200x2-compileac-2026-11-30"


def script():
    return load_script("validation/compileac.py")


def registered() -> dict:
    return yaml.safe_load((BUNDLE / "registered.yaml").read_text())


def synthetic(tmp_path, key="predicted", jitter=(0.01, -0.01)):
    """A bundle whose processes measure each row's `key` step x exp(jitter[k]), peak inside the registered range
    (test_nosync_set.synthetic with test_compilefsdp_set.as_run's documents)."""
    scale = {r["name"]: r[key]["step_ms"] / r["predicted"]["step_ms"] for r in registered()["rows"]}
    return test_nosync_set.synthetic(tmp_path, scale, jitter, source=BUNDLE, extra_doc=test_compilefsdp_set.as_run())


def test_a_fresh_register_at_the_registering_commit_equals_the_registration(tmp_path, monkeypatch):
    """Registered before session 48 adopt48 switched whole_model_graph and fsdp_free_phases on for torch-compile+fsdp2:
    the fresh --register runs the model as registered (heldout/eager_compilefsdp.before_adopt48)."""
    from simcluster.heldout.eager_compilefsdp import before_adopt48
    from simcluster.llm import eager

    with eager.torch_framework_as(before_adopt48):
        reg = fresh_register_equals(script(), BUNDLE, tmp_path, monkeypatch)
    assert [r["variant"] for r in reg["rows"]].count("single") == 3 and len(reg["rows"]) == 4
    assert all(r["predicted_fixed"]["step_ms"] != r["predicted"]["step_ms"] for r in reg["rows"])


def test_the_device_script_runs_the_registered_rows():
    s = script()
    test_compilefsdp_set.device_script_runs(s, BUNDLE, [f"{p}:{seq}:{mb}:{v}" for p, seq, mb, v, _ in s.SHAPES], orders=2)


def test_the_registered_shapes_are_new_to_calibration():
    from conftest import measured_llm_tokens, registered_tokens, seqs_named_elsewhere

    rows = registered()["rows"]
    assert {r["seq"] for r in rows} <= {384, 1000, 1500, 3840, 3904}   # this helper's own list (session 46)
    assert seqs_named_elsewhere(BUNDLE, {r["seq"] for r in rows}) == []
    assert registered_tokens(rows) & measured_llm_tokens(BUNDLE) == set()


def test_runs_at_the_fixed_steps_adopt_and_at_the_shipped_steps_keep(tmp_path):
    fixed = script().read_out(synthetic(tmp_path / "fixed", "predicted_fixed"))["verdicts"]
    shipped = script().read_out(synthetic(tmp_path / "shipped", "predicted"))["verdicts"]
    gain = {r["name"]: r["predicted"]["step_ms"] / r["predicted_fixed"]["step_ms"] - 1 for r in registered()["rows"]}
    assert sum(gain.values()) / len(gain) * 100 > script().JUDGE["adopt_pts"]   # the set can tell the two apart
    assert fixed["A"].startswith("ADOPT") and shipped["A"].startswith("KEEP"), (fixed, shipped)
    assert shipped["D"] == "MET" and "graphs 3 breaks 4" in shipped["G"], shipped
    loud = script().read_out(synthetic(tmp_path / "loud", "predicted_fixed", jitter=(0.3, -0.3)))["verdicts"]
    assert loud["D"].startswith("NOISE") and loud["A"].startswith("KEEP"), loud


def test_the_set_enters_the_error_bands_one_row_per_shape(tmp_path):
    from simcluster.heldout import eager_compilefsdp, step_sets

    assert eager_compilefsdp.COMPILEAC_BUNDLE in step_sets.STEP_SET_BUNDLES
    assert BUNDLE.name in eager_compilefsdp.COMPILEAC_BUNDLE
    assert eager_compilefsdp.held_out_rows(tmp_path) == []   # registered, not run: no row
    got = eager_compilefsdp.held_out_rows(synthetic(tmp_path / "a"))
    assert len(got) == 4 and all(r["host_flag"] == "registered" for r in got)
    for r, x in zip(got, registered()["rows"], strict=True):   # the shipped model's registered step (the fix is off)
        assert r["predicted_s"] == x["predicted"]["step_ms"] / 1e3 and x["variant"] in r["label"]


def test_the_cast_fix_is_off_and_moves_only_the_compiled_blocks_casts():
    """framework.casts_in_block defaults off; on, a compiled step's weight casts are issued per block (the LM head's and
    the gradient accumulation's stay before the first block), an eager framework is unmoved."""
    from simcluster.heldout.eager_compilefsdp import fixed_framework
    from simcluster.llm import ops
    from simcluster.llm.framework import TORCH_AMP, TORCH_COMPILE
    from simcluster.llm.work import _block_casts

    assert not TORCH_COMPILE.casts_in_block and fixed_framework(TORCH_COMPILE).casts_in_block
    assert fixed_framework(TORCH_AMP) == TORCH_AMP
    casts = [ops.memory("weight_cast", 100.0, count=7 * 4 + 1), ops.memory("weight_recast", 50.0, count=7 * 4),
             ops.memory("grad_accumulate_unsharded", 10.0, count=5)]
    left, inside = _block_casts(casts, 4)
    assert [(o.name, o.count) for o in inside] == [("weight_cast", 7), ("weight_recast", 7)]
    assert [(o.name, o.count) for o in left] == [("weight_cast", 1), ("grad_accumulate_unsharded", 5)]
    assert sum(o.total_bytes for o in left) + 4 * sum(o.total_bytes for o in inside) == pytest.approx(
        sum(o.total_bytes for o in casts))


def test_the_memory_fix_is_on_and_prices_the_compiled_fsdp2_loss_and_root_unit():
    """framework.loss_in_graph (on since the compileac set's rule AM read ADOPT): the runner's FSDP2 under whole-model
    compile keeps 4 bytes a logit at the loss (not eager's 12) and FSDP2's root unit's 8 bytes a parameter beside the
    sharded gradients at the backward's end; the one-GPU compiled step (the loss eager) and eager FSDP2 unmoved."""
    from dataclasses import replace

    from simcluster.heldout.eager_compilefsdp import fixed_framework
    from simcluster.llm import eager, memory
    from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec

    model, batch = TransformerSpec(4, 1024, 2816, 16, 8, 32000, 2048), BatchSpec(4, 2)
    fsdp, single = ParallelSpec(dp=2, zero=3, recompute="full"), ParallelSpec(recompute="full")
    on = fixed_framework(eager.torch_framework(fsdp, compiled=True))
    off = replace(on, loss_in_graph=False)
    a, b = (memory.stage_memories(model, fsdp, batch, 141e9, fw)[0] for fw in (off, on))
    assert eager.torch_framework(fsdp, compiled=True).loss_in_graph
    assert b.logits == pytest.approx(a.logits * memory.COMPILED_LOSS_LOGIT_BYTES / off.logit_bytes)
    assert b.step_end - a.step_end == pytest.approx(memory.FSDP2_ROOT_END_BYTES * (2 * 32000 * 1024 + 1024))
    one = eager.torch_framework(single, compiled=True)
    assert memory.stage_memories(model, single, BatchSpec(2, 2), 141e9, fixed_framework(one)) == \
        memory.stage_memories(model, single, BatchSpec(2, 2), 141e9, one)
    plain = eager.torch_framework(fsdp)
    assert memory.stage_memories(model, fsdp, batch, 141e9, replace(plain, loss_in_graph=True)) == \
        memory.stage_memories(model, fsdp, batch, 141e9, plain)


def test_the_memory_fix_leaves_compiled_fsdp2_without_checkpointing_unmoved():
    """Review C46 item 2: every process rule AM read ran recompute full, so loss_in_graph alone acts there only; a
    compiled FSDP2 answer with recompute none keeps the eager loss's logit bytes and no root-unit term at the step's end
    unless session 49 mem49's compiled_nock_memory (on, x2set49's no-checkpoint row: tests/test_compiled_nock_memory.py)
    extends it there."""
    from dataclasses import replace

    from simcluster.llm import eager, memory
    from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec

    model, batch = TransformerSpec(4, 1024, 2816, 16, 8, 32000, 2048), BatchSpec(4, 2)
    none = ParallelSpec(dp=2, zero=3, recompute="none")
    on = replace(eager.torch_framework(none, compiled=True), compiled_nock_memory=False)
    assert on.loss_in_graph and on.ckpt_in_graph and on.bf16_param_block   # the gate is recompute, nothing else
    assert memory.stage_memories(model, none, batch, 141e9, on) == \
        memory.stage_memories(model, none, batch, 141e9, replace(on, loss_in_graph=False))
    full = ParallelSpec(dp=2, zero=3, recompute="full")
    fw = eager.torch_framework(full, compiled=True)
    assert memory.stage_memories(model, full, batch, 141e9, fw) != \
        memory.stage_memories(model, full, batch, 141e9, replace(fw, loss_in_graph=False))
