"""Session 50 fsdpc50 (issue 44): framework.compiled_nock_loss (OFF; llm/compiled.fused_loss): the compiled FSDP2 step
without checkpointing with its loss priced as Inductor's in the last graph (as the checkpointed step's and as mem49's peak
already take it). Off in the product; on, it moves that step's loss ops alone: no checkpointed, one-GPU or eager row, no
peak; the development rows (x2set49, mem49: studies/fsdpc50_loss.py) read as the study prints."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from conftest import ROOT

from simcluster.llm import compiled, eager, vocab_ops
from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec

MODEL, BATCH = TransformerSpec(4, 1024, 2816, 16, 8, 32000, 2048), BatchSpec(4, 2)
NONE, FULL = ParallelSpec(dp=2, zero=3, recompute="none"), ParallelSpec(dp=2, zero=3, recompute="full")


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


@pytest.mark.parametrize("par", [FULL, ParallelSpec(), ParallelSpec(recompute="full"), ParallelSpec(dp=2),
                                 ParallelSpec(dp=2, zero=3), ParallelSpec(dp=2, zero=2)])
def test_the_switch_moves_no_checkpointed_one_gpu_or_eager_loss(par):
    frameworks = [eager.torch_framework(par)]
    if par.dp == 1 or (par.zero == 3 and par.recompute == "full"):   # compiled: one GPU, or FSDP2 checkpointed
        frameworks.append(eager.torch_framework(par, compiled=True))
    for fw in frameworks:
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
