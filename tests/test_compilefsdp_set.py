"""Session 46's compile + checkpointing set (calibration/h200x2-compilefsdp-2026-11-30, validation/compilefsdp.py): the
registration against a fresh --register at its commit, the device script against the registered rows, the shapes new
to calibration/, synthetic runs through the rules and into the error bands; the model's compiled + checkpointed block."""

from __future__ import annotations

import math
import re

import pytest
import test_nosync_set
import yaml
from conftest import ROOT, fresh_register_equals, load_script

BUNDLE = ROOT / "calibration" / "h200x2-compilefsdp-2026-11-30"
RUNNER = {"single": ("single", 1, "layer"), "fsdp": ("fsdp", 2, "model")}


def script():
    return load_script("validation/compilefsdp.py")


def registered(bundle=BUNDLE) -> dict:
    return yaml.safe_load((bundle / "registered.yaml").read_text())


def as_run(scope=None):
    """extra_doc for test_nosync_set.synthetic: each process's document as the runner writes this set's (its mode,
    ranks, --compile-scope, --ac-mode full, the compile report); `scope`: every process's --compile-scope where given
    (else the variant's)."""
    def edit(row: dict, doc: dict) -> None:
        mode, world, own = RUNNER[row["variant"]]
        del doc["grad_accum"]
        doc.update(mode=mode, world_size=world, ac_mode="full", compile={"scope_flag": scope or own})
        doc["shapes"][0]["compile"] = {"compile_s": 20.0, "dynamo": {"unique_graphs": 3, "graph_breaks": 4}}
    return edit


def synthetic(tmp_path, scale: dict[str, float] | None = None, jitter=(0.01, -0.01), drop=(), scope=None):
    """test_nosync_set.synthetic on this set's registration, as the runner writes its processes (as_run)."""
    return test_nosync_set.synthetic(tmp_path, scale, jitter, drop, BUNDLE, extra_doc=as_run(scope))


def test_a_fresh_register_at_the_registering_commit_equals_the_registration(tmp_path, monkeypatch):
    """The registration's model (461dedb8) predates framework.loss_in_graph, switched on by compileac's rule AM, and
    session 48 adopt48's two terms (before_adopt48): the fresh --register runs with them off, the model the set registered."""
    from dataclasses import replace

    from simcluster.heldout.eager_compilefsdp import before_adopt48
    from simcluster.llm import eager

    with eager.torch_framework_as(lambda fw: replace(before_adopt48(fw), loss_in_graph=False)):
        reg = fresh_register_equals(script(), BUNDLE, tmp_path, monkeypatch)
    assert {r["variant"] for r in reg["rows"]} == {"single", "fsdp"} and len(reg["rows"]) == 4


def device_script_runs(s, bundle, runs: list[str], orders: int | None = None) -> None:
    """A compile set's device_run.sh (this set's, compileac's) runs its registered rows: each `order` the runs
    (preset:seq:mb:variant; `orders` of them where given), their names the registration's rows, the processes, the
    runner's flags per variant."""
    text = (bundle / "device_run.sh").read_text()
    found = re.findall(r'order="([^"]+)"', text)
    assert found and all(sorted(o.split()) == sorted(runs) for o in found) and orders in (None, len(found))
    assert {"{}-{}x{}-{}".format(*r.split(":")) for r in runs} == {r["name"] for r in registered(bundle)["rows"]}
    assert re.search(r"^for r in (.*); do$", text, re.M).group(1).split() == [str(k) for k in range(1, s.PROCESSES + 1)]
    assert 'common="--warmup 3 --steps 5 --profile 0 --compile --ac-mode full"' in text
    assert "--mode single --compile-scope layer $common" in text and "--mode fsdp --compile-scope model $common" in text


def test_the_device_script_runs_the_registered_rows():
    s = script()
    device_script_runs(s, BUNDLE, [f"{p}:{seq}:{mb}:{v}" for p, seq, mb, _ in s.SHAPES for v in RUNNER])


def test_the_registered_shapes_are_new_to_calibration():
    from conftest import measured_llm_tokens, registered_tokens, seqs_named_elsewhere

    rows = registered()["rows"]
    assert {r["seq"] for r in rows} <= {448, 3392, 3520, 3648, 3776}   # this set's own list (session 46)
    assert seqs_named_elsewhere(BUNDLE, {r["seq"] for r in rows}) == []
    assert registered_tokens(rows) & measured_llm_tokens(BUNDLE) == set()


def test_runs_at_the_registered_steps_read_met(tmp_path):
    out = script().read_out(synthetic(tmp_path))
    v = out["verdicts"]
    assert v["D"] == "MET" and v["M"].startswith("within") and v["P"].startswith("memory met"), v
    assert len(out["procs"]) == 8 and not out["left"] and "graphs 3 breaks 4" in v["G"], v


def test_a_slow_fsdp_variant_noise_and_a_wrong_scope(tmp_path):
    rows = registered()["rows"]
    slow = script().read_out(synthetic(tmp_path / "slow", {r["name"]: 1.2 for r in rows if r["variant"] == "fsdp"}))
    assert slow["verdicts"]["D"].startswith("MODEL (compile under FSDP2)"), slow["verdicts"]
    loud = script().read_out(synthetic(tmp_path / "loud", jitter=(0.3, -0.3)))["verdicts"]
    assert loud["D"].startswith("NOISE"), loud
    wrong = script().read_out(synthetic(tmp_path / "scope", scope="layer"))   # the fsdp processes not the registered compile
    assert len(wrong["procs"]) == 4 and len(wrong["left"]) == 4 and wrong["verdicts"]["D"] == "NO DATA"


def test_the_set_enters_the_error_bands_one_row_per_shape_and_variant(tmp_path):
    from simcluster.heldout import eager_compilefsdp, step_sets
    from simcluster.trust.build import eager_residuals

    assert eager_compilefsdp.COMPILEFSDP_BUNDLE in step_sets.STEP_SET_BUNDLES
    assert BUNDLE.name in eager_compilefsdp.COMPILEFSDP_BUNDLE
    assert eager_compilefsdp.held_out_rows(tmp_path) == []   # registered, not run: no row
    reg = {r["name"]: r for r in registered()["rows"]}
    got = eager_compilefsdp.held_out_rows(synthetic(tmp_path / "a", {"0.5b-3648x2-fsdp": 1.2}, drop={"1.1b-3392x2-single-r2"}))
    assert len(got) == 4 and all(r["host_flag"] == "registered" for r in got)
    for r, x in zip(got, reg.values(), strict=True):
        assert r["predicted_s"] == x["predicted"]["step_ms"] / 1e3 and x["variant"] in r["label"]
    assert got[0]["measured_s"] == pytest.approx(reg["1.1b-3392x2-single"]["predicted"]["step_ms"] / 1e3 * math.exp(0.01))
    keys = {x.regime.split(" | ")[2] for x in eager_residuals(got)}
    # compiled + checkpointed: regimes of their own, apart from the validated single+compile (cold review B46 item 2)
    assert keys == {"single+compile+ckpt", "FSDP+compile+ckpt", "FSDP+compile+ckpt+host-bound"}, keys


def test_the_compiled_checkpointed_block_recomputes_its_compiled_forward():
    """Checkpoint around the compiled block: the backward holds the compiled forward's ops again (recompute.*); with the
    checkpoint in the graph (torch-compile+fsdp2) all but the block's last residual add, and down_proj's GEMM since session
    48 adopt48 (whole_model_graph on: test_compck_set checks that term); the eager checkpoint's host
    cost per block only where it runs eagerly; other checkpointing policies refused at framework.compile."""
    from simcluster.llm import compiled, eager, eager_compiled
    from simcluster.llm.framework import TORCH_COMPILE
    from simcluster.llm.spec import BatchSpec, LlmConfigError, ParallelSpec, TransformerSpec

    model, batch = TransformerSpec(4, 1024, 2816, 16, 8, 32000, 2048), BatchSpec(2, 2)
    fwd, bwd = compiled.layer_ops(model, ParallelSpec(), batch, TORCH_COMPILE)
    fwd_c, bwd_c = compiled.layer_ops(model, ParallelSpec(recompute="full"), batch, TORCH_COMPILE)
    again = [o for o in bwd_c if o.name.startswith("recompute.")]
    assert fwd_c == fwd and [o.name for o in again] == [f"recompute.{o.name}" for o in fwd] and bwd_c[len(again):] == bwd
    fsdp = eager.torch_framework(ParallelSpec(dp=2, zero=3, recompute="full"), compiled=True)
    assert fsdp.name == "torch-compile+fsdp2" and fsdp.ckpt_in_graph
    in_graph = [o.name for o in compiled.layer_ops(model, ParallelSpec(dp=2, zero=3, recompute="full"), batch, fsdp)[1]
                if o.name.startswith("recompute.")]
    assert "recompute.residual_add" not in in_graph and "recompute.down" not in in_graph and len(in_graph) == len(again) - 2
    hosts = {"single": (20e-6, 1e-3, 3), "ckpt": (30e-6, 2e-3, 3), "fsdp": (50e-6, 6e-3, 3), "compile": (30e-6, 4e-3, 3)}
    plain = eager.torch_framework(ParallelSpec(), hosts, compiled=True)
    ckpt = eager.torch_framework(ParallelSpec(recompute="full"), hosts, compiled=True)
    n = eager_compiled.compiled_kernels_per_block(ParallelSpec(recompute="full"), ckpt)
    per_block = eager_compiled.per_block_host_s
    assert plain.host_kernel_s == 30e-6 and ckpt.host_kernel_s == pytest.approx(30e-6 + per_block(hosts, "ckpt", eager.torch_framework) / n)
    both = eager.torch_framework(ParallelSpec(dp=2, zero=3, recompute="full"), hosts, compiled=True)
    # the hooks' host spread over the block's kernels counted before adopt48's terms (ADOPTED_FSDP2 set after, as
    # compck2's registered free-phase column priced it: one kernel more, down_proj's recompute)
    from simcluster.heldout.eager_compilefsdp import before_adopt48
    n2 = eager_compiled.compiled_kernels_per_block(ParallelSpec(dp=2, zero=3, recompute="full"), before_adopt48(both))
    assert n2 == eager_compiled.compiled_kernels_per_block(ParallelSpec(dp=2, zero=3, recompute="full"), both) + 1
    assert both.host_kernel_s == pytest.approx(30e-6 + per_block(hosts, "fsdp", eager.torch_framework) / n2)   # no eager checkpoint
    for par in (ParallelSpec(recompute="op"), ParallelSpec(recompute="full", recompute_every=2), ParallelSpec(tp=2)):
        with pytest.raises(LlmConfigError, match="framework.compile"):
            compiled.check_compiled_parallel(par)
