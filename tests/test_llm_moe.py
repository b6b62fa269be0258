"""MoE / attention variants of TransformerSpec (DeepSeek-V3, Qwen3 MoE): parameter counts, FLOPs and ops by hand."""

from dataclasses import replace

import pytest

from simcluster.cards import load_collective
from simcluster.llm import comm, ops
from simcluster.llm.framework import MEGATRON
from simcluster.llm.predict import model_flops_per_step
from simcluster.llm.spec import BatchSpec, LlmConfigError, ParallelSpec, TransformerSpec
from simcluster.llm.spec_check import check

# DeepSeek-V3 (HF config.json: 61 layers, hidden 7168, 128 heads, MLA q/kv ranks 1536 / 512, qk nope / rope 128 / 64,
# v 128, 256 routed experts top 8 of width 2048, 1 shared, first 3 layers dense 18432, vocab 129280, 1 MTP module)
DSV3 = TransformerSpec(61, 7168, 18432, 128, 128, 129280, 4096, experts=256, top_k=8, expert_ffn=2048, attn_head_dim=128,
                       q_lora_rank=1536, kv_lora_rank=512, qk_rope_dim=64, v_head_dim=128, shared_expert_ffn=2048, dense_layers=3,
                       mtp_layers=1)
QWEN3_235B = TransformerSpec(94, 4096, 12288, 64, 4, 151936, 4096, experts=128, top_k=8, expert_ffn=1536, attn_head_dim=128, qk_norm=True)


def test_deepseek_v3_parameters_by_hand():
    h, a = 7168, 128
    attn = h * 1536 + 1536 + 1536 * a * 192 + h * (512 + 64) + 512 + 512 * a * (128 + 128) + a * 128 * h
    moe = 256 * 3 * h * 2048 + 3 * h * 2048 + h * 256
    dense = 3 * h * 18432
    total = 3 * (attn + dense + 2 * h) + 58 * (attn + moe + 2 * h) + 2 * 129280 * h + h
    assert DSV3.parameter_count(with_mtp=False) == total
    assert DSV3.parameter_count(with_mtp=False) == pytest.approx(671e9, rel=0.005)        # published 671B
    assert DSV3.active_parameter_count(with_mtp=False) == pytest.approx(37e9, rel=0.02)   # published 37B activated
    assert DSV3.parameter_count() - DSV3.parameter_count(with_mtp=False) == attn + moe + 2 * h + 2 * h + 2 * h * h


def test_qwen3_235b_parameters_by_hand():
    h = 4096
    attn = 2 * h * 64 * 128 + 2 * h * 4 * 128 + 2 * 128
    layer = attn + 128 * 3 * h * 1536 + h * 128 + 2 * h
    assert QWEN3_235B.parameter_count() == 94 * layer + 2 * 151936 * h + h
    assert QWEN3_235B.parameter_count() == pytest.approx(235e9, rel=0.005)
    assert QWEN3_235B.active_parameter_count() == pytest.approx(22e9, rel=0.01)


def test_model_flops_count_the_attention_core_at_its_head_sizes():
    b = BatchSpec(1, 1)
    s, h = 4096, 4096
    n_mm = 94 * (QWEN3_235B.attention_params() + 8 * 3 * h * 1536 + h * 128) + 151936 * h
    assert model_flops_per_step(QWEN3_235B, b, "megatron") == pytest.approx(3 * s * (2 * n_mm + 4 * 94 * s * 64 * 128))
    core = 128 * (192 + 128) / 2       # MLA: Q K^T over 192, P V over 128
    f = model_flops_per_step(DSV3, b, "megatron")
    assert f > 6 * s * DSV3.active_parameter_count(with_mtp=False)   # MTP and attention on top of 6 N
    assert f - model_flops_per_step(DSV3.__class__(**{**DSV3.__dict__, "mtp_layers": 0}), b, "megatron") > 3 * s * 4 * s * core


def test_mla_and_shared_expert_ops():
    par, batch = ParallelSpec(tp=1, dp=8, ep=8), BatchSpec(64, 1)
    f = {o.name: o for o in ops.layer_forward(DSV3, par, batch)}
    T = 4096
    assert f["q_down"].shape[:3] == (T, 1536, 7168) and f["q_up"].shape[:3] == (T, 128 * 192, 1536)
    assert f["kv_down"].shape[:3] == (T, 576, 7168) and f["kv_up"].shape[:3] == (T, 128 * 256, 512)
    assert f["attn_out"].shape[:3] == (T, 7168, 128 * 128)
    assert f["shared_gate"].shape[:3] == (T, 2048, 7168)
    assert f["attention"].flops == pytest.approx(4 * 128 * T * T * 160 / 2)
    # MLA's rotary writes key and value out contiguous (llm/mla_layout.py): kv and k_pe read, key (192 a head) and value
    # (128) written; Megatron's fused rotary turns the query's rope slice in place (64 a head read and written), the
    # unfused form writes the whole query (192); its backward the same bytes
    kv = T * 128 * 256 * 2 + T * 64 * 2 + T * 128 * 320 * 2
    assert f["rotary"].bytes == 2 * T * 128 * 64 * 2 + kv
    assert f["rotary"].shape == (f["rotary"].bytes,)
    unfused = {o.name: o for o in ops.layer_forward(DSV3, par, batch, replace(MEGATRON, rope_fusion=False))}
    assert unfused["rotary"].bytes == 2 * T * 128 * 192 * 2 + kv


def test_qwen3_qk_norm_and_expert_tp_one():
    par, batch = ParallelSpec(tp=2, dp=16, ep=32, expert_tp=1, sequence_parallel=True), BatchSpec(256, 1)
    check(QWEN3_235B, par, batch, 32)
    f = {o.name: o for o in ops.layer_forward(QWEN3_235B, par, batch)}
    assert f["qk_norm"].bytes == 2 * 4096 * (32 + 2) * 128 * 2
    # expert TP 1: 32 experts' worth of ranks over tp x dp; each TP rank routes its 2048 tokens x 8 to 4 local experts, whole width
    assert f["expert_gate"].shape == (2048 * 8 * 32 // 128, 1536, 4096, 4)
    with pytest.raises(LlmConfigError, match="dp x cp x tp"):
        check(QWEN3_235B, ParallelSpec(tp=2, dp=8, ep=32, expert_tp=1, sequence_parallel=True), BatchSpec(256, 1), 16)
    with pytest.raises(LlmConfigError, match="does not divide dp x cp"):
        check(QWEN3_235B, ParallelSpec(tp=2, dp=16, ep=32, sequence_parallel=True), batch, 32)


def test_bad_moe_settings_name_their_key():
    with pytest.raises(LlmConfigError) as e:
        TransformerSpec(61, 7168, 18432, 128, 128, 129280, 4096, experts=256, top_k=8, expert_ffn=2048, kv_lora_rank=512)
    assert e.value.key == "model.kv_lora_rank"
    with pytest.raises(LlmConfigError) as e:
        TransformerSpec(4, 7168, 18432, 128, 128, 129280, 4096, experts=256, top_k=8, expert_ffn=2048, dense_layers=4)
    assert e.value.key == "model.dense_layers"
    with pytest.raises(LlmConfigError) as e:
        ParallelSpec(tp=4, dp=8, ep=8, expert_tp=2)
    assert e.value.key == "parallel.expert_tp"


def test_dense_first_layers_and_mtp_cost_step_time():
    from dataclasses import replace

    from simcluster.build import llm_network
    from simcluster.hardware.gpu import load_gpu
    from simcluster.llm.predict import predict_llm
    from simcluster.scenario_machine import Machine

    small = replace(DSV3, layers=8, mtp_layers=0, dense_layers=0)
    par, batch = ParallelSpec(tp=1, pp=2, dp=4, ep=4, zero=1, recompute="full"), BatchSpec(32, 1)
    machine = Machine("models/collective/h200x4-nvlink.yaml", 8, 1, None, None, 112.0, gpu_card="models/gpu/h100-sxm.yaml")
    gpu, net = load_gpu(machine.gpu_card)[0], llm_network(machine)
    step = {k: predict_llm(replace(small, **kw), par, batch, gpu, net, 8, "megatron", trace=False).step_time_s
            for k, kw in (("moe", {}), ("dense3", {"dense_layers": 3}), ("mtp", {"mtp_layers": 1}))}
    assert step["mtp"] > step["moe"]             # one more layer and head on the last stage
    assert step["dense3"] != step["moe"]          # the dense layers have their own ops (no alltoall, the 18432-wide MLP)


def test_recompute_modules_drop_their_stash_by_hand():
    """Megatron's recompute_modules (spec.RECOMPUTE_MODULES) on a Qwen3-235B layer, tp 2 with sequence parallelism,
    expert TP 1: each module removes its own term of memory.layer_activation_bytes (the module docstring's sizes)."""
    from dataclasses import replace

    from simcluster.llm.memory import layer_activation_bytes

    base = ParallelSpec(tp=2, dp=8, ep=16, sequence_parallel=True, expert_tp=1, recompute="selective")
    batch = BatchSpec(64, 1)
    s, h, t, k, fe = 4096, 4096, 2, 8, 1536

    def act(*modules):
        return layer_activation_bytes(QWEN3_235B, replace(base, recompute_modules=modules), batch)

    assert act() == act("core_attn")                                        # Megatron's default list
    assert act("core_attn", "moe_act") == pytest.approx(act("core_attn") - k * 2 * s * fe / t)
    assert act("core_attn", "layernorm") == pytest.approx(act("core_attn") - 2 * 2 * s * h / t)   # QKV and router inputs
    lse = 4 * 64 / t * s
    moe_stash = act("core_attn") - act("core_attn", "moe")
    assert moe_stash == pytest.approx(k * (4 * s * h / t + 6 * s * fe / t))      # the experts' stash; both inputs kept
    assert act("moe") - act("core_attn", "moe") == pytest.approx(lse)       # without core_attn the logsumexp stays


def test_recompute_modules_rerun_their_ops_and_collectives(monkeypatch):
    """The backward re-runs exactly the forward ops of the listed modules (ops.modules_of); recomputing the MoE block
    dispatches and combines its tokens again (comm.layer_comm's EP backward doubles)."""
    from simcluster.llm import comm

    batch = BatchSpec(64, 1)
    par = ParallelSpec(dp=8, ep=8, recompute="selective", recompute_modules=("moe_act", "mla_up_proj"))
    fwd = {o.name: o for o in ops.layer_forward(DSV3, par, batch)}
    again = {o.name[len("recompute."):] for o in ops.layer_backward(DSV3, par, batch) if o.name.startswith("recompute.")}
    assert again == {"swiglu", "q_up", "kv_up", "rotary"}
    par = ParallelSpec(dp=8, ep=8, recompute="selective", recompute_modules=("moe",))
    again = [o for o in ops.layer_backward(DSV3, par, batch) if o.name.startswith("recompute.")]
    # the local spec's ops (router_topk, expert_fc1) are not Megatron's (Transformer Engine) framework's
    megatron_moe = [n for n in ops.MOE_OPS if n not in ("router_topk", "expert_fc1")]
    assert {o.name for o in again} == {f"recompute.{n}" for n in megatron_moe}
    assert sum(o.total_flops for o in again) == pytest.approx(sum(fwd[n].total_flops for n in megatron_moe))
    dense = DSV3.dense_layer()
    par = ParallelSpec(dp=8, recompute="selective", recompute_modules=("mlp",))
    again = {o.name for o in ops.layer_backward(dense, par, batch) if o.name.startswith("recompute.")}
    assert again == {"recompute.gate", "recompute.up", "recompute.swiglu", "recompute.down"}
    assert not [o for o in ops.layer_backward(DSV3, par, batch) if o.name.startswith("recompute.")]   # mlp: dense layers only

    # every collective 1 ms: the number of calls is what is checked
    monkeypatch.setattr(comm, "collective_s", lambda net, group, op, nbytes: 1e-3 if group.size > 1 else 0.0)
    net = comm.Network(None, 8)
    plain, moe = ParallelSpec(dp=8, ep=8), ParallelSpec(dp=8, ep=8, recompute="selective", recompute_modules=("moe",))
    g = comm.groups(plain, net)
    assert comm.layer_comm(DSV3, plain, batch, net, g).ep_bwd_s == pytest.approx(2e-3)   # dispatch + combine
    assert comm.layer_comm(DSV3, moe, batch, net, g).ep_fwd_s == pytest.approx(2e-3)
    assert comm.layer_comm(DSV3, moe, batch, net, g).ep_bwd_s == pytest.approx(4e-3)     # and again for the recompute


def test_recompute_modules_need_selective_and_known_names():
    with pytest.raises(LlmConfigError, match="recompute_modules: a module list needs recompute: selective"):
        ParallelSpec(recompute="full", recompute_modules=("moe",))
    with pytest.raises(LlmConfigError, match="expected modules among"):
        ParallelSpec(recompute="selective", recompute_modules=("experts",))


def test_context_parallel_ranks_fold_into_the_expert_grid():
    """Megatron's expert grid (etp x ep x edp x pp) has no CP dimension: with tp 2, cp 2, dp 8 and ep 4 the experts spread
    over dp x cp = 16 ranks per TP slice, the EP group is 4 ranks at stride etp = 2 (inside a node of 8) and the expert
    data-parallel group 4 (= 16 / 4); the memory shards expert states over those 4, the step over the same."""
    par = ParallelSpec(tp=2, cp=2, dp=8, ep=4)
    assert (par.ep_span, par.expert_dp) == (16, 4)
    net = comm.Network(load_collective("models/collective/h200x4-nvlink.yaml")[0], 8, None)
    small = ParallelSpec(tp=2, cp=2, dp=2, ep=4)
    g = comm.groups(small, net)
    assert (g.ep.size, g.ep.stride, g.ep.inside_node) == (4, 2, True) and g.expert_dp.size == 1
