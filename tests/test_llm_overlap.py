"""Framework options of the LLM model (issue 22, development rows): TP communication overlap, overlapped parameter
all_gather, the pre-2023 Megatron runtime, Megatron's loss and dropout kernels; each against hand computation."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from simcluster.cards import load_collective
from simcluster.hardware.gpu import load_gpu
from simcluster.llm import comm, overlap
from simcluster.llm.predict import predict_llm
from simcluster.llm.simulate import PipelineWork, StageWork, Task, simulate_iteration
from simcluster.llm.spec import BatchSpec, LlmConfigError, ParallelSpec, TransformerSpec
from simcluster.llm.work import build_work

GPT = TransformerSpec(24, 4096, 16384, 32, 32, 51200, 2048, mlp="gelu", tied_embeddings=True)


@pytest.fixture(scope="module")
def node():
    return comm.Network(load_collective("models/collective/h200x4-nvlink.yaml")[0], 8, None)


@dataclass(frozen=True)
class FlatGpu:
    """Every GEMM at 1 PFLOP/s exactly, 132 SMs: GEMM times a hand can write down."""

    sm_count: int = 132

    def gemm_time_s(self, m, n, k, dtype="bf16", batch=1):
        return 2.0 * m * n * k * batch / 1e15


def task(seconds: float) -> Task:
    return Task(seconds, {"compute": seconds, "tp": 0.0, "cp": 0.0, "ep": 0.0, "dp": 0.0, "host": 0.0})


# --- TP communication overlap ----------------------------------------------------------------------------------
def test_overlap_shapes_by_hand():
    assert overlap.ring_exchange_s(8.0, 2.0, 4) == 8.0              # GEMM-bound: the ring hides behind the other chunks
    assert overlap.ring_exchange_s(2.0, 8.0, 4) == 8.0 + 0.5        # comm-bound: the local chunk's GEMM first
    assert overlap.pipelined_s(8.0, 2.0, 4) == 8.0 + 0.5            # the last chunk's reduce_scatter after the GEMM
    assert overlap.pipelined_s(2.0, 8.0, 4) == 8.0 + 0.5            # the first chunk's GEMM before the comm
    assert overlap.bulk_s(3.0, 5.0) == 5.0
    assert overlap.param_gather_s(10.0, 4.0, 4) == pytest.approx(1.0)        # only the first bucket is exposed
    assert overlap.param_gather_s(2.0, 8.0, 4) == pytest.approx(8.0 + 0.5 - 2.0)        # the forward's last quarter after the gather
    assert overlap.param_gather_s(5.0, 0.0, 4) == 0.0


def test_tp_layer_exposed_by_hand(node):
    from simcluster.llm import ops

    par, batch = ParallelSpec(tp=4, sequence_parallel=True, tp_comm_overlap=True), BatchSpec(8, 2)
    gpu = FlatGpu()
    fwd_ops, bwd_ops = ops.layer_forward(GPT, par, batch), ops.layer_backward(GPT, par, batch)
    T, h, f, t = 2 * 2048, 4096, 16384, 4
    ag = comm.collective_s(node, comm.place("tp", 4, 1, 4, node), "all_gather", T * h * 2)
    rs = comm.collective_s(node, comm.place("tp", 4, 1, 4, node), "reduce_scatter", T * h * 2)
    qkv, out = 2 * T * (3 * h / t) * h / 1e15, 2 * T * h * (h / t) / 1e15         # forward GEMMs; dgrad and wgrad are the same FLOPs
    up, down = 2 * T * (f / t) * h / 1e15, 2 * T * h * (f / t) / 1e15
    slow = 132 / (132 - 16)
    fwd = (max(qkv, ag + qkv / 4) - qkv + max(up, ag + up / 4) - up
           + max(out * slow, rs) + min(out * slow, rs) / 4 - out + max(down * slow, rs) + min(down * slow, rs) / 4 - down)
    bwd = (max(out, ag + out / 4) - out + max(down, ag + down / 4) - down
           + max(qkv * slow, rs) - qkv + max(up * slow, rs) - up)
    got = overlap.tp_layer_exposed(GPT, par, batch, gpu, node, comm.place("tp", 4, 1, 4, node), fwd_ops, bwd_ops)
    assert got == pytest.approx((fwd, bwd), rel=1e-12)
    # without the overlap the same layer exposes 2 (all_gather + reduce_scatter) each way
    assert (ag + rs) * 2 > fwd


def test_tp_overlap_shortens_the_step_and_keeps_the_compute(node):
    h100 = load_gpu("models/gpu/h100-sxm.yaml")[0]
    base = ParallelSpec(tp=8, sequence_parallel=True)
    a = predict_llm(GPT, base, BatchSpec(8, 1), h100, node, 8, trace=False)
    b = predict_llm(GPT, ParallelSpec(tp=8, sequence_parallel=True, tp_comm_overlap=True), BatchSpec(8, 1), h100, node, 8, trace=False)
    assert b.breakdown["compute"] == pytest.approx(a.breakdown["compute"])
    assert 0 < b.breakdown["exposed_tp_comm"] < a.breakdown["exposed_tp_comm"]
    assert b.step_time_s == pytest.approx(a.step_time_s - a.breakdown["exposed_tp_comm"] + b.breakdown["exposed_tp_comm"])


def test_tp_overlap_needs_sequence_parallelism_and_overlap_param_gather_the_distributed_optimizer():
    with pytest.raises(LlmConfigError, match="parallel.tp_comm_overlap: .*sequence parallelism"):
        ParallelSpec(tp=2, tp_comm_overlap=True)
    with pytest.raises(LlmConfigError, match="parallel.overlap_param_gather: .*zero 1 or 2"):
        ParallelSpec(dp=2, overlap_param_gather=True)


# --- overlapped parameter all_gather -----------------------------------------------------------------------
def test_overlapped_gather_waits_for_its_first_bucket_only():
    # G = 2 s in 4 buckets from t = 0, F = 1 s: the forward starts at 0.5 (first bucket) and its last quarter waits
    # for the gather's end at 2: ends at 2.25; then B 2, F 1, B 2
    stage = StageWork((task(1.0),), (task(2.0),), ((),), (2.0,), 0.0, (4,))
    r = simulate_iteration(PipelineWork((stage,), 2))
    assert r.step_time_s == pytest.approx(2.25 + 2 + 1 + 2)
    assert r.breakdown["exposed_dp_comm"] == pytest.approx(overlap.param_gather_s(1.0, 2.0, 4)) == pytest.approx(1.25)
    waited = simulate_iteration(PipelineWork((StageWork((task(1.0),), (task(2.0),), ((),), (2.0,), 0.0, (0,)),), 2))
    assert waited.step_time_s == pytest.approx(2 + 1 + 2 + 1 + 2) and waited.breakdown["exposed_dp_comm"] == pytest.approx(2.0)


def test_overlap_param_gather_hides_most_of_a_pp1_gather(node):
    h100 = load_gpu("models/gpu/h100-sxm.yaml")[0]
    net = comm.Network(node.intra, 4, None)
    kw = dict(tp=1, dp=4, zero=1)
    a = predict_llm(GPT, ParallelSpec(**kw), BatchSpec(16, 1), h100, net, 4, trace=False)
    b = predict_llm(GPT, ParallelSpec(**kw, overlap_param_gather=True), BatchSpec(16, 1), h100, net, 4, trace=False)
    assert b.breakdown["exposed_dp_comm"] < a.breakdown["exposed_dp_comm"] and b.step_time_s < a.step_time_s


# --- Megatron-LM of early 2023 (megatron-2023-sync) -----------------------------------------------------------
def test_gradients_reduced_after_the_backward_and_parameters_gathered_after_the_optimizer():
    stage = StageWork((task(1.0),), (task(2.0),), ((0.5, 0.5, 0.5, 0.5),), (0.3,), 0.2)
    overlapped = simulate_iteration(PipelineWork((stage,), 2))
    # overlapped: the gather waited for at the start (0.3), then F B F B with the buckets behind the last backward
    assert overlapped.step_time_s == pytest.approx(0.3 + 6.0 + 0.5 + 0.2)
    sync = simulate_iteration(PipelineWork((stage,), 2, dp_after_backward=True))
    # F B F B = 6, then the four buckets one after the other (2.0), the optimizer (0.2), the gather (0.3)
    assert sync.step_time_s == pytest.approx(6.0 + 2.0 + 0.2 + 0.3)
    assert sync.breakdown["exposed_dp_comm"] == pytest.approx(2.3) and sync.breakdown["other"] == pytest.approx(0.2)


def test_blocking_sends_hold_the_sender():
    stages = (StageWork((task(1.0),), (task(2.0),)),) * 2
    free = simulate_iteration(PipelineWork(stages, 2, p2p_s=0.1))
    blocked = simulate_iteration(PipelineWork(stages, 2, p2p_s=0.1, blocking_p2p=True))
    # stage 0: F0 [0, 1], F1 [1, 2]; stage 1: F0 [1.1, 2.1], B0 [2.1, 4.1], F1 [4.1, 5.1], B1 [5.1, 7.1]; stage 0: B0 [4.2, 6.2], B1 [7.2, 9.2]
    assert free.step_time_s == pytest.approx(9.2) and free.breakdown["exposed_pp_comm"] == pytest.approx(0.2)
    # blocking: stage 0's F1 starts at 1.1 (its first send held it), stage 1's F1 at 4.2 (its gradient send), B1 ends
    # 7.2, arrives 7.3: stage 0 ends 9.3, having waited 0.1 on each of its two sends and 0.1 on each arriving gradient
    assert blocked.step_time_s == pytest.approx(9.3) and blocked.breakdown["exposed_pp_comm"] == pytest.approx(0.4)


def test_megatron_2023_sync_is_the_unfused_core_with_serial_dp(node):
    from simcluster.llm.framework import FRAMEWORKS

    fw = FRAMEWORKS["megatron-2023-sync"]
    assert fw.attention == "unfused" and fw.grad_reduce_after_backward and fw.blocking_p2p
    h100 = load_gpu("models/gpu/h100-sxm.yaml")[0]
    par, batch = ParallelSpec(tp=2, pp=2, dp=2, zero=1, sequence_parallel=True), BatchSpec(16, 1)
    a = predict_llm(GPT, par, batch, h100, node, 8, trace=False, framework=FRAMEWORKS["megatron-unfused-attention"])
    b = predict_llm(GPT, par, batch, h100, node, 8, trace=False, framework=fw)
    # the layers' compute is the same (stage 0: no loss; 2023's unfused loss makes the last stage's larger)
    wa, wb = (build_work(GPT, par, batch, h100, node, fw=f) for f in (FRAMEWORKS["megatron-unfused-attention"], fw))
    for pa, pb in zip(wa.stages[0].forward + wa.stages[0].backward, wb.stages[0].forward + wb.stages[0].backward, strict=True):
        assert pb.parts["compute"] == pytest.approx(pa.parts["compute"])
    assert b.breakdown["compute"] > a.breakdown["compute"]      # the breakdown is the last stage's: the head and the loss
    assert b.breakdown["exposed_dp_comm"] > a.breakdown["exposed_dp_comm"] and b.step_time_s > a.step_time_s


# --- Megatron's loss and dropout kernels ---------------------------------------------------------------------
def test_unfused_loss_bytes_per_logit():
    from simcluster.llm import vocab_ops
    from simcluster.llm.framework import FRAMEWORKS, MEGATRON

    par, batch = ParallelSpec(tp=4, sequence_parallel=True), BatchSpec(8, 2)
    logits = 2 * 2048 * 51200 // 4
    for fw, fwd, bwd in ((MEGATRON, 6, 12), (FRAMEWORKS["megatron-unfused-loss"], 6 + 4 + 8 + 8 + 4 + 8, 8 + 6),
                         (FRAMEWORKS["megatron-2023-sync"], 38, 14)):
        ce = [o for o in vocab_ops.head_forward(GPT, par, batch, fw) if o.name == "cross_entropy"][0]
        ce_b = [o for o in vocab_ops.head_backward(GPT, par, batch, fw) if o.name == "cross_entropy.bwd"][0]
        assert (ce.bytes, ce_b.bytes) == (fwd * logits, bwd * logits)


def test_dropout_masks_in_the_residual_adds_and_the_activations():
    from dataclasses import replace

    from simcluster.llm import ops
    from simcluster.llm.memory import layer_activation_bytes

    par, batch = ParallelSpec(tp=4, sequence_parallel=True), BatchSpec(8, 2)
    T_sp, h = 2 * 2048 // 4, 4096
    dropped = replace(GPT, dropout=True)
    add = [o for o in ops.layer_forward(dropped, par, batch) if o.name == "residual_add"][0]
    add_b = [o for o in ops.layer_backward(dropped, par, batch) if o.name == "residual_add.bwd"][0]
    assert add.count == add_b.count == 2
    assert add.bytes == T_sp * h * (2 + 2 + 2 + 1)                  # x, residual read; output and the 1-byte mask written
    assert add_b.bytes == 2 * T_sp * h * 6 + T_sp * h * (2 + 1 + 2)  # the add's backward + gradient x mask
    plain = [o for o in ops.layer_forward(GPT, par, batch) if o.name == "residual_add"][0]
    assert plain.bytes == T_sp * h * 6
    assert layer_activation_bytes(dropped, par, batch) - layer_activation_bytes(GPT, par, batch) == 2 * 2048 * 2 * h / 4


# --- published files: the options as their sources state them --------------------------------------------------
def test_published_files_name_the_options_per_row():
    from simcluster.errors import SimclusterError
    from simcluster.published import read_published
    from simcluster.reference.llm import framework_of, llm_usage
    from simcluster.reference.llm_specs import spec_of

    nemo = read_published("calibration/published/llm-nemo-24.07-dgx-h100-fp8.yaml", "published-llm-run")
    names = {run["model"]["name"]: framework_of(nemo, run).name for run in nemo.runs}
    assert names["GPT3-5B"] == names["Nemotron-340B"] == "megatron-unfused-loss" and names["LLAMA2-70B"] == "megatron"
    usage = llm_usage(nemo)
    (model, par, _), _, _ = spec_of(nemo.runs[6], usage.assumptions)       # Llama 2 70B: the recipe's TP overlap
    assert par.tp_comm_overlap and par.overlap_param_gather and not model.dropout
    (model, par, _), _, _ = spec_of(nemo.runs[2], usage.assumptions)       # GPT3-175B: no TP overlap, dropout kept
    assert not par.tp_comm_overlap and model.dropout
    bad = dict(nemo.runs[6], parallel=dict(nemo.runs[6]["parallel"], tp_comm_overlap="yes"))
    with pytest.raises(SimclusterError, match="tp_comm_overlap"):
        spec_of(bad, usage.assumptions)
    mega = read_published("calibration/published/llm-megascale2024-table2.yaml", "published-llm-run")
    assert framework_of(mega, mega.runs[0]).name == "megatron-2023-sync"
