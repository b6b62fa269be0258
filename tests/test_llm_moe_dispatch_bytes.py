"""The MoE dispatch's bytes per GPU by expert TP and sequence parallelism (llm/comm.dispatch_bytes), against the
arithmetic of Megatron-Core 0.10's alltoall dispatcher (token_dispatcher.py MoEAlltoAllTokenDispatcher at core_v0.10.0):
the rank's sequence shard T / t, k copies over EP, then an all_gather over expert TP (the combine: reduce_scatter, then
the alltoall back). Shapes of Grok-1 (hidden 6144, 8 experts top-2)."""

import pytest

from simcluster.llm import comm
from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec

GROK = TransformerSpec(4, 6144, 32768, 48, 8, 128256, 4096, experts=8, top_k=2, expert_ffn=32768)
ROW = 2 * 6144 * 2          # one token's k = 2 copies, bf16 (bytes)
MB1 = BatchSpec(64, 1)


@pytest.mark.parametrize("par, sent_tokens, gather_ranks", [
    (ParallelSpec(tp=4, dp=4, ep=4, sequence_parallel=True), 4096 // 4, 4),                 # etp = tp = 4, SP: T / t, gather x4
    (ParallelSpec(tp=4, dp=4, ep=16, expert_tp=1, sequence_parallel=True), 4096 // 4, 0),   # etp 1: the shard, no gather
    (ParallelSpec(tp=4, dp=4, ep=4), 4096, 4),                                              # no SP: every TP rank holds all T
    (ParallelSpec(tp=1, dp=8, ep=8), 4096, 0),                                              # no TP
    (ParallelSpec(tp=4, dp=4, cp=2, ep=8, sequence_parallel=True), 4096 // 2 // 4, 4),      # CP: T = b s / c
])
def test_alltoall_dispatch_bytes_by_hand(par, sent_tokens, gather_ranks):
    sent, gathered = comm.dispatch_bytes(GROK, par, MB1)
    assert sent == sent_tokens * ROW
    assert gathered == sent_tokens * ROW * gather_ranks
    two = comm.dispatch_bytes(GROK, par, BatchSpec(64, 2))                 # bytes scale with the micro-batch
    assert two == (2 * sent, 2 * gathered)


def test_deepep_sends_every_tp_replica_its_copy():
    """The flex (DeepEP) dispatcher: the rank's T / t tokens to each of the t replicas of its k experts over TP x EP:
    T k h 2 at expert TP = tp, T k h 2 / t at expert TP 1; no separate TP gather."""
    full = ParallelSpec(tp=4, dp=4, ep=4, sequence_parallel=True, moe_dispatcher="deepep")
    one = ParallelSpec(tp=4, dp=4, ep=16, expert_tp=1, sequence_parallel=True, moe_dispatcher="deepep")
    assert comm.dispatch_bytes(GROK, full, MB1) == (4096 * ROW, 0.0)
    assert comm.dispatch_bytes(GROK, one, MB1) == (4096 // 4 * ROW, 0.0)


def test_layer_comm_prices_the_alltoalls_and_the_tp_gather(monkeypatch):
    """One MoE layer forward: two alltoalls (dispatch, combine) of `sent` on the EP group, one all_gather and one
    reduce_scatter of `gathered` on the TP group; the backward the same (no recompute), twice with recompute moe."""
    calls = []

    def fake(net, group, op, nbytes):
        calls.append((group.name, op, nbytes))
        return nbytes * 1e-12

    monkeypatch.setattr(comm, "collective_s", fake)
    par = ParallelSpec(tp=4, dp=4, ep=4, sequence_parallel=True)
    g = comm.Groups(*(comm.Group(n, 4, 1, 4, 1) for n in ("tp", "cp", "dp", "pp", "ep", "expert_dp")))
    lc = comm.layer_comm(GROK, par, MB1, comm.Network(None, 8), g)
    sent, gathered = 1024 * ROW, 4096 * ROW
    act = 4096 * 6144 * 2
    assert [c for c in calls if c[0] == "ep"] == [("ep", "alltoall", sent)]          # priced once, dispatch + combine
    # the full TP call list: the attention block's SP pair of T h 2, then the dispatcher's expert-TP pair; no MLP block's
    assert [c for c in calls if c[0] == "tp"] == [("tp", "all_gather", act), ("tp", "reduce_scatter", act),
                                                   ("tp", "all_gather", gathered), ("tp", "reduce_scatter", gathered)]
    assert lc.ep_fwd_s == pytest.approx((2 * sent + 2 * gathered) * 1e-12)
    assert lc.ep_bwd_s == lc.ep_fwd_s
    again = comm.layer_comm(GROK, ParallelSpec(tp=4, dp=4, ep=4, sequence_parallel=True, recompute="selective",
                                               recompute_modules=("moe",)), MB1, comm.Network(None, 8), g)
    assert again.ep_bwd_s == pytest.approx(2 * again.ep_fwd_s)


def test_the_experts_input_kept_for_the_backward_is_the_gathered_rows():
    """Memory: under expert TP = tp the experts' GEMM input the backward keeps is the all_gathered rows, etp x the rank's
    own T k / t; the combined tokens (the unpermute's input) stay the rank's own. Expert TP 1: own rows for both."""
    from simcluster.llm.memory import layer_activation_bytes

    full = layer_activation_bytes(GROK, ParallelSpec(tp=4, dp=4, ep=4, sequence_parallel=True), MB1)
    one = layer_activation_bytes(GROK, ParallelSpec(tp=4, dp=4, ep=16, expert_tp=1, sequence_parallel=True), MB1)
    s_b_h = 4096 * 6144
    assert full - one == pytest.approx(2 * 2 * s_b_h * (4 - 1) / 4)      # k 2 bytes x the 3 / 4 more rows


def _tp_calls(monkeypatch, model, par):
    """The TP group's collective calls of one layer, and the layer's TP seconds (fake: 1 ps per byte)."""
    calls = []

    def fake(net, group, op, nbytes):
        calls.append((group.name, op, nbytes))
        return nbytes * 1e-12

    monkeypatch.setattr(comm, "collective_s", fake)
    g = comm.Groups(*(comm.Group(n, 4, 1, 4, 1) for n in ("tp", "cp", "dp", "pp", "ep", "expert_dp")))
    lc = comm.layer_comm(model, par, MB1, comm.Network(None, 8), g)
    return [c for c in calls if c[0] == "tp"], lc


ACT = 4096 * 6144 * 2                                  # the full T h 2 tensor of one micro-batch (bytes)
PAIR = 2 * ACT * 1e-12                                  # one SP all_gather + reduce_scatter (fake seconds)
SP = dict(tp=4, dp=4, ep=4, sequence_parallel=True)
SHARED = TransformerSpec(4, 6144, 32768, 48, 8, 128256, 4096, experts=8, top_k=2, expert_ffn=32768, shared_expert_ffn=8192)
DENSE = TransformerSpec(4, 6144, 32768, 48, 8, 128256, 4096)


@pytest.mark.parametrize("model, extra, blocks_fwd, blocks_bwd", [
    (GROK, {}, 1, 1),                                                        # MoE: the attention block's pair only
    (GROK, dict(recompute="selective", recompute_modules=("moe",)), 1, 1),   # the MoE block again: no SP pair of its own
    (GROK, dict(recompute="full"), 1, 2),                                    # full recompute: the attention block's again
    (SHARED, {}, 2, 2),                                                      # a shared expert keeps its own SP pair
    (SHARED, dict(recompute="selective", recompute_modules=("moe",)), 2, 3),  # and repeats it with the MoE block
    (SHARED, dict(recompute="full"), 2, 4),
    (DENSE, {}, 2, 2),                                                       # dense: attention + MLP
    (DENSE, dict(recompute="selective", recompute_modules=("mlp",)), 2, 3),
    (DENSE, dict(recompute="full"), 2, 4),
])
def test_tp_calls_by_layer_kind(monkeypatch, model, extra, blocks_fwd, blocks_bwd):
    """Megatron-Core 0.10: a MoE layer's router and dispatcher take the rank's sequence shard, the experts run no TP
    communication, and the dispatcher's expert-TP gather stands where the dense MLP's SP gather was; a shared expert is a
    TP MLP with its own pair. The TP list names every call; the seconds count how often each SP pair runs."""
    par = ParallelSpec(**{**SP, "ep": 4 if model.moe else 1}, **extra)
    tp, lc = _tp_calls(monkeypatch, model, par)
    sp_pair = [("tp", "all_gather", ACT), ("tp", "reduce_scatter", ACT)]
    gathered = comm.dispatch_bytes(model, par, MB1)[1] if model.moe else 0
    assert tp == sp_pair + ([("tp", "all_gather", gathered), ("tp", "reduce_scatter", gathered)] if model.moe else [])
    assert lc.tp_fwd_s == pytest.approx(blocks_fwd * PAIR)
    assert lc.tp_bwd_s == pytest.approx(blocks_bwd * PAIR)


def test_tp_overlap_prices_no_mlp_block_call_on_a_moe_layer():
    """With TE's TP overlap a MoE layer without a shared expert exposes the attention block's calls only: the same as a
    dense layer whose MLP GEMMs and calls are left out (the old pricing charged the whole AG / RS of the missing
    gate / up / down GEMMs as exposed)."""
    from simcluster.llm import overlap

    class Gpu:
        sm_count = 132

    net = comm.Network(None, 8)
    group = comm.Group("tp", 4, 1, 4, 1)
    par = ParallelSpec(**SP)
    seen = []
    orig = comm.collective_s
    try:
        comm.collective_s = lambda net, group, op, nbytes: seen.append(op) or 1e-3
        overlap_ops = []                                       # no GEMMs: every call fully exposed
        f_moe, b_moe = overlap.tp_layer_exposed(GROK, par, MB1, Gpu, net, group, overlap_ops, overlap_ops)
        f_sh, b_sh = overlap.tp_layer_exposed(SHARED, par, MB1, Gpu, net, group, overlap_ops, overlap_ops)
        f_d, b_d = overlap.tp_layer_exposed(DENSE, ParallelSpec(tp=4, dp=4, sequence_parallel=True), MB1, Gpu, net, group,
                                            overlap_ops, overlap_ops)
    finally:
        comm.collective_s = orig
    assert (f_moe, b_moe) == pytest.approx((2e-3, 2e-3))      # attention: AG + RS forward, AG + RS backward
    assert (f_sh, b_sh) == pytest.approx((4e-3, 4e-3)) == (f_d, b_d)
