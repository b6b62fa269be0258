"""Issue 22, session 19 (small models predicted fast): the attention-dropout term of the GPU card and Megatron's fp32
main_grad accumulation, each checked by hand; the dropout rates' fit on a synthetic sweep; card errors."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from simcluster.errors import CalibrationError, ModelCardError
from simcluster.fit.gpu import DATASHEETS, carry
from simcluster.fit.gpu_dropout import elements, fit_dropout_rates, fit_rates
from simcluster.hardware.gpu import GpuParams, gpu_params, gpu_params_yaml, load_gpu
from simcluster.llm import ops, vocab_ops
from simcluster.llm.framework import MEGATRON, TORCH_AMP
from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec

ROOT = Path(__file__).resolve().parents[1]
TINY = TransformerSpec(layers=2, hidden=8, ffn=16, heads=2, kv_heads=1, vocab=32, seq=4)
H100 = ROOT / "models/gpu/h100-sxm.yaml"


def toy(**kw) -> GpuParams:
    return GpuParams(**{**dict(name="toy", peak_flops={"bf16": 1e13}, hbm_bandwidth_Bps=2e12, hbm_capacity_bytes=80e9, launch_s=5e-6,
                               attn_efficiency_fwd={128: 0.6}, attn_efficiency_bwd={128: 0.5}), **kw})


def test_dropout_adds_one_random_number_per_score_element_at_the_cards_rate():
    p = toy(attn_dropout_rate_fwd=1e12, attn_dropout_rate_bwd=2e12)
    b, h, s, d = 2, 16, 4096, 128
    causal_elements = b * h * s * s / 2                                # 268,435,456
    assert p.attention_time_s(b, h, h, s, s, d, dropout=True) - p.attention_time_s(b, h, h, s, s, d) == pytest.approx(causal_elements / 1e12)
    assert p.attention_time_s(b, h, h, s, s, d, backward=True, dropout=True) - p.attention_time_s(b, h, h, s, s, d, backward=True) \
        == pytest.approx(causal_elements / 2e12)
    assert p.attention_dropout_s(b, h, s, s, causal=False) == pytest.approx(2 * causal_elements / 1e12)
    assert toy().attention_time_s(b, h, h, s, s, d, dropout=True) == toy().attention_time_s(b, h, h, s, s, d)   # no rate: not priced


def test_card_dropout_rates_read_write_and_refuse_half_a_pair():
    p = load_gpu(H100)[0]
    assert (p.attn_dropout_rate_fwd, p.attn_dropout_rate_bwd) == (9.689e11, 1.895e12)
    doc = {"name": p.name, "params": gpu_params_yaml(p)}
    assert gpu_params(doc, "card.yaml") == p                              # the writer's output reads back the same
    del doc["params"]["attention"]["dropout_elements_per_s_bwd"]
    with pytest.raises(ModelCardError, match="params.attention.dropout_elements_per_s_bwd: missing: give both"):
        gpu_params(doc, "card.yaml")
    doc["params"]["attention"]["dropout_elements_per_s_bwd"] = -1.0
    with pytest.raises(ModelCardError, match="dropout_elements_per_s_bwd"):
        gpu_params(doc, "card.yaml")
    assert carry(p, DATASHEETS["b200"]).attn_dropout_rate_fwd == 0.0     # never measured on another GPU: not carried


def test_fit_recovers_the_rates_of_a_synthetic_sweep(tmp_path):
    rows = []
    for b, a, s in ((1, 16, 4096), (2, 32, 4096), (1, 48, 2048)):
        n = b * a * s * s / 2
        rows.append(dict(backend="cudnn", batch=b, heads=a, seq=s, head_dim=128, **{
            "fwd_s_p0.0": 1e-3, "fwd_s_p0.1": 1e-3 + n / 4e11, "fwdbwd_s_p0.0": 3e-3, "fwdbwd_s_p0.1": 3e-3 + n / 4e11 + n / 8e11}))
    assert elements(rows[0]) == 16 * 4096 * 4096 / 2
    assert fit_rates(rows) == {"fwd": pytest.approx(4e11), "bwd": pytest.approx(8e11)}
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps({"attention": rows + [dict(rows[0], backend="flash", **{"fwd_s_p0.1": 1.0})]}))
    assert fit_dropout_rates(path, fit_seq=2048) == {"fwd": pytest.approx(4e11), "bwd": pytest.approx(8e11)}
    with pytest.raises(CalibrationError, match="no attention rows"):
        fit_dropout_rates(path, fit_seq=512)
    path.write_text("[1, 2]")
    with pytest.raises(CalibrationError, match="not an attention dropout sweep"):
        fit_dropout_rates(path)


def test_model_dropout_marks_the_flash_attention_ops():
    drop = dataclasses.replace(TINY, dropout=True)
    batch = BatchSpec(1, 1)
    fwd = next(o for o in ops.layer_forward(drop, ParallelSpec(), batch) if o.kind == "attention")
    bwd = next(o for o in ops.layer_backward(drop, ParallelSpec(), batch) if o.kind == "attention")
    assert fwd.shape[-1] is True and bwd.shape[-1] is True
    assert next(o for o in ops.layer_forward(TINY, ParallelSpec(), batch) if o.kind == "attention").shape[-1] is False
    p = toy(attn_dropout_rate_fwd=1e6, attn_dropout_rate_bwd=1e6, launch_s=0.0)
    plain = next(o for o in ops.layer_forward(TINY, ParallelSpec(), batch) if o.kind == "attention")
    # 1 sequence x 2 heads x 4 x 4 / 2 = 16 score elements at 1e6 per second
    assert ops.op_time_s(p, fwd, "bf16") - ops.op_time_s(p, plain, "bf16") == pytest.approx(16 / 1e6)


def test_megatron_adds_every_weight_gradient_into_fp32_main_grad_each_micro_batch():
    batch = BatchSpec(1, 1)
    acc = [o for o in ops.layer_backward(TINY, ParallelSpec(), batch, MEGATRON) if o.name == "main_grad_accumulate"]
    # weights: qkv 8 x (2 + 2) 4 = 128, out 8 x 8 = 64, gate, up 8 x 16 = 128 each, down 16 x 8 = 128: 576 = the layer's matrices
    assert len(acc) == 1 and acc[0].count == 5 and acc[0].total_bytes == pytest.approx(10 * 576)
    assert 576 == TINY.attention_params() + TINY.mlp_params()
    full = [o for o in ops.layer_backward(TINY, ParallelSpec(recompute="full"), batch) if o.name == "main_grad_accumulate"]
    assert full[0].total_bytes == acc[0].total_bytes                      # recomputed GEMMs add no gradient
    head = [o for o in vocab_ops.head_backward(TINY, ParallelSpec(), batch) if o.name == "main_grad_accumulate"]
    assert head[0].total_bytes == 10 * 32 * 8                             # the LM head, V x h
    emb = [o for o in vocab_ops.embedding_backward(TINY, ParallelSpec(), batch) if o.name == "main_grad_accumulate"]
    assert emb[0].total_bytes == (10 + 2) * 32 * 8                        # a zeroed dense V x h gradient, then added
    tp2 = TransformerSpec(layers=2, hidden=8, ffn=16, heads=2, kv_heads=2, vocab=32, seq=4)
    half = [o for o in vocab_ops.head_backward(tp2, ParallelSpec(tp=2), batch) if o.name == "main_grad_accumulate"]
    assert half[0].total_bytes == 10 * 16 * 8                             # vocabulary sharded over tp
    assert not any(o.name == "main_grad_accumulate" for o in ops.layer_backward(TINY, ParallelSpec(), batch, TORCH_AMP)
                   + vocab_ops.head_backward(TINY, ParallelSpec(), batch, TORCH_AMP) + vocab_ops.embedding_backward(TINY, ParallelSpec(), batch, TORCH_AMP))
