"""Session 50 fsdpc50 (issue 44): framework.compiled_nock_loss (OFF; llm/compiled.fused_loss): the compiled FSDP2 step
without checkpointing with its loss priced as Inductor's in the last graph (as the checkpointed step's and as mem49's peak
already take it). Off in the product; on, it moves that step's loss ops alone: no checkpointed, one-GPU or eager row, no
peak; the development rows (x2set49, mem49: studies/fsdpc50_loss.py) read as the study prints."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from conftest import ROOT, load_script
from test_compiled_nock_memory import UNMOVED, frameworks

from simcluster.llm import compiled, eager, vocab_ops
from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec

MODEL, BATCH = TransformerSpec(4, 1024, 2816, 16, 8, 32000, 2048), BatchSpec(4, 2)
NONE = ParallelSpec(dp=2, zero=3, recompute="none")


def test_off_in_the_product_and_on_the_loss_is_inductors_without_checkpointing():
    fw = eager.torch_framework(NONE, compiled=True)
    assert fw.name == "torch-compile+fsdp2" and not fw.compiled_nock_loss and not compiled.fused_loss(fw, NONE)
    on = replace(fw, compiled_nock_loss=True)
    assert compiled.fused_loss(on, NONE)
    logits = MODEL.seq * BATCH.micro_batch * MODEL.vocab
    loss = {f: {o.name: o for o in vocab_ops.head_forward(MODEL, NONE, BATCH, f)} for f in (fw, on)}
    assert "logits_upcast" in loss[fw] and "logits_upcast" not in loss[on]
    assert loss[on]["cross_entropy"].bytes == pytest.approx(compiled.COMPILED_LOSS_BYTES[0] * logits)
    assert loss[fw]["cross_entropy"].bytes + loss[fw]["logits_upcast"].bytes == pytest.approx(fw.loss_fwd_bytes * logits)
    rest = [n for n in loss[fw] if n not in ("cross_entropy", "logits_upcast")]
    assert all(loss[fw][n] == loss[on][n] for n in rest), rest


@pytest.mark.parametrize("par", UNMOVED)
def test_the_switch_moves_no_checkpointed_one_gpu_or_eager_loss(par):
    for fw in frameworks(par):
        assert compiled.fused_loss(fw, par) == compiled.fused_loss(replace(fw, compiled_nock_loss=True), par), (fw.name, par)


def test_the_development_rows_read_as_the_study_prints():
    """Development, not held out: x2set49's and mem49's processes without checkpointing against the shipped model and
    the candidate (studies/fsdpc50_loss.txt, section 1); the peak unmoved."""
    from simcluster.heldout.eager_compilefsdp import fits
    from simcluster.heldout.eager_regimes import regime_predict

    errs = {}
    for folder, stem in (("x2set49", "1b-3040x2-fsdpnock"), ("mem49", "1b-3104x4-fsdpnock"), ("mem49", "2b-3104x2-fsdpnock")):
        docs = [json.loads(p.read_text()) for p in sorted((ROOT / "calibration" / f"h200x2-{folder}-2026-12-01" / "runs").glob(f"{stem}-r*.json"))]
        s = docs[0]["shapes"][0]
        measured = sum(d["shapes"][0]["median_step_s"] for d in docs) / len(docs) * 1e3
        args = (docs[0]["model"]["preset"], s["micro_batch"], "fsdp", "h200")
        ship = regime_predict(*args, seq=s["seq"], fits=fits(), compiled=True)
        with eager.torch_framework_as(lambda fw: replace(fw, compiled_nock_loss=True)):
            cand = regime_predict(*args, seq=s["seq"], fits=fits(), compiled=True)
        assert cand["stage_mem_GiB"] == ship["stage_mem_GiB"]
        errs[stem] = (round(ship["step_ms"] / measured - 1, 3), round(cand["step_ms"] / measured - 1, 3))
    assert errs == {"1b-3040x2-fsdpnock": (0.051, -0.023), "1b-3104x4-fsdpnock": (0.105, 0.015),
                    "2b-3104x2-fsdpnock": (0.061, 0.046)}, errs


def test_the_peak_switch_is_off_and_on_moves_the_loss_peak_by_its_two_terms():
    """framework.compiled_loss_donated (OFF; llm/memory.py): at the loss's peak 2 B a logit (the gradient over the donated
    saved logits), 2 B a root parameter (FSDP2's root unit's gathered bf16 parameters) and 2 B a head parameter (the
    head's unsharded bf16 gradient, V x H tied or not) in place of 4 B a logit; no step time moves, no eager or one-GPU
    row's memory, and no checkpointed step's (the switch covers the step without checkpointing only). The move is the
    registered read-out's -2TV+2R+2W (validation/fsdpc50.peak_forms, rule PF; written there once, to 0.1 MiB), on a
    tied preset and an untied one (R = 2W + H there: the head's gradient only, not the untied embedding's)."""
    from simcluster.heldout.eager import model_of
    from simcluster.llm import memory
    from simcluster.runner.llm_decoder import PRESETS

    peak_forms = load_script("validation/fsdpc50.py").peak_forms
    fw = eager.torch_framework(NONE, compiled=True)
    on = replace(fw, compiled_loss_donated=True)
    assert not fw.compiled_loss_donated
    for preset in ("0.3b", "0.5b"):
        model = model_of({"model": PRESETS[preset]}, MODEL.seq)
        assert model.tied_embeddings == (preset == "0.3b")
        a, b = (memory.stage_memories(model, NONE, BATCH, 141e9, f)[0] for f in (on, fw))
        form = peak_forms(preset, MODEL.seq, BATCH.micro_batch)["-2TV+2R+2W"]
        assert (a.logits - b.logits) / 2**30 == pytest.approx(form, abs=0.5e-4), preset
        assert a.step_end == b.step_end and a.activations == b.activations
    full = replace(NONE, recompute="full")   # the loss's memory in the last graph there too, the switch not
    f = eager.torch_framework(full, compiled=True)
    assert compiled.loss_memory_in_last_graph(f, full)
    assert (memory.stage_memories(MODEL, full, BATCH, 141e9, f)[0]
            == memory.stage_memories(MODEL, full, BATCH, 141e9, replace(f, compiled_loss_donated=True))[0])
    for par in (ParallelSpec(), ParallelSpec(dp=2), ParallelSpec(dp=2, zero=3), ParallelSpec(recompute="full")):
        fws = [eager.torch_framework(par)] + ([eager.torch_framework(par, compiled=True)] if par.dp == 1 else [])
        for f in fws:
            assert (memory.stage_memories(MODEL, par, BATCH, 141e9, f)[0]
                    == memory.stage_memories(MODEL, par, BATCH, 141e9, replace(f, compiled_loss_donated=True))[0]), (f.name, par)


def test_the_development_peaks_read_as_the_study_prints():
    """Development, not held out: the three rows without checkpointing, rank-0 peak (timed steps) against the shipped
    model and compiled_loss_donated (studies/fsdpc50_loss.txt, section 4); the step unmoved."""
    from simcluster.heldout.eager_compilefsdp import fits
    from simcluster.heldout.eager_regimes import regime_predict

    errs = {}
    for folder, preset, seq, mb in (("x2set49", "1b", 3040, 2), ("mem49", "1b", 3104, 4), ("mem49", "2b", 3104, 2)):
        runs = sorted((ROOT / "calibration" / f"h200x2-{folder}-2026-12-01" / "runs").glob(f"{preset}-{seq}x{mb}-fsdpnock-r*.json"))
        peaks = [json.loads(p.read_text())["shapes"][0]["max_memory_allocated_timed_bytes"] for p in runs]
        measured = sum(peaks) / len(peaks) / 2**30
        ship = regime_predict(preset, mb, "fsdp", "h200", seq=seq, fits=fits(), compiled=True)
        with eager.torch_framework_as(lambda fw: replace(fw, compiled_loss_donated=True)):
            cand = regime_predict(preset, mb, "fsdp", "h200", seq=seq, fits=fits(), compiled=True)
        assert cand["step_ms"] == ship["step_ms"]
        errs[f"{preset}-{seq}x{mb}"] = tuple(round(p["stage_mem_GiB"][0] / measured - 1, 3) for p in (ship, cand))
    assert errs == {"1b-3040x2": (0.027, -0.002), "1b-3104x4": (0.079, -0.0), "2b-3104x2": (0.006, -0.0)}, errs
