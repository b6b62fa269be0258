"""llm/hf_memory.py (issue 44, session 57): the HF frameworks' memory terms -- transformers' Llama saved tensors and
DeepSpeed ZeRO-3's gradient partition and step copy -- against hfmem57's tensor-level development measurement, and
only where they belong (the published fms-fsdp / Megatron frameworks untouched)."""

import json
from dataclasses import replace

import pytest
from conftest import ROOT, load_script

from simcluster.llm import hf_memory
from simcluster.llm.framework import FMS_FSDP, FRAMEWORKS, HF_DEEPSPEED, HF_FSDP1
from simcluster.llm.memory import layer_activation_bytes, memory_per_gpu
from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec

DEV = ROOT / "calibration" / "h200x1-hfmem57-2026-12-02" / "runs"
TINYLLAMA = TransformerSpec(22, 2048, 5632, 32, 4, 32000, 1136, tied_embeddings=False)   # hfmem57's s1.1b at mb4
ZERO3 = ParallelSpec(zero=3)


def _dev_record(variant: str) -> dict:
    name = "hfmem57-z3.json" if variant == "zero3" else "hfmem57.json"
    recs = json.loads((DEV / name).read_text())["records"]
    return next(r for r in recs if (r["size"], r["point"], r["variant"]) == ("s1.1b", "mb4", variant))


@pytest.mark.parametrize("variant, fw", [("fsdp1", HF_FSDP1), ("zero3", HF_DEEPSPEED)])
def test_a_layers_saved_bytes_are_the_measured_tensors(variant, fw):
    """Decoder layer 1's saved tensors as autograd kept them (hfmem57, parameters left out) are the model's count to
    within 1%; without the terms the count is 20% short (the two norms' fp32 upcasts, repeat_kv, a copy never made)."""
    rec = _dev_record(variant)
    saved = load_script("validation/hfmemh57.py").layer_activation_saved(rec["saved"]["entries"], rec["micro_batch"], rec["seq"])
    batch = BatchSpec(4, 4)
    assert layer_activation_bytes(TINYLLAMA, ZERO3, batch, fw) == pytest.approx(saved, rel=0.01)
    off = replace(fw, hf_llama_saves=False)
    assert layer_activation_bytes(TINYLLAMA, ZERO3, batch, off) < 0.82 * saved


def test_the_layer_terms_by_hand():
    """4 bytes more per element for each of the two norms, K and V saved a d wide; no attention-output copy (the generic
    eager count's, left out by memory.py under hf_llama_saves)."""
    s, b, h = 1136, 4, 2048
    want = 2 * 4 * s * b * h + 2 * 2 * s * b * (32 * 64 - 4 * 64)
    assert hf_memory.layer_extra_bytes(TINYLLAMA, ZERO3, BatchSpec(4, 4)) == pytest.approx(want)
    copy = 2 * s * b * h
    with_copy = replace(HF_FSDP1, hf_llama_saves=False)
    assert layer_activation_bytes(TINYLLAMA, ZERO3, BatchSpec(4, 4), HF_FSDP1) == pytest.approx(
        layer_activation_bytes(TINYLLAMA, ZERO3, BatchSpec(4, 4), with_copy) + want - copy)
    assert layer_activation_bytes(TINYLLAMA, replace(ZERO3, recompute="full"), BatchSpec(4, 4), HF_FSDP1) == pytest.approx(2 * s * b * h)


def test_deepspeed_zero3_under_accumulation_holds_nothing_more():
    """DeepSpeed adds each micro-batch's gradient into its held partition: the step copy is not beside the next
    micro-batch (cold read s57 item 1: 22.14 -> 24.75 GiB at 4 micro-batches before the mend)."""
    one = memory_per_gpu(TINYLLAMA, ZERO3, BatchSpec(1, 1), 141e9, HF_DEEPSPEED).allocated
    four = memory_per_gpu(TINYLLAMA, ZERO3, BatchSpec(1, 4), 141e9, HF_DEEPSPEED).allocated
    assert four == pytest.approx(one)


def test_deepspeed_zero3_holds_its_gradient_partition_and_copies_one_sub_group_at_the_step():
    """2 B a parameter held (bf16), 6 B a parameter of at most 1e9 at the step (hfmem57: 16.0 B held, +6.0 / +5.52)."""
    assert hf_memory.zero3_gradient_bytes(2.0, 0.35e9) == pytest.approx((0.7e9, 2.1e9))
    assert hf_memory.zero3_gradient_bytes(2.0, 1.1e9) == pytest.approx((2.2e9, 6.0e9))
    mem = memory_per_gpu(TINYLLAMA, ZERO3, BatchSpec(1, 1), 141e9, HF_DEEPSPEED)
    assert mem.to_gib()["grad_partition"] == pytest.approx(2 * 1.1e9 / 2**30, rel=0.01)
    zero2 = memory_per_gpu(TINYLLAMA, ParallelSpec(zero=2), BatchSpec(1, 1), 141e9, HF_DEEPSPEED)
    assert "grad_partition" not in zero2.to_gib()          # measured at ZeRO-3 only
    assert "grad_partition" not in memory_per_gpu(TINYLLAMA, ZERO3, BatchSpec(1, 1), 141e9, HF_FSDP1).to_gib()


def test_only_the_hf_frameworks_carry_the_terms():
    """The published fms-fsdp, torchtitan and Megatron frameworks keep their memory: no published row moves."""
    assert {n for n, f in FRAMEWORKS.items() if f.hf_llama_saves} == {"hf-fsdp1", "hf-deepspeed", "hf-deepspeed-overlap"}
    assert {n for n, f in FRAMEWORKS.items() if f.deepspeed_zero3_buffers} == {"hf-deepspeed", "hf-deepspeed-overlap"}
    assert not FMS_FSDP.hf_llama_saves and set(hf_memory.SWITCHES) == {"hf_llama_saves", "deepspeed_zero3_buffers"}
