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
    moe = [c for c in calls if c[0] == "ep" or c[2] in (gathered,) and c[0] == "tp"]
    assert ("ep", "alltoall", sent) in moe
    assert ("tp", "all_gather", gathered) in moe and ("tp", "reduce_scatter", gathered) in moe
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
