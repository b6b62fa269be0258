"""Caveats travel with the predictions whose class misses the published or measured rows beyond the target, and only
with those: MoE on Megatron, a derived (not measured) GPU card, host-bound eager frameworks."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_caveats_name_the_weak_classes_only():
    from simcluster.hardware.gpu import load_gpu
    from simcluster.llm.caveats import caveats
    from simcluster.llm.framework import MEGATRON
    from simcluster.llm.spec import ParallelSpec, TransformerSpec

    dense = TransformerSpec(32, 4096, 14336, 32, 8, 128256, 8192)
    moe = TransformerSpec(48, 2048, 6144, 32, 4, 151936, 4096, experts=128, top_k=8, expert_ffn=768)
    h100, _ = load_gpu(ROOT / "models/gpu/h100-sxm.yaml")
    b200, _ = load_gpu(ROOT / "models/gpu/b200.yaml")
    assert caveats(dense, ParallelSpec(tp=8), MEGATRON, h100) == []
    assert len(caveats(moe, ParallelSpec(dp=8, ep=8), MEGATRON, h100)) == 1 and "MoE" in caveats(moe, ParallelSpec(dp=8, ep=8), MEGATRON, h100)[0]
    derived = caveats(dense, ParallelSpec(tp=8), MEGATRON, b200)
    assert len(derived) == 1 and "b200 is derived" in derived[0] and "h100-sxm" in derived[0]
    assert h100.derived_from == "" and b200.derived_from.endswith("h100-sxm.yaml")
    a100, _ = load_gpu(ROOT / "models/gpu/a100-sxm-80gb.yaml")     # derived too, but its published rows are within 3-6%
    assert a100.derived_from and caveats(dense, ParallelSpec(tp=8), MEGATRON, a100) == []
    # the MoE host term's c is from one H100 BF16 profile: B200 and fp8 answers say it is extrapolated; not under A2A overlap
    assert any("extrapolated" in c for c in caveats(moe, ParallelSpec(dp=8, ep=8), MEGATRON, b200))
    assert any("on fp8 runs it is extrapolated" in c for c in caveats(moe, ParallelSpec(dp=8, ep=8), MEGATRON, h100, "fp8"))
    assert not any("extrapolated" in c for c in caveats(moe, ParallelSpec(dp=8, ep=8, moe_a2a_overlap=True), MEGATRON, b200))


def test_the_moe_caveat_names_the_router_term_its_judged_cards_and_the_double_count_question():
    """One MoE caveat string: the term, the cards its rule judged (an answer on another card says it is extrapolated),
    the open double count with moe_sync's c (review A49, findings 1 and 3)."""
    from simcluster.hardware.gpu import load_gpu
    from simcluster.llm.caveats import caveats
    from simcluster.llm.framework import MEGATRON, MEGATRON_LOCAL
    from simcluster.llm.spec import ParallelSpec, TransformerSpec

    moe = TransformerSpec(48, 2048, 6144, 32, 4, 151936, 4096, experts=128, top_k=8, expert_ffn=768)
    par = ParallelSpec(dp=8, ep=8)
    h100, _ = load_gpu(ROOT / "models/gpu/h100-sxm.yaml")
    h200, _ = load_gpu(ROOT / "models/gpu/h200-sxm.yaml")
    on_h100 = [c for c in caveats(moe, par, MEGATRON, h100) if c.startswith("MoE:")]
    on_h200 = [c for c in caveats(moe, par, MEGATRON, h200) if c.startswith("MoE:")]
    assert len(on_h100) == len(on_h200) == 1
    for text in on_h100 + on_h200:
        assert "llm/moe_router_term.py" in text and "judged H100, B200 and A800 rows only" in text
        assert "double count" in text and "moe_sync's c" in text and "{card}" not in text
    assert "extrapolated to by the HBM-rate law" not in on_h100[0]
    assert "this answer's card, h200-sxm, is extrapolated to by the HBM-rate law" in on_h200[0]
    local = [c for c in caveats(moe, par, MEGATRON_LOCAL, h200) if c.startswith("MoE:")]   # the term off there
    assert len(local) == 1 and "HBM-rate law" not in local[0]


def test_caveats_reach_the_scenario_output():
    import contextlib
    import io
    import json

    from simcluster.cli import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["run", str(ROOT / "scenarios/llm/eager-torch-2gpu.yaml"), "--json"]) == 0
    variants = {v["variant"]: v["jobs"][0]["caveats"] for v in json.loads(buf.getvalue())["variants"]}
    assert variants["megatron-ddp"] == [] and variants["torch-ddp"] == []
    assert all("host" in c for c in variants["torch-dtensor-tp"]) and variants["torch-dtensor-tp"]
    # the user-facing way to torch's CP (cold read D 7): the variant runs and says its price is unmeasured
    from simcluster.llm.caveats import TORCH_CP
    assert variants["torch-cp"] == [TORCH_CP]


def test_an_uneven_pipeline_split_is_a_note_not_a_caveat():
    from simcluster.llm.caveats import notes
    from simcluster.llm.spec import ParallelSpec, TransformerSpec

    m405 = TransformerSpec(126, 16384, 53248, 128, 8, 128256, 8192)
    assert "126 layers split unevenly over pp x virtual_stages = 64 chunks (1 to 2 each" in notes(m405, ParallelSpec(tp=8, pp=16, virtual_stages=4))[0]
    assert notes(TransformerSpec(80, 8192, 28672, 64, 8, 128256, 8192), ParallelSpec(tp=8, pp=4, virtual_stages=5)) == []
    assert notes(m405, ParallelSpec(tp=8, pp=16, virtual_stages=4, pipeline_layout=(1,) + (2,) * 62 + (1,))) == []


def test_the_breakdown_names_its_pacing_stage_under_pipelining():
    import contextlib
    import io

    from simcluster.cli import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["predict", "training", "--scenario", str(ROOT / "scenarios/llm/llama405b-16k.yaml")]) == 0
    line = next(x for x in buf.getvalue().splitlines() if "breakdown (s)" in x)
    assert "(stage 1, the one that sets the pipeline's pace)" in line


def test_the_text_answer_names_the_peak_after_ddp_first_steps():
    """DDP's bucket-rebuild copy is in the printed peak or not by timing (calibration/h200x2-eager-diagnose-2026-11-29):
    the answer prints the peak without it beside the job's peak, and only where the layout has one."""
    import contextlib
    import io
    import re

    from simcluster.cli import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["run", str(ROOT / "scenarios/llm/eager-torch-2gpu.yaml")]) == 0
    lines = [ln for ln in buf.getvalue().splitlines() if "memory per GPU" in ln]
    with_rebuild = [ln for ln in lines if "ddp_rebuild " in ln]
    assert with_rebuild and len(with_rebuild) < len(lines)
    for ln in lines:
        after = re.search(r"; ([\d.]+) GiB after the first steps", ln)
        assert (after is not None) == (ln in with_rebuild)
        if after:
            total = float(re.search(r"memory per GPU\s+([\d.]+) GiB", ln).group(1))
            rebuild = float(re.search(r"ddp_rebuild ([\d.]+)", ln).group(1))
            assert float(after.group(1)) == pytest.approx(total - rebuild, abs=0.011)


def test_the_fsdp_trainers_carry_no_host_caveat():
    """The FSDP trainers at scale (torchtitan-fsdp2, fms-fsdp, composer-fsdp) are eager but take no framework.host, so
    the unpriced-host caveat, whose advice is `framework: {name: torch, host: ...}`, is the eager runner's only."""
    from simcluster.hardware.gpu import load_gpu
    from simcluster.llm import eager
    from simcluster.llm.caveats import caveats
    from simcluster.llm.framework import FRAMEWORKS
    from simcluster.llm.spec import ParallelSpec, TransformerSpec

    dense = TransformerSpec(32, 4096, 11008, 32, 32, 32000, 4096)
    h100, _ = load_gpu(ROOT / "models/gpu/h100-sxm.yaml")
    par = ParallelSpec(dp=128, zero=3, dp_shard=8)
    for name in ("torchtitan-fsdp2", "fms-fsdp", "composer-fsdp"):
        assert FRAMEWORKS[name].eager
        assert not any("host" in c for c in caveats(dense, par, FRAMEWORKS[name], h100)), name
    torch = eager.torch_framework(ParallelSpec(dp=2))
    assert any(c.startswith(f"{torch.name}: no host cost priced") for c in caveats(dense, ParallelSpec(dp=2), torch, h100))


def test_the_flash_form_on_an_h100_says_it_is_extrapolated():
    """fa2 / fa2-full on a measured H100 card: the FlashAttention-2 schedule form was fitted and checked on an H200 only;
    on an H200, on a derived card (A100: the ratio path) and with the card's own kernel no such caveat."""
    from simcluster.hardware.gpu import load_gpu
    from simcluster.llm.caveats import caveats
    from simcluster.llm.framework import COMPOSER_FSDP, MEGATRON, MEGATRON_FA2
    from simcluster.llm.spec import ParallelSpec, TransformerSpec

    dense = TransformerSpec(32, 4096, 14336, 32, 8, 128256, 8192)
    h100, _ = load_gpu(ROOT / "models/gpu/h100-sxm.yaml")
    h200, _ = load_gpu(ROOT / "models/gpu/h200-sxm.yaml")
    a100, _ = load_gpu(ROOT / "models/gpu/a100-sxm-80gb.yaml")
    for fw in (MEGATRON_FA2, COMPOSER_FSDP):
        got = [c for c in caveats(dense, ParallelSpec(tp=8), fw, h100) if "FlashAttention-2 schedule form" in c]
        assert len(got) == 1 and fw.attention_kernel in got[0] and "extrapolated" in got[0]
        assert not any("FlashAttention-2 schedule form" in c for c in caveats(dense, ParallelSpec(tp=8), fw, h200))
        assert not any("FlashAttention-2 schedule form" in c for c in caveats(dense, ParallelSpec(tp=8), fw, a100))
    assert not any("FlashAttention-2 schedule form" in c for c in caveats(dense, ParallelSpec(tp=8), MEGATRON, h100))


def test_eager_default_attention_on_an_h100_says_the_cudnn_form_is_extrapolated():
    """framework torch (the eager runner's) with the card's attention (torch's default SDPA, cuDNN) on a measured H100
    at >= cudnn_schedule.MIN_SEQ tokens: the cuDNN form was checked on an H200 only, and on an H100 never for eager.
    Not on an H200, not on a derived card, not for Megatron (the published H100 tables check it), not below MIN_SEQ
    (the H100 card's own curve), not with flash (FA2_H100's)."""
    from dataclasses import replace

    from simcluster.hardware.gpu import load_gpu
    from simcluster.llm.caveats import caveats
    from simcluster.llm.framework import MEGATRON, TORCH_AMP, TORCH_COMPILE
    from simcluster.llm.spec import ParallelSpec, TransformerSpec

    dense = TransformerSpec(16, 2048, 5632, 16, 16, 32000, 8192)
    h100, _ = load_gpu(ROOT / "models/gpu/h100-sxm.yaml")
    h200, _ = load_gpu(ROOT / "models/gpu/h200-sxm.yaml")
    a100, _ = load_gpu(ROOT / "models/gpu/a100-sxm-80gb.yaml")

    def cudnn(fw, gpu, model=dense):
        return [c for c in caveats(model, ParallelSpec(dp=2), fw, gpu) if "cuDNN schedule form" in c]

    for fw in (TORCH_AMP, TORCH_COMPILE):
        got = cudnn(fw, h100)
        assert len(got) == 1 and fw.name in got[0] and "extrapolated" in got[0] and "no eager step" in got[0]
        assert cudnn(fw, h200) == [] and cudnn(fw, a100) == []
        assert cudnn(fw, h100, replace(dense, seq=1024)) == []
        assert cudnn(replace(fw, attention_kernel="fa2"), h100) == []
    assert cudnn(MEGATRON, h100) == []


def test_eager_fsdp2_with_activation_checkpointing_says_its_memory_is_unchecked():
    """The eager runner's FSDP2 (bf16_param_block) under recompute full / op: the bf16-block memory fix was checked
    without checkpointing only, so the answer says so; not without checkpointing, not under DDP, not for the FSDP
    trainers at scale (no bf16_param_block)."""
    from simcluster.hardware.gpu import load_gpu
    from simcluster.llm import eager
    from simcluster.llm.caveats import caveats
    from simcluster.llm.framework import FRAMEWORKS
    from simcluster.llm.spec import ParallelSpec, TransformerSpec

    dense = TransformerSpec(22, 2048, 5632, 32, 4, 32000, 16384)
    h200, _ = load_gpu(ROOT / "models/gpu/h200-sxm.yaml")

    def said(par, fw=None):
        fw = fw or eager.torch_framework(par)
        return [c for c in caveats(dense, par, fw, h200) if "activation checkpointing" in c]

    for rc in ("full", "op"):
        got = said(ParallelSpec(dp=2, zero=3, recompute=rc))
        assert len(got) == 1 and f"recompute {rc}" in got[0] and "unchecked" in got[0]
        assert said(ParallelSpec(dp=2, recompute=rc)) == []   # DDP: fp32 residual stream, untouched by the fix
    assert said(ParallelSpec(dp=2, zero=3)) == []
    assert said(ParallelSpec(dp=16, zero=3, dp_shard=8, recompute="full"), FRAMEWORKS["torchtitan-fsdp2"]) == []


def test_no_hand_written_local_spec_band_caveat_the_trust_line_says_it():
    """Session 41: that the `llm local spec` band's rows judge earlier models is said by the trust line from the shipped
    table (trust/moved.py; tests/test_band_moved.py checks it names every registered set's commit), not by a caveat."""
    from simcluster.hardware.gpu import load_gpu
    from simcluster.llm.caveats import caveats
    from simcluster.llm.framework import MEGATRON_LOCAL
    from simcluster.llm.spec import ParallelSpec, TransformerSpec

    h200, _ = load_gpu(ROOT / "models/gpu/h200-sxm-interleaved.yaml")
    moe = TransformerSpec(4, 2048, 5632, 16, 8, 32768, 4096, experts=8, top_k=2, expert_ffn=5632)
    assert not any("llm local spec" in c or "earlier model" in c for c in caveats(moe, ParallelSpec(dp=2, ep=2), MEGATRON_LOCAL, h200))

