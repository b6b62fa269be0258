"""The local spec's remaining GPU-side kernels (issue 44, session 41): Megatron-Core's unfused vocab-parallel loss kernel by
kernel, the router's top-k kernels, and each local expert's linear_fc1 as one GEMM (llm/torch_kernels.py, llm/ops.py)."""

import gzip
import json
from pathlib import Path

import pytest
from conftest import ROOT, load_script

from simcluster.hardware.gpu import load_gpu
from simcluster.llm import ops, torch_kernels, vocab_ops
from simcluster.llm.framework import MEGATRON, MEGATRON_LOCAL, UNFUSED_LOSS
from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec

H200 = ROOT / "models/gpu/h200-sxm-interleaved.yaml"
MOE5 = ROOT / "calibration/h200x2-megatron-moe5-2026-11-30"
LOGITS = 4096 * 32768


def _model(experts=8, top_k=2, ffn=4096):
    return TransformerSpec(layers=4, hidden=2048, ffn=ffn, heads=32, kv_heads=8, vocab=32768, seq=4096, experts=experts,
                           top_k=top_k, expert_ffn=ffn, attn_head_dim=128, qk_norm=True)


def test_vocab_ce_chain_is_the_unfused_losss_bytes_with_broadcast_kernels_unvectorized():
    assert torch_kernels.chain_bytes("vocab_ce") == UNFUSED_LOSS["loss_fwd_bytes"] == 38
    assert torch_kernels.chain_bytes("vocab_ce.bwd") == UNFUSED_LOSS["loss_bwd_bytes"] == 14
    gpu, _ = load_gpu(H200)
    # the broadcast subtract / divide / multiply run at the card's element rate, below the copy rate's 8 B a logit
    sub = torch_kernels.kernel_s(gpu, 8 * LOGITS, LOGITS, "unvectorized")
    assert sub > 1.3 * gpu.memory_time_s(8 * LOGITS)
    assert torch_kernels.time_s(gpu, "vocab_ce", LOGITS) > 1.3 * gpu.memory_time_s(38 * LOGITS)


def test_local_spec_loss_is_the_chain_and_megatrons_is_not():
    model, par, batch = _model(), ParallelSpec(dp=2, ep=2), BatchSpec(2, 1)
    local = {o.name: o for o in vocab_ops.head_forward(model, par, batch, MEGATRON_LOCAL)}
    assert local["cross_entropy"].kind == "torch" and local["cross_entropy"].shape[:2] == ("vocab_ce", float(LOGITS))
    bwd = {o.name: o for o in vocab_ops.head_backward(model, par, batch, MEGATRON_LOCAL)}
    assert bwd["cross_entropy.bwd"].shape[0] == "vocab_ce.bwd"
    assert {o.name: o for o in vocab_ops.head_forward(model, par, batch, MEGATRON)}["cross_entropy"].kind == "memory"


def test_loss_chain_prices_moe5s_measured_loss_kernels_within_5_percent():
    # development: moe5's traces (4096 x 32768 logits); the rates are the card's (copy, upcast), none read from these traces
    kk = load_script("studies/megatron_moe/kernel_kinds.py")
    gpu, _ = load_gpu(H200)
    priced = torch_kernels.time_s(gpu, "vocab_ce", LOGITS) + torch_kernels.time_s(gpu, "vocab_ce.bwd", LOGITS)
    traces = sorted(MOE5.glob("trace-*e8-top2-ffn4096*-rank0.json.gz"))
    assert traces, f"no moe5 e8-top2-ffn4096 rank-0 trace in {MOE5}"
    for trace in traces:
        gpu_events, _ = kk.load(Path(trace))
        measured = sum(k["dur"] for k in gpu_events if any("_VocabParallelCrossEntropy" in s for s in k["stack"])) * 1e-6
        assert priced == pytest.approx(measured, rel=0.05)


def test_local_spec_experts_run_one_fc1_gemm_of_twice_the_ffn():
    model, par, batch = _model(), ParallelSpec(dp=2, ep=2), BatchSpec(2, 1)
    local = {o.name: o for o in ops.layer_forward(model, par, batch, MEGATRON_LOCAL)}
    routed = 4096 * 2 * 2 // 8
    assert local["expert_fc1"].shape == (routed, 2 * 4096, 2048, 4)
    assert "expert_gate" not in local and "expert_up" not in local
    assert local["expert_fc1"].flops == pytest.approx(2 * routed * 2 * 4096 * 2048 * 4)
    te = {o.name for o in ops.layer_forward(model, par, batch, MEGATRON)}
    assert {"expert_gate", "expert_up"} <= te and "expert_fc1" not in te and "router_topk" not in te
    # one call instead of two: fewer per-call times, the same FLOPs
    gpu, _ = load_gpu(H200)
    two = 2 * ops.op_time_s(gpu, ops.gemm("expert_gate", routed, 4096, 2048, 4), "bf16")
    assert ops.op_time_s(gpu, local["expert_fc1"], "bf16") < two


def test_router_topk_reads_its_development_calls_and_grows_with_the_experts():
    gpu, _ = load_gpu(H200)
    eight, many = (torch_kernels.time_s(gpu, "topk", 4096 * e) for e in (8, 128))
    # development set h200x4-megatron-moe-2026-11-27: 11.6 + 6.1 + 8.9 + 6.3 + 4.4 + 1.6 us at 8 experts, 32.8 + 27.2 ... at 128
    assert eight == pytest.approx((11.6 + 6.1 + 8.9 + 6.3 + 4.4 + 1.6) * 1e-6, rel=0.05)
    assert many == pytest.approx((32.8 + 6.2 + 27.2 + 6.3 + 4.7 + 1.6) * 1e-6, rel=0.05)
    assert torch_kernels.time_s(gpu, "topk.bwd", 4096 * 8) == 0.0
    local = {o.name for o in ops.layer_forward(_model(), ParallelSpec(dp=2, ep=2), BatchSpec(2, 1), MEGATRON_LOCAL)}
    assert "router_topk" in local


def test_embedding_backward_is_torchs_sort_and_segment_kernels_on_the_local_spec_only():
    model, par, batch = _model(), ParallelSpec(dp=2, ep=2), BatchSpec(2, 1)
    local = {o.name: o for o in vocab_ops.embedding_backward(model, par, batch, MEGATRON_LOCAL)}
    assert local["embedding.bwd"].shape[:2] == ("embedding_dense", float(4096 * 2048))
    assert {o.name: o for o in vocab_ops.embedding_backward(model, par, batch, MEGATRON)}["embedding.bwd"].kind == "memory"
    # development: moe5's trace (rates read from h200x4-megatron-moe-2026-11-27's); the zero fill is grad_accumulate's
    kk = load_script("studies/megatron_moe/kernel_kinds.py")
    gpu, _ = load_gpu(H200)
    trace = next(iter(sorted(MOE5.glob("trace-*e8-top2-ffn4096*-rank0.json.gz"))))
    measured = sum(k["dur"] for k in kk.load(Path(trace))[0]
                   if any("embedding_dense_backward" in s for s in k["stack"]) and "FillFunctor" not in k["name"]) * 1e-6
    assert ops.op_time_s(gpu, local["embedding.bwd"], "bf16") == pytest.approx(measured, rel=0.10)


def test_expert_gemm_calls_reads_a_synthetic_step(tmp_path, capsys):
    calls = load_script("studies/megatron_moe/expert_gemm_calls.py")
    path = tmp_path / "trace-h200-x2-toy-rank0.json.gz"
    load_script("tests/test_llm_torch_kernels.py")._trace(path)
    got = calls.read(path)
    # one expert GEMM (nvjet_fc1, 50 us), launched while the softmax kernel still ran: no gap before it
    assert got["calls"] == 1 and got["measured_s"] == pytest.approx(50e-6) and got["gaps_us"] == [0.0]
    assert calls.row(path) is None                      # no run document beside the trace
    assert calls.main([str(tmp_path / "missing.json.gz")]) == 1
    assert capsys.readouterr().err.count("\n") == 1


def test_expert_gemm_calls_reads_the_excess_per_measured_and_modelled_call_and_the_capped_gaps():
    calls = load_script("studies/megatron_moe/expert_gemm_calls.py")
    # 4 measured calls of 10 us, the model's 8 calls priced 100 us with 5 us of call time each (the curve alone 60 us)
    r = {"calls": 4, "measured_s": 40e-6, "gaps_us": [1.0, 2.0, 9.0, 30.0]}
    s = calls.summary(r, 100e-6, 8, 5e-6)
    assert s["excess_model_us"] == pytest.approx(60 / 8) and s["excess_measured_us"] == pytest.approx(60 / 4)
    assert s["curve_ms"] == pytest.approx(0.060) and s["curve_err"] == pytest.approx(0.5)
    # gaps capped at BUBBLE_US (5 us): 1 + 2 + 5 + 5; half of them at the cap
    assert s["bubbles_ms"] == pytest.approx(13e-3) and s["bubble_a_call_us"] == pytest.approx(13 / 4)
    assert s["capped"] == pytest.approx(0.5) and s["gap_median_us"] == pytest.approx(5.5)


def test_expert_gemm_calls_names_a_trace_without_expert_gemms(tmp_path, capsys):
    calls = load_script("studies/megatron_moe/expert_gemm_calls.py")
    path = tmp_path / "trace-h200-x2-toy-rank0.json.gz"
    load_script("tests/test_llm_torch_kernels.py")._trace(path)
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("args", {}).get("correlation") != 6]   # the expert GEMM
    with gzip.open(path, "wt") as f:
        json.dump(doc, f)
    assert calls.read(path)["calls"] == 0
    assert calls.main([str(path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and path.name in err and "no expert GEMM" in err
