"""Expert TP 1 with context parallelism (cpmoe50, issue 44): Megatron-Core's expert grid folds tp x cp x dp into
expert_tp x ep x expert_dp (megatron/core/parallel_state.py at d98e8a64: the expert RankGenerator has cp=1 and
expert_data_parallel_size = world / (etp ep pp)); the MoE layer sees each CP rank's own sequence shard. Worked by hand."""

import math

from simcluster.build import llm_network
from simcluster.cards import load_collective
from simcluster.hardware.gpu import load_gpu
from simcluster.llm import comm, ops
from simcluster.llm.framework import MEGATRON
from simcluster.llm.memory import stage_memories
from simcluster.llm.param_counts import stage_params
from simcluster.llm.predict import predict_llm
from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec
from simcluster.llm.spec_check import check
from simcluster.scenario_machine import Machine

QWEN3_235B = TransformerSpec(94, 4096, 12288, 64, 4, 151936, 32768, experts=128, top_k=8, expert_ffn=1536, attn_head_dim=128, qk_norm=True)


def _megatron_expert_groups(tp, cp, dp, etp, ep):
    """Megatron's two rank orders, written out rank by rank: dense rank = tp_r + tp (cp_r + cp dp_r) (order tp-cp-dp),
    expert rank = etp_r + etp (ep_r + ep edp_r) (order tp-ep-dp, no cp); returns the EP group and the expert
    data-parallel group of rank 0 as sets of ranks, and the dense (tp_r, cp_r, dp_r) of every rank in the EP group."""
    world, edp = tp * cp * dp, tp * cp * dp // (etp * ep)
    ep_group = {r for r in range(world) if r % etp == 0 and (r // (etp * ep)) == 0}
    edp_group = {r for r in range(world) if r % (etp * ep) == 0}
    assert len(ep_group) == ep and len(edp_group) == edp
    dense = {r: (r % tp, (r // tp) % cp, r // (tp * cp)) for r in ep_group}
    return ep_group, edp_group, dense


def test_expert_tp_one_with_cp_groups_by_hand():
    """tp 2, cp 2, dp 2, ep 4, expert TP 1 on 8 GPUs (a config refused before cpmoe50): the experts spread over
    tp x cp x dp = 8 ranks; the EP group is 4 consecutive ranks (the two TP ranks of both CP ranks of one dp replica),
    the expert data-parallel group 8 / 4 = 2 ranks 4 apart; the dense gradients reduce over dp x cp = 4 ranks 2 apart."""
    par = ParallelSpec(tp=2, cp=2, dp=2, ep=4, expert_tp=1, sequence_parallel=True)
    assert (par.etp, par.ep_span, par.expert_dp) == (1, 8, 2)
    ep_group, edp_group, dense = _megatron_expert_groups(2, 2, 2, 1, 4)
    assert ep_group == {0, 1, 2, 3} and edp_group == {0, 4}
    assert sorted(dense.values()) == [(0, 0, 0), (0, 1, 0), (1, 0, 0), (1, 1, 0)]   # both CP ranks inside one EP group
    net = comm.Network(load_collective("models/collective/h200x4-nvlink.yaml")[0], 8, None)
    g = comm.groups(par, net)
    assert (g.ep.size, g.ep.stride) == (4, 1) and (g.expert_dp.size, g.expert_dp.stride) == (2, 4)
    assert (g.dense_grad.size, g.dense_grad.stride) == (4, 2) and (g.cp.size, g.cp.stride) == (2, 2)


def test_model_zoo_32k_layout_groups_dispatch_and_routed_rows_by_hand():
    """The Model Zoo's 32K layout per pipeline stage (tp 4, cp 2, dp 4, ep 8, expert TP 1; 32 ranks a stage): the experts'
    ranks 4 x 2 x 4 = 32, expert_dp 32 / 8 = 4. A rank holds b s / c / t = 32768 / 2 / 4 = 4096 tokens (its CP shard's
    sequence-parallel slice) and sends each to k = 8 experts: 4096 x 8 x 4096 x 2 bytes = 256 MiB a dispatch with either
    dispatcher, no expert-TP gather; per local expert (128 / 8 = 16 local) it receives 4096 x 8 x 8 / 128 = 2048 rows."""
    par = ParallelSpec(tp=4, cp=2, dp=4, pp=8, ep=8, expert_tp=1, sequence_parallel=True, virtual_stages=4)
    batch = BatchSpec(256, 1)
    check(QWEN3_235B, par, batch, 256)
    assert (par.ep_span, par.expert_dp) == (32, 4)
    for dispatcher in ("alltoall", "deepep"):
        p = ParallelSpec(**{**par.__dict__, "moe_dispatcher": dispatcher})
        assert comm.dispatch_bytes(QWEN3_235B, p, batch) == (4096 * 8 * 4096 * 2, 0.0)
    f = {o.name: o for o in ops.layer_forward(QWEN3_235B, par, batch)}
    assert f["expert_gate"].shape == (2048, 1536, 4096, 16)        # whole experts (expert TP 1), 16 local
    # Megatron's router sees the sequence-parallel shard b s / (c t) (cold review C50 item 3; moe_layer.py / router.py at
    # d98e8a64): priced so since session 51's moedev51 (llm/moe_router_term.router_tokens), b s / c before
    assert f["router"].shape[0] == 32768 // 2 // 4


def test_expert_states_shard_over_the_expert_data_parallel_group():
    """zero 1: the optimizer state is 12 bytes x (dense / (dp x cp) + expert / expert_dp) per GPU; with tp 4, cp 2,
    dp 4, ep 8, expert TP 1 that is dense / 8 + expert / 4 (expert_dp 4), not expert / 8."""
    par = ParallelSpec(tp=4, cp=2, dp=4, pp=8, ep=8, expert_tp=1, sequence_parallel=True, zero=1, recompute="full")
    for stage, mem in enumerate(stage_memories(QWEN3_235B, par, BatchSpec(256, 1), 80 * 2**30, MEGATRON)):
        p = stage_params(QWEN3_235B, par, stage, par.tp)
        assert math.isclose(mem.optimizer, 12 * (p.dense / 8 + p.expert / 4), rel_tol=1e-12)


def test_refused_config_now_predicts_a_step_whose_expert_layer_is_worked_by_hand():
    """A small Qwen3-like MoE (4 layers, 8K) on 8 H100s, tp 2, cp 2, dp 2, ep 4, expert TP 1: refused before cpmoe50,
    now a step; against expert TP = tp (2) at the same layout, by hand: a rank holds b s / c / t = 8192 / 2 / 2 = 2048
    tokens and sends each to k = 4 experts, 2048 x 4 x 2048 x 2 bytes = 32 MiB a dispatch either way; expert TP 2 then
    gathers the received rows over its 2 ranks (64 MiB, the gathered whole), expert TP 1 gathers nothing. Per local
    expert (16 / 4 = 4 local) the EP group's 4 ranks send 2048 x 4 x 4 / 16 = 2048 rows: whole experts (ffn 768) with
    expert TP 1, twice the rows on half an expert (384) with expert TP 2. Outside expert TP the experts spread over
    dp x cp x tp / etp = 8 or 4 ranks: expert_dp 8 / 4 = 2 reduces the expert gradients with expert TP 1, 4 / 4 = 1 none
    with expert TP 2; the dense layers are the same."""
    small = TransformerSpec(4, 2048, 6144, 16, 4, 32000, 8192, experts=16, top_k=4, expert_ffn=768)
    machine = Machine("models/collective/h200x4-nvlink.yaml", 8, 1, None, None, 112.0, gpu_card="models/gpu/h100-sxm.yaml")
    gpu, net = load_gpu(machine.gpu_card)[0], llm_network(machine)
    batch, dispatch, result = BatchSpec(16, 1), 2048 * 4 * 2048 * 2, {}
    expected = {1: ((dispatch, 0.0), (8, 2), (2048, 768, 2048, 4)), 2: ((dispatch, 2.0 * dispatch), (4, 1), (4096, 384, 2048, 4))}
    for etp, (bytes_, span, gate) in expected.items():
        par = ParallelSpec(tp=2, cp=2, dp=2, ep=4, expert_tp=etp, sequence_parallel=True, zero=1)
        assert comm.dispatch_bytes(small, par, batch) == bytes_ and (par.ep_span, par.expert_dp) == span
        f = {o.name: o for o in ops.layer_forward(small, par, batch)}
        assert f["expert_gate"].shape == f["expert_up"].shape == gate and f["expert_down"].shape == (gate[0], 2048, gate[1], 4)
        result[etp] = predict_llm(small, par, batch, gpu, net, 8, "megatron", trace=False)
    assert all(0 < r.step_time_s < math.inf for r in result.values())
    b1, b2 = result[1].breakdown, result[2].breakdown
    assert b1["exposed_tp_comm"] == b2["exposed_tp_comm"]          # the dense layers' TP is the same layout
    assert b2["exposed_ep_comm"] > b1["exposed_ep_comm"]          # the expert-TP gather (and its reduce-scatter) on top
    assert b1["exposed_dp_comm"] > b2["exposed_dp_comm"]          # expert gradients reduced over expert_dp 2, not at 1
