"""MoE dispatch across nodes (alltoall vs DeepEP's node-deduplicated dispatch, group-limited routing), the shared-expert
and EP-alltoall overlaps, and explicit pipeline layouts (llm/comm.py, llm/work.py, llm/spec.py)."""

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from simcluster.errors import ScenarioError
from simcluster.llm import comm, moe_sync
from simcluster.llm.framework import MEGATRON
from simcluster.llm.param_counts import stage_layers
from simcluster.llm.spec import BatchSpec, LlmConfigError, ParallelSpec, TransformerSpec
from simcluster.llm.spec_check import check

DSV3 = TransformerSpec(61, 7168, 18432, 128, 128, 129280, 4096, experts=256, top_k=8, expert_ffn=2048, attn_head_dim=128,
                       q_lora_rank=1536, kv_lora_rank=512, qk_rope_dim=64, v_head_dim=128, shared_expert_ffn=2048, dense_layers=3,
                       mtp_layers=1, expert_groups=8, group_topk=4)
QWEN3_30B = TransformerSpec(48, 2048, 6144, 32, 4, 151936, 4096, experts=128, top_k=8, expert_ffn=768, attn_head_dim=128, qk_norm=True)


def _monte_carlo_nodes(model: TransformerSpec, nodes: int, draws: int = 20000) -> float:
    rng = np.random.default_rng(1)
    e, g, m = model.experts, model.expert_groups or 1, model.group_topk or 1
    size, hit = e // g, 0
    for _ in range(draws):
        chosen = rng.choice(g, m, replace=False)
        pool = np.concatenate([np.arange(c * size, (c + 1) * size) for c in chosen])
        hit += len(set(rng.choice(pool, model.top_k, replace=False) // (e // nodes)))
    return hit / draws


def test_nodes_per_token_without_groups_is_the_hypergeometric_miss():
    # Qwen3 30B on 2 nodes: a node is missed when all 8 experts come from the other 64: C(64, 8) / C(128, 8)
    missed = math.comb(64, 8) / math.comb(128, 8)
    assert comm.ep_nodes_per_token(QWEN3_30B, 2) == pytest.approx(2 * (1 - missed))
    assert comm.ep_nodes_per_token(QWEN3_30B, 1) == 1.0
    assert comm.ep_nodes_per_token(QWEN3_30B, 16) < 8        # never more nodes than experts picked


@pytest.mark.parametrize("nodes", [2, 8, 16])
def test_nodes_per_token_with_group_limited_routing_matches_a_simulation(nodes):
    """DeepSeek-V3's 8 groups, top 4: groups whole on a node (8 nodes: one group each; 2 nodes: four each) or spread
    over two nodes (16): the closed form against 20,000 drawn tokens."""
    assert comm.ep_nodes_per_token(DSV3, nodes) == pytest.approx(_monte_carlo_nodes(DSV3, nodes), abs=0.03)
    assert comm.ep_nodes_per_token(DSV3, 8) <= 4          # at most group_topk nodes when a group is a node


def test_misaligned_groups_and_bad_group_settings_are_refused():
    with pytest.raises(ScenarioError, match="expert_groups 8 and the EP group's 3 nodes"):
        comm.ep_nodes_per_token(DSV3, 3)
    with pytest.raises(LlmConfigError, match="model.expert_groups: 8 groups and the EP group's 3 nodes"):
        comm.check_dispatch(DSV3, ParallelSpec(dp=24, ep=24, moe_dispatcher="deepep"), 8)
    comm.check_dispatch(DSV3, ParallelSpec(dp=24, ep=24), 8)     # alltoall: no alignment needed
    with pytest.raises(LlmConfigError, match="model.expert_groups"):
        replace(DSV3, expert_groups=7)
    with pytest.raises(LlmConfigError, match="model.group_topk"):
        replace(DSV3, group_topk=0)
    with pytest.raises(LlmConfigError, match="do not fit"):
        replace(QWEN3_30B, expert_groups=64, group_topk=1)      # 8 experts from one group of 2


def test_deepep_sends_a_token_once_per_node(monkeypatch):
    """Across nodes, deepep's network alltoall carries S D / k (D = nodes per token) and its NVLink forward S; the
    dispatch takes the longer. Inside a node both dispatchers are the same alltoall."""
    calls = []
    monkeypatch.setattr(comm, "collective_s", lambda net, group, op, nbytes: calls.append(nbytes) or nbytes * 1e-9)
    monkeypatch.setattr(comm, "predict", lambda card, op, nbytes, n: type("R", (), {"time_s": nbytes * 1e-10})())
    across, net = comm.Group("ep", 64, 1, 8, 8), comm.Network(None, 8)
    s = 4096 * 8 * 7168 * 2
    plain = comm.ep_dispatch_s(DSV3, ParallelSpec(dp=64, ep=64), net, across, s)
    deep = comm.ep_dispatch_s(DSV3, ParallelSpec(dp=64, ep=64, moe_dispatcher="deepep"), net, across, s)
    assert plain == pytest.approx(s * 1e-9)
    assert calls[-1] == pytest.approx(s * comm.ep_nodes_per_token(DSV3, 8) / 8)
    assert deep == pytest.approx(s * comm.ep_nodes_per_token(DSV3, 8) / 8 * 1e-9)
    inside = comm.Group("ep", 8, 1, 8, 1)
    assert comm.ep_dispatch_s(DSV3, ParallelSpec(dp=8, ep=8, moe_dispatcher="deepep"), net, inside, s) == pytest.approx(s * 1e-9)
    monkeypatch.setattr(comm, "predict", lambda card, op, nbytes, n: type("R", (), {"time_s": nbytes * 1e-9})())
    assert comm.ep_dispatch_s(DSV3, ParallelSpec(dp=64, ep=64, moe_dispatcher="deepep"), net, across, s) == pytest.approx(s * 1e-9)


def _step(model, par, batch, gpus):
    from simcluster.build import llm_network
    from simcluster.hardware.gpu import load_gpu
    from simcluster.llm.predict import predict_llm
    from simcluster.reference.llm import LlmUsage, machine_for

    usage = LlmUsage("models/gpu/h100-sxm.yaml", "models/nic/roce-400g.yaml", "models/collective/h200x4-nvlink.yaml", 8, {})
    machine = machine_for(usage, gpus)
    return predict_llm(model, par, batch, load_gpu(machine.gpu_card)[0], llm_network(machine),
                       gpus, "megatron", trace=False)


def test_dispatcher_and_overlaps_order_the_exposed_ep_time():
    """Qwen3 30B over 2 nodes (EP 16): deduplicated dispatch exposes less EP time than alltoall; overlapping the
    alltoall with the other micro-batch's compute exposes less again; compute is the same with and without the overlap,
    and less under DeepEP by the two permutations it does not run (no sort of the received chunks by local expert)."""
    model, batch = QWEN3_30B, BatchSpec(64, 1)
    base = ParallelSpec(dp=16, ep=16, zero=1)
    runs = {name: _step(model, replace(base, **kw), batch, 16)
            for name, kw in (("alltoall", {}), ("deepep", {"moe_dispatcher": "deepep"}), ("overlap", {"moe_a2a_overlap": True}))}
    ep = {k: r.breakdown["exposed_ep_comm"] for k, r in runs.items()}
    assert ep["deepep"] < 0.5 * ep["alltoall"]             # ~2 node copies of 8 per token
    assert ep["overlap"] < 0.5 * ep["alltoall"]            # most of it beside the other micro-batch's compute
    assert runs["overlap"].breakdown["compute"] == pytest.approx(runs["alltoall"].breakdown["compute"], rel=1e-9)
    assert runs["deepep"].breakdown["compute"] < runs["alltoall"].breakdown["compute"]


def test_permute_bytes_by_hand():
    """Four copies of the dispatched rows under alltoall with several local experts, two otherwise; with TP 2 and expert
    TP 1 each TP rank dispatches half the tokens (the rows it sends are the rows it receives, balanced)."""
    from simcluster.llm import ops

    model = QWEN3_30B          # 128 experts, top 8, hidden 2048
    batch = BatchSpec(64, 1)
    T, k, h = model.seq, model.top_k, model.hidden

    def permute_bytes(par):
        return next(op.bytes for op in ops.layer_forward(model, par, batch) if op.name == "permute")

    assert permute_bytes(ParallelSpec(dp=16, ep=16, zero=1)) == 4 * 2 * T * k * h * 2
    assert permute_bytes(ParallelSpec(dp=16, ep=16, zero=1, moe_dispatcher="deepep")) == 2 * 2 * T * k * h * 2
    assert permute_bytes(ParallelSpec(dp=128, ep=128, zero=1)) == 2 * 2 * T * k * h * 2        # one expert per GPU
    assert permute_bytes(ParallelSpec(tp=2, dp=8, ep=16, zero=1, sequence_parallel=True, expert_tp=1)) == 4 * 2 * (T // 2) * k * h * 2
    # experts split by TP (etp 2, 16 local experts): permute and unpermute on the rank's own T k / 2 rows, the sorts on the T k gathered over
    # expert TP (moedev51; token_dispatcher.py: permute, A2A(EP), AG(TP) -> sort_chunk)
    assert permute_bytes(ParallelSpec(tp=2, dp=8, ep=16, zero=1, sequence_parallel=True)) == 2 * (2 * T // 2 + 2 * T) * k * h * 2



def test_shared_expert_overlap_hides_up_to_the_shared_experts_time(monkeypatch):
    from simcluster.llm import layer_work
    from simcluster.llm.moe_compute import MoeCompute, a2a_pair_s

    lc = comm.LayerComm(0, 0, 0, 0, ep_fwd_s=3e-3, ep_bwd_s=5e-3)
    gpu = type("G", (), {"overlap_compute_slowdown": 0.0, "overlap_comm_rate": 1.0, "sm_count": 132})()
    from simcluster.llm.framework import MEGATRON
    par = ParallelSpec(dp=8, ep=8, moe_shared_expert_overlap=True)
    assert layer_work.exposed_ep(par, lc, gpu, MEGATRON, MoeCompute(9e-3, 1e-3, 10e-3, 2e-3, 8e-3, 1e-3, 8e-3)) == pytest.approx((2e-3, 0.0))
    assert layer_work.exposed_ep(ParallelSpec(dp=8, ep=8), lc, gpu, MEGATRON, MoeCompute(1, 1, 1, 1, 1)) == (3e-3, 5e-3)
    # the combined 1F1B pair, phase by phase (dispatch = combine = 1.5 ms forward, 2.5 ms backward):
    # A max(combine_bwd 2.5, pre_f 1) = 2.5; B: mlp_fwd starts at max(mlp_b 1 + dw 1, dispatch_f 1.5) = 2 and ends at 3,
    # dispatch_bwd starts at max(1.5, 1) and ends at 4: 4; C max(combine_fwd 1.5, pre_b 0.5) = 1.5; pair 8 ms, compute 4.5 ms
    par = ParallelSpec(dp=8, ep=8, moe_a2a_overlap=True)
    c = MoeCompute(pre_f=1e-3, mlp_f=1e-3, pre_b=0.5e-3, mlp_b=1e-3, dw_b=1e-3)
    assert a2a_pair_s(c, 3e-3, 5e-3) == pytest.approx(8e-3)
    assert layer_work.exposed_ep(par, lc, gpu, MEGATRON, c) == pytest.approx((3.5e-3 * 3 / 8, 3.5e-3 * 5 / 8))
    # the same compute in one lump beside the EP time would hide all of it (8 ms of compute, 8 ms of EP): the phases do not
    lump = MoeCompute(pre_f=4e-3, mlp_f=0.0, pre_b=4e-3, mlp_b=0.0, dw_b=0.0)
    assert sum(layer_work.exposed_ep(par, lc, gpu, MEGATRON, lump)) == pytest.approx(4e-3)   # A: 4 | B: 4 | C: 4 -> 12 - 8
    # the dispatcher's 20 of 132 SMs: beside long compute the pair still exposes 20/132 of its EP time
    long = MoeCompute(10e-3, 10e-3, 10e-3, 5e-3, 5e-3)
    assert sum(layer_work.exposed_ep(par, lc, gpu, MEGATRON, long)) == pytest.approx(8e-3 * 20 / 132)
    deep = ParallelSpec(dp=8, ep=8, moe_dispatcher="deepep", moe_a2a_overlap=True)
    assert sum(layer_work.exposed_ep(deep, lc, gpu, MEGATRON, long)) == pytest.approx(8e-3 * 20 / 132)
    assert sum(layer_work.exposed_ep(deep, lc, gpu, MEGATRON, MoeCompute(1e-3, 1e-3, 1e-3, 0.5e-3, 0.5e-3))) == pytest.approx(4e-3)   # 2.5 + 4 + 1.5 - 4
    with pytest.raises(LlmConfigError, match="moe_shared_expert_overlap: needs moe_dispatcher: alltoall"):
        ParallelSpec(dp=8, ep=8, moe_dispatcher="deepep", moe_shared_expert_overlap=True)
    with pytest.raises(LlmConfigError, match="moe_shared_expert_overlap: needs a shared expert"):
        check(QWEN3_30B, ParallelSpec(dp=8, ep=8, moe_shared_expert_overlap=True), BatchSpec(64, 1))
    with pytest.raises(LlmConfigError, match="moe_a2a_overlap: needs expert parallelism"):
        check(QWEN3_30B, ParallelSpec(dp=8, moe_a2a_overlap=True), BatchSpec(64, 1))
    with pytest.raises(LlmConfigError, match="moe_dispatcher: expected one of alltoall, deepep"):
        ParallelSpec(moe_dispatcher="hybrid")


def test_pipeline_layout_places_the_layers_and_is_checked():
    """NeMo's DeepSeek-V3 layout for PP 16: 3 + 14 x 4 + 2 (first and last stages lighter, they hold embedding and
    loss + MTP) instead of the default split."""
    layout = (3,) + (4,) * 14 + (2,)
    par = ParallelSpec(tp=2, pp=16, dp=32, ep=64, expert_tp=1, sequence_parallel=True, pipeline_layout=layout)
    assert par.layer_split(61) == layout
    assert [stage_layers(DSV3, par, s) for s in (0, 1, 15)] == [3, 4, 2]
    assert ParallelSpec(pp=16).layer_split(61) == (3, 3) + (4,) * 13 + (3,)
    check(DSV3, par, BatchSpec(8192, 1), 1024)
    with pytest.raises(LlmConfigError, match="pipeline_layout: the layout holds 60 layers, the model 61"):
        check(DSV3, replace(par, pipeline_layout=(2,) + layout[1:]), BatchSpec(8192, 1), 1024)
    with pytest.raises(LlmConfigError, match="expected 16 layer counts"):
        replace(par, pipeline_layout=layout[:-1])
    small = replace(DSV3, layers=16, dense_layers=1, mtp_layers=0)
    four = ParallelSpec(pp=4, dp=16, ep=16, zero=1)
    fast = _step(small, four, BatchSpec(64, 1), 64)
    slow = _step(small, replace(four, pipeline_layout=(13, 1, 1, 1)), BatchSpec(64, 1), 64)
    assert slow.step_time_s > fast.step_time_s      # an unbalanced layout: the 13-layer stage sets the pace


def test_scenario_keys_reach_the_spec(tmp_path):
    from simcluster.scenario import load as load_scenario

    text = ("""
name: moe-keys
machine:
  card: ROOT/models/collective/h200x4-nvlink.yaml
  gpus_per_node: 8
  nodes: 2
  gpu: {card: ROOT/models/gpu/h100-sxm.yaml}
  nic: {card: ROOT/models/nic/roce-400g.yaml, per_node: 8}
  fabric: {kind: rail-optimized, down_ports: 32, spines: 16, link_latency: 100ns, switch_latency: 600ns}
jobs:
  - kind: llm_training
    model: {layers: 8, hidden: 2048, ffn: 6144, heads: 32, kv_heads: 4, vocab: 151936, seq: 4096, experts: 128, top_k: 8,
            expert_ffn: 768, attn_head_dim: 128, expert_groups: 8, group_topk: 4}
    parallel: {pp: 2, dp: 8, ep: 8, zero: 1, pipeline_layout: [3, 5], moe_dispatcher: deepep, moe_a2a_overlap: true}
    global_batch: 64
    micro_batch: 1
""").replace("ROOT", str(Path(__file__).resolve().parent.parent))
    path = tmp_path / "s.yaml"
    path.write_text(text)
    job = load_scenario(path).jobs[0]
    assert job.parallel.pipeline_layout == (3, 5) and job.parallel.moe_dispatcher == "deepep" and job.parallel.moe_a2a_overlap
    assert job.model.expert_groups == 8 and job.model.group_topk == 4
    path.write_text(text.replace("moe_dispatcher: deepep", "moe_dispatcher: nccl"))
    with pytest.raises(ScenarioError, match="moe_dispatcher"):
        load_scenario(path)
    path.write_text(text.replace("[3, 5]", "[3, 4]"))
    with pytest.raises(ScenarioError, match="pipeline_layout"):
        load_scenario(path)
    # parallel.moe_pad_to_capacity (mendC51, cold review C51 item 5): read from a scenario on alltoall with ep > 1, the
    # dispatcher sync then off (llm/moe_sync.applies); refused in one line with DeepEP, at ep 1 and on a dense model
    padded = text.replace("moe_dispatcher: deepep, moe_a2a_overlap: true", "moe_pad_to_capacity: true")
    path.write_text(padded)
    job = load_scenario(path).jobs[0]
    assert job.parallel.moe_pad_to_capacity and not moe_sync.applies(MEGATRON, job.parallel)
    assert moe_sync.applies(MEGATRON, replace(job.parallel, moe_pad_to_capacity=False))
    for bad, what in ((padded.replace("moe_pad_to_capacity: true", "moe_pad_to_capacity: true, moe_dispatcher: deepep"),
                       "needs moe_dispatcher: alltoall"),
                      (padded.replace("dp: 8, ep: 8", "dp: 8, ep: 1"), "needs a mixture of experts with expert parallelism"),
                      (padded.replace(" experts: 128, top_k: 8,", "").replace(", expert_groups: 8, group_topk: 4", "")
                       .replace("expert_ffn: 768,", "").replace("dp: 8, ep: 8", "dp: 8"), "needs a mixture of experts")):
        path.write_text(bad)
        with pytest.raises(ScenarioError, match="moe_pad_to_capacity") as e:
            load_scenario(path)
        assert what in str(e.value) and "\n" not in str(e.value) and "Traceback" not in str(e.value)


def test_sliding_window_ops_and_flops_by_hand():
    """GPT-OSS-like layers (window 128 on every other layer): half the layers' attention kernels run s queries over
    W - W (W - 1) / (2 s) keys each (non-causal), the other half the full causal kernel; backward keeps the shares; the
    model FLOPs count the same keys; frameworks without windows refuse them."""
    from simcluster.llm import ops
    from simcluster.llm.framework import MEGATRON, MEGATRON_UNFUSED, TORCH_AMP
    from simcluster.llm.predict import model_flops_per_step
    from simcluster.llm.spec_check import check_model_framework

    s, w = 4096, 128
    m = TransformerSpec(4, 2880, 2880, 64, 8, 201088, s, experts=128, top_k=4, expert_ffn=2880, attn_head_dim=64, window=w,
                        full_attention_every=2)
    assert m.window_share == 0.5 and m.window_keys == pytest.approx(w - w * (w - 1) / (2 * s))
    par, batch = ParallelSpec(dp=8, ep=8), BatchSpec(8, 1)
    fwd = {o.name: o for o in ops.layer_forward(m, par, batch) if o.kind == "attention"}
    bwd = {o.name: o for o in ops.layer_backward(m, par, batch) if o.kind == "attention"}
    keys = round(m.window_keys)
    assert fwd["attention"].count == fwd["attention_window"].count == 0.5
    assert fwd["attention_window"].flops == pytest.approx(4 * 64 * s * keys * 64)              # no causal halving
    assert fwd["attention"].flops == pytest.approx(4 * 64 * s * s * 64 / 2)
    assert bwd["attention_window.bwd"].count == 0.5 and bwd["attention_window.bwd"].flops == pytest.approx(2.5 * fwd["attention_window"].flops)
    full = replace(m, window=0, full_attention_every=0)
    core = 64 * 64
    diff = model_flops_per_step(full, batch, "causal") - model_flops_per_step(m, batch, "causal")
    assert diff == pytest.approx(3 * 8 * s * 4 * 4 * core * 0.5 * (s / 2 - m.window_keys))
    assert replace(m, window=s).window_share == 0                                           # a window >= seq is full attention
    check_model_framework(m, MEGATRON)
    for fw in (MEGATRON_UNFUSED, TORCH_AMP):
        with pytest.raises(LlmConfigError, match="model.window"):
            check_model_framework(m, fw)


def test_every_stage_is_checked_for_memory_and_mtp_sits_on_the_last():
    """With a layout whose end stages are light (DeepSeek-V3 on pp 16: 3, 4 x 14, 2), a middle stage is the fullest and
    is the one reported; the last stage holds the MTP module's layer and an embedding copy."""
    from simcluster.llm.memory import memory_per_gpu
    from simcluster.llm.param_counts import stage_params

    layout = (3,) + (4,) * 14 + (2,)
    par = ParallelSpec(tp=2, pp=16, dp=32, ep=64, expert_tp=1, sequence_parallel=True, zero=1, recompute="selective",
                       recompute_modules=("mla_up_proj",), pipeline_layout=layout)
    mem = memory_per_gpu(DSV3, par, BatchSpec(8192, 1), 80e9)
    assert mem.stage.startswith("middle (")
    no_mtp = replace(DSV3, mtp_layers=0)
    last, last_plain = stage_params(DSV3, par, 15), stage_params(no_mtp, par, 15)
    one_layer = stage_params(no_mtp, replace(par, pipeline_layout=(3,) + (4,) * 13 + (5, 1)), 15)
    assert last.expert - last_plain.expert == pytest.approx(one_layer.expert)                 # the MTP layer's experts
    assert last.dense - last_plain.dense > DSV3.embedding_params() / 2                         # its embedding copy (/ tp)


def test_expert_tp_permute_and_router_on_the_ranks_own_shard_and_the_old_model_inside_the_handle():
    """moedev51: at TP 4 with SP the router GEMM runs on the rank's T / 4 tokens (moe_layer.py hands route() the sequence
    shard); with one local expert and expert TP 4 the alltoall dispatcher's permute and unpermute copy the rank's own
    T k / 4 rows and there is no sort: 2 copies of T k / 4; inside heldout/registration.moedev51_off the model as it
    priced before (router on T, both copies on the T k rows the experts compute)."""
    from simcluster.heldout.registration import moedev51_off
    from simcluster.llm import ops

    model, batch = QWEN3_30B, BatchSpec(64, 1)
    T, k, h, E = model.seq, model.top_k, model.hidden, model.experts
    par = ParallelSpec(tp=4, dp=128, ep=128, zero=1, sequence_parallel=True)   # 128 experts over EP 128: one local

    def shapes():
        f = {o.name: o for o in ops.layer_forward(model, par, batch)}
        return f["router"].shape[:3], f["permute"].bytes

    assert shapes() == ((T // 4, E, h), 2 * 2 * (T // 4) * k * h * 2)
    with moedev51_off():
        assert shapes() == ((T, E, h), 2 * 2 * T * k * h * 2)
    assert shapes() == ((T // 4, E, h), 2 * 2 * (T // 4) * k * h * 2)
