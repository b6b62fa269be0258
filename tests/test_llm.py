"""LLM training model: parameter counts, the op expansion by hand, memory by hand, the pipeline DES against
closed forms, error paths and determinism."""

from __future__ import annotations

import dataclasses
import pathlib
import textwrap

import pytest

from simcluster.cards import load_collective
from simcluster.errors import ScenarioError
from simcluster.hardware.gpu import load_gpu
from simcluster.llm import comm, ops
from simcluster.llm.framework import MEGATRON, TORCH_AMP
from simcluster.llm.memory import GiB, layer_activation_bytes, memory_per_gpu
from simcluster.llm.param_counts import stage_params
from simcluster.llm.predict import model_flops_per_step, predict_llm
from simcluster.llm.simulate import PipelineWork, StageWork, Task, schedule, simulate_iteration
from simcluster.llm.spec import BatchSpec, LlmConfigError, ParallelSpec, TransformerSpec, layer_split
from simcluster.llm.spec_check import check
from simcluster.scenario import load

LLAMA2_7B = TransformerSpec(32, 4096, 11008, 32, 32, 32000, 4096)
LLAMA3_8B = TransformerSpec(32, 4096, 14336, 32, 8, 128256, 8192)
LLAMA3_70B = TransformerSpec(80, 8192, 28672, 64, 8, 128256, 8192)
LLAMA3_405B = TransformerSpec(126, 16384, 53248, 128, 8, 128256, 8192)
TINY = TransformerSpec(layers=2, hidden=8, ffn=16, heads=2, kv_heads=1, vocab=32, seq=4)


# --- parameter counts against the published model cards (Hugging Face safetensors totals) ----------
@pytest.mark.parametrize("model,published", [(LLAMA2_7B, 6_738_415_616), (LLAMA3_8B, 8_030_261_248),
                                             (LLAMA3_70B, 70_553_706_496)])
def test_parameter_count_matches_published(model, published):
    assert model.parameter_count() == published


def test_gpt3_175b_parameter_count():
    gpt3 = TransformerSpec(96, 12288, 4 * 12288, 96, 96, 51200, 2048, mlp="gelu", tied_embeddings=True)
    # Narayanan et al. 2021 eq. 2 without biases and position embeddings: 12 l h^2 + V h (+ norms)
    assert gpt3.parameter_count() == 12 * 96 * 12288**2 + 51200 * 12288 + 96 * 2 * 12288 + 12288


def test_405b_is_405b():
    assert abs(LLAMA3_405B.parameter_count() / 1e9 - 405.85) < 0.01   # Meta: 405B (HF: 405,853,388,800)


# --- the expansion of a tiny layer, computed on paper ------------------------------------------------
def test_tiny_layer_forward_flops_and_bytes_by_hand():
    par, batch = ParallelSpec(), BatchSpec(1, 1)
    fwd = {o.name: o for o in ops.layer_forward(TINY, par, batch)}
    # T = 4 tokens, h = 8, d = 4, a = 2, g = 1, f = 16
    assert fwd["qkv"].shape == (4, 16, 8, 1) and fwd["qkv"].flops == 2 * 4 * 16 * 8          # N = (2 + 2 x 1) x 4
    assert fwd["qkv"].bytes == (4 * 8 + 8 * 16) * 2 + 4 * 16 * 2
    assert fwd["attn_out"].flops == 2 * 4 * 8 * 8
    assert fwd["gate"].flops == fwd["up"].flops == fwd["down"].flops == 2 * 4 * 16 * 8
    assert fwd["attention"].flops == 4 * 1 * 2 * 4 * 4 * 4 * 0.5                              # causal halves QK^T and PV
    assert fwd["rmsnorm"].count == 2 and fwd["rmsnorm"].bytes == 2 * 4 * 8 * 2
    assert fwd["swiglu"].bytes == 3 * 4 * 16 * 2
    gemm = sum(o.total_flops for o in fwd.values() if o.kind == "gemm")
    assert gemm == 2 * 4 * (TINY.attention_params() + TINY.mlp_params())                   # 2 x tokens x weights


def test_backward_gemms_are_twice_forward_and_full_recompute_adds_the_forward():
    batch = BatchSpec(1, 1)
    fwd = ops.layer_forward(TINY, ParallelSpec(), batch)
    bwd = ops.layer_backward(TINY, ParallelSpec(), batch)
    g = lambda os: sum(o.total_flops for o in os if o.kind == "gemm")  # noqa: E731
    assert g(bwd) == 2 * g(fwd)
    full = ops.layer_backward(TINY, ParallelSpec(recompute="full"), batch)
    assert ops.total_flops(full) == pytest.approx(ops.total_flops(bwd) + ops.total_flops(fwd))
    sel = ops.layer_backward(TINY, ParallelSpec(recompute="selective"), batch)
    attn = sum(o.flops for o in fwd if o.kind == "attention")
    assert ops.total_flops(sel) == pytest.approx(ops.total_flops(bwd) + attn)
    assert [o.name for o in bwd if o.kind == "attention"] == ["attention.bwd"]
    assert next(o for o in bwd if o.kind == "attention").flops == 2.5 * attn


def test_tensor_parallel_shards_gemms_and_replicates_kv_heads():
    par, batch = ParallelSpec(tp=2, sequence_parallel=True), BatchSpec(1, 1)
    fwd = {o.name: o for o in ops.layer_forward(TINY, par, batch)}
    assert fwd["qkv"].shape == (4, (1 + 2 * 1) * 4, 8, 1)       # 1 query head, the single kv head replicated
    assert fwd["gate"].shape == (4, 8, 8, 1) and fwd["down"].shape == (4, 8, 8, 1)
    assert fwd["rmsnorm"].bytes == 2 * 2 * 8 * 2                # sequence parallel: T / t = 2 tokens


def test_context_parallel_attention_is_the_causal_share():
    """Load-balanced CP: each rank does 1 / cp of the causal attention, as cp unmasked blocks of s/cp x s/2cp, timed
    at that block's rate (not as one s/cp x s block holding half its FLOPs: that took twice the time, session 25)."""
    model = TransformerSpec(2, 8, 16, 2, 2, 32, 8)
    full = next(o for o in ops.layer_forward(model, ParallelSpec(), BatchSpec(1, 1)) if o.kind == "attention")
    cp = next(o for o in ops.layer_forward(model, ParallelSpec(cp=2), BatchSpec(1, 1)) if o.kind == "attention")
    assert cp.total_flops == pytest.approx(full.total_flops / 2)
    assert cp.count == 2 and cp.shape[3:5] == (4, 2) and cp.shape[6] is False      # s/cp queries, s/2cp keys, unmasked
    gpu, _ = load_gpu("models/gpu/h100-sxm.yaml")
    model = TransformerSpec(2, 4096, 14336, 32, 8, 32000, 32768)
    times = {}
    for c in (1, 4):
        op = next(o for o in ops.layer_forward(model, ParallelSpec(cp=c), BatchSpec(c, 1)) if o.kind == "attention")
        times[c] = ops.op_time_s(gpu, op, "bf16")
    assert times[1] / 4 < times[4] < times[1] / 4 * 1.15      # a quarter of the work at a block of 4,096 keys' rate


def test_model_flops_convention():
    batch = BatchSpec(1, 1)
    h, s, L, V = 4096, 4096, 32, 32000
    n_mm = L * (4 * h * h + 3 * h * 11008) + V * h
    assert model_flops_per_step(LLAMA2_7B, batch, "megatron") == pytest.approx(3 * s * (2 * n_mm + 4 * L * s * h))
    assert model_flops_per_step(LLAMA2_7B, batch, "causal") == pytest.approx(3 * s * (2 * n_mm + 2 * L * s * h))


# --- memory by hand -----------------------------------------------------------------------------------
def test_memory_components_by_hand():
    par, batch = ParallelSpec(), BatchSpec(4, 1)
    mem = memory_per_gpu(LLAMA2_7B, par, batch, 80 * GiB)
    p = LLAMA2_7B.parameter_count()
    assert stage_params(LLAMA2_7B, par, 0).total == pytest.approx(p)
    assert mem.parameters == pytest.approx(2 * p) and mem.gradients == pytest.approx(4 * p)
    assert mem.optimizer == pytest.approx(12 * p)
    s, b, h, f, a = 4096, 1, 4096, 11008, 32
    per_layer = s * b * (12 * h + 4 * h + 6 * f) + 4 * a * s * b
    assert layer_activation_bytes(LLAMA2_7B, par, batch) == pytest.approx(per_layer)
    assert mem.activations == pytest.approx(32 * per_layer + 2 * s * b * h)
    assert mem.logits == pytest.approx(6 * s * b * 32000)


def test_zero_stages_shard_state_gradients_and_parameters():
    batch = BatchSpec(8, 1)
    base = memory_per_gpu(LLAMA2_7B, ParallelSpec(dp=8), batch, 80 * GiB)
    z1 = memory_per_gpu(LLAMA2_7B, ParallelSpec(dp=8, zero=1), batch, 80 * GiB)
    z3 = memory_per_gpu(LLAMA2_7B, ParallelSpec(dp=8, zero=3), batch, 80 * GiB)
    assert z1.optimizer == pytest.approx(base.optimizer / 8) and z1.gradients == base.gradients
    assert z3.parameters == pytest.approx(base.parameters / 8 + 2 * 2 * LLAMA2_7B.layer_params()) and z3.gradients == pytest.approx(base.gradients / 8)
    assert MEGATRON.param_bytes + MEGATRON.grad_bytes + MEGATRON.state_bytes == 18


def test_recompute_and_sequence_parallel_shrink_activations():
    batch = BatchSpec(8, 1)
    s, b, h, t = 8192, 1, 8192, 8
    full = layer_activation_bytes(LLAMA3_70B, ParallelSpec(tp=t, sequence_parallel=True, recompute="full"), batch)
    assert full == pytest.approx(2 * s * b * h / t)
    plain = layer_activation_bytes(LLAMA3_70B, ParallelSpec(tp=t), batch)
    sp = layer_activation_bytes(LLAMA3_70B, ParallelSpec(tp=t, sequence_parallel=True), batch)
    assert plain - sp == pytest.approx(8 * s * b * h * (1 - 1 / t))   # norm, qkv and mlp inputs sharded


def test_torch_amp_peak_is_the_start_or_the_end_of_the_backward():
    batch = BatchSpec(1, 1)
    mem = memory_per_gpu(LLAMA2_7B, ParallelSpec(), batch, 80 * GiB, TORCH_AMP)
    p = LLAMA2_7B.parameter_count()
    assert mem.parameters == 4 * p and mem.optimizer == 8 * p and mem.gradients == 4 * p and mem.weight_copies == 2 * p
    live = mem.activations + mem.logits + mem.weight_copies
    assert mem.allocated == pytest.approx(12 * p + max(live, 4 * p))
    s, h, f = 4096, 4096, 11008
    eager = layer_activation_bytes(LLAMA2_7B, ParallelSpec(), batch, TORCH_AMP)
    # fp32 norm inputs (+ 2 x 2 s h), the attention output's copy (+ 2 s h) and the SiLU output (+ 2 s f) of the generic
    # eager block; the runner's (autocast_block): five bf16 input casts saved, not two, and no copy (+ 6 s h - 2 s h)
    assert eager - layer_activation_bytes(LLAMA2_7B, ParallelSpec(), batch) == pytest.approx(s * (4 * h + 2 * h + 2 * f + 4 * h))


def test_unfused_qkv_has_the_same_flops():
    par, batch = ParallelSpec(), BatchSpec(1, 1)
    fused = ops.layer_forward(TINY, par, batch)
    split = ops.layer_forward(TINY, par, batch, TORCH_AMP)
    gemm = lambda os: sum(o.total_flops for o in os if o.kind == "gemm")  # noqa: E731
    assert gemm(fused) == gemm(split) and {"q", "k", "v"} <= {o.name for o in split}


def test_eager_amp_kernel_inventory_by_hand():
    """torch-amp's memory-bound kernels of one layer, counted from the runner's decoder (RMSNorm, q/k/v, rotary,
    SDPA, o, SwiGLU, fp32 residual stream) and autograd's rules: forward 2 norms + 5 autocast input casts + 10 rotary
    + 1 attention-output copy + 2 SwiGLU + 2 residual adds = 22; backward their mirrors (22) + 5 gradient
    accumulations + 2 norm weight gradients + 8 rotary slice fills / copies + 3 q/k/v gradient copies + 1 SwiGLU = 41."""
    par, batch = ParallelSpec(), BatchSpec(1, 1)
    mem = lambda os: sum(o.count for o in os if o.kind in ("memory", "upcast"))  # noqa: E731   (an up-cast: memory-bound)
    fwd, bwd = ops.layer_forward(LLAMA2_7B, par, batch, TORCH_AMP), ops.layer_backward(LLAMA2_7B, par, batch, TORCH_AMP)
    assert (mem(fwd), mem(bwd)) == (22, 41)
    T, h = 4096, 4096
    cast = next(o for o in fwd if o.name == "cast")
    assert cast.count == 5 and cast.bytes == T * h * 6
    assert next(o for o in bwd if o.name == "cast.bwd").bytes == T * h * 6        # bf16 -> fp32 gradient copy, not twice the forward
    assert next(o for o in bwd if o.name == "cast.bwd").kind == "upcast"          # priced at GpuSpec.upcast_time_s
    assert next(o for o in bwd if o.name == "residual_add.bwd").bytes == T * h * 6  # the branch gradient cast down to bf16
    acc = next(o for o in bwd if o.name == "grad_accumulate")
    assert acc.count == 5 and acc.bytes == 3 * T * h * 4
    assert not any(o.name == "grad_accumulate" for o in ops.layer_backward(LLAMA2_7B, par, batch))   # Megatron: fused, none


def test_a_model_too_big_does_not_fit():
    mem = memory_per_gpu(LLAMA3_70B, ParallelSpec(), BatchSpec(1, 1), 80 * GiB)
    assert not mem.fits and mem.total > 18 * 70e9


# --- the pipeline DES against closed forms --------------------------------------------------------------
def _uniform(pp, v, m, f, b, p2p=0.0):
    stage = StageWork(tuple(Task(f, {"compute": f}) for _ in range(v)), tuple(Task(b, {"compute": b}) for _ in range(v)))
    return simulate_iteration(PipelineWork((stage,) * pp, m, p2p))


@pytest.mark.parametrize("pp,m", [(1, 4), (2, 3), (4, 8), (8, 8), (4, 16)])
def test_1f1b_step_is_m_plus_p_minus_1_times_f_plus_b(pp, m):
    f, b = 1.0, 2.0
    r = _uniform(pp, 1, m, f, b)
    assert r.step_time_s == pytest.approx((m + pp - 1) * (f + b))
    assert r.breakdown["pipeline_bubble"] == pytest.approx((pp - 1) * (f + b))
    assert sum(r.breakdown.values()) == pytest.approx(r.step_time_s)


@pytest.mark.parametrize("v", [2, 4])
def test_interleaving_shrinks_the_bubble_by_v(v):
    pp, m, f, b = 4, 8, 1.0, 2.0
    plain = _uniform(pp, 1, m, f, b)
    inter = _uniform(pp, v, m, f / v, b / v)
    assert inter.step_time_s < plain.step_time_s
    assert inter.breakdown["pipeline_bubble"] == pytest.approx((pp - 1) * (f + b) / v)


def test_p2p_time_shows_as_exposed_pipeline_communication():
    r = _uniform(4, 1, 8, 1.0, 2.0, p2p=0.1)
    assert r.step_time_s > 33.0 and r.breakdown["exposed_pp_comm"] > 0
    assert sum(r.breakdown.values()) == pytest.approx(r.step_time_s)


def test_schedule_runs_every_task_once():
    for pp, v, m in [(4, 1, 8), (4, 2, 8), (2, 3, 4)]:
        for rank in range(pp):
            order = schedule(pp, v, m, rank)
            assert sorted(order) == sorted((k, c, i) for k in "FB" for c in range(v) for i in range(m))


def test_dp_buckets_overlap_the_last_backward():
    stage = StageWork((Task(1.0, {"compute": 1.0}),), (Task(2.0, {"compute": 2.0}),), ((0.5, 0.5, 0.5, 0.5),))
    r = simulate_iteration(PipelineWork((stage,), 2))
    # buckets ready at 4.5, 5, 5.5, 6: the stream ends at 6.5, only the last half bucket is exposed
    assert r.step_time_s == pytest.approx(6.5) and r.breakdown["exposed_dp_comm"] == pytest.approx(0.5)


def test_zero2_reduces_the_gradients_after_every_micro_batch():
    """ZeRO-2's sharded gradient buffer: each backward's buckets are reduce-scattered as it ends (m x the traffic of
    ZeRO-1's one reduction per step). Buckets of 1 s each, ready every 0.5 s of a 2 s backward: once per step the
    stream runs 4.5-8.5; every micro-batch it runs 1.5-5.5 and then 5.5-9.5."""
    stage = StageWork((Task(1.0, {"compute": 1.0}),), (Task(2.0, {"compute": 2.0}),), ((1.0,) * 4,))
    once = simulate_iteration(PipelineWork((stage,), 2))
    every = simulate_iteration(PipelineWork((stage,), 2, grads_every_micro_batch=True))
    assert once.step_time_s == pytest.approx(8.5) and every.step_time_s == pytest.approx(9.5)
    assert every.breakdown["exposed_dp_comm"] == pytest.approx(3.5)


def test_ddp_waits_for_each_synced_backwards_all_reduces_before_the_next_forward():
    """torch DDP reducing every micro-batch (grads_wait_each_backward; llm/grad_sync.py, reducer.cpp's
    finalize_backward): the compute stream waits for a backward's all_reduces before the next forward. The same stage
    as ZeRO-2's above (forward 1 s, backward 2 s, four 1 s buckets ready every 0.5 s): micro-batch 0 runs 0-3, its
    stream 1.5-5.5, so micro-batch 1's forward starts at 5.5 (ZeRO-2: at 3); its backward 6.5-8.5 and stream 7-11. Each
    micro-batch exposes its stream's 2.5 s past its backward's end: 5 s, the step 11 s (ZeRO-2's 9.5 s)."""
    stage = StageWork((Task(1.0, {"compute": 1.0}),), (Task(2.0, {"compute": 2.0}),), ((1.0,) * 4,))
    ddp = simulate_iteration(PipelineWork((stage,), 2, grads_every_micro_batch=True, grads_wait_each_backward=True))
    assert ddp.step_time_s == pytest.approx(11.0) and ddp.breakdown["exposed_dp_comm"] == pytest.approx(5.0)
    # buckets shorter than the backward's rest: nothing but the last bucket's tail exposed, as once a step
    short = StageWork((Task(1.0, {"compute": 1.0}),), (Task(2.0, {"compute": 2.0}),), ((0.25,) * 4,))
    r = simulate_iteration(PipelineWork((short,), 3, grads_every_micro_batch=True, grads_wait_each_backward=True))
    assert r.step_time_s == pytest.approx(9.75) and r.breakdown["exposed_dp_comm"] == pytest.approx(0.75)


def test_zero2_memory_and_traffic_agree():
    """ZeRO-2 shards the gradients (memory) and so pays a reduce_scatter per micro-batch (step); ZeRO-1 keeps the full
    buffer and reduces once. The 405B split on 16,384 H100s over 400G (DP 128, 16 micro-batches): ZeRO-2's fp32
    reduce-scatters outlast the backwards they overlap (exposed 1.4 s against ZeRO-1's 0.04 s)."""
    from simcluster.build import llm_prediction

    sc = load("scenarios/llm/llama405b-16k.yaml")
    job = sc.jobs[0]
    assert job.parallel.zero == 2
    z2 = llm_prediction(sc.machine, job, trace=False)
    z1 = llm_prediction(sc.machine, dataclasses.replace(job, parallel=dataclasses.replace(job.parallel, zero=1)), trace=False)
    assert z2.memory_per_gpu_GiB["gradients"] < z1.memory_per_gpu_GiB["gradients"] / 100
    assert z2.breakdown["exposed_dp_comm"] > 1.0 > 0.1 > z1.breakdown["exposed_dp_comm"]
    assert z2.step_time_s > z1.step_time_s * 1.1


# --- full predictions -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def h100():
    return load_gpu("models/gpu/h100-sxm.yaml")[0]


@pytest.fixture(scope="module")
def node():
    return comm.Network(load_collective("models/collective/h200x4-nvlink.yaml")[0], 8, None)


def test_prediction_is_deterministic_and_consistent(h100, node):
    args = (LLAMA3_8B, ParallelSpec(tp=2, pp=2, dp=2, zero=1), BatchSpec(16, 1), h100, node, 8)
    a, b = predict_llm(*args), predict_llm(*args)
    assert a.to_json() == b.to_json()
    assert sum(a.breakdown.values()) == pytest.approx(a.step_time_s)
    assert a.tokens_per_s == pytest.approx(16 * 8192 / a.step_time_s)
    assert 0 < a.mfu < 1 and a.tflops_per_gpu == pytest.approx(a.mfu * h100.peak_flops["bf16"] / 1e12)


def test_groups_are_placed_tp_innermost(h100, node):
    g = comm.groups(ParallelSpec(tp=2, dp=4), node)
    assert g.tp.inside_node and g.dp.inside_node and g.dp.stride == 2 and g.dp.ranks_per_node == 4
    assert g.dense_grad is g.dp


def test_dense_gradients_reduce_over_dp_and_cp(h100, node):
    """CP ranks hold the same weights: the dense gradients' group is dp x cp (stride tp), as the memory model shards
    them; the dp group itself stays dp. The step's gradient buckets are priced on that group, and the optimizer update
    is sharded over dp x cp."""
    from simcluster.llm.param_counts import stage_params
    from simcluster.llm.work import build_work

    par = ParallelSpec(tp=2, cp=2, dp=2, zero=1)
    g = comm.groups(par, node)
    assert (g.dp.size, g.dp.stride) == (2, 4) and (g.dense_grad.size, g.dense_grad.stride) == (4, 2)
    work = build_work(LLAMA3_8B, par, BatchSpec(2, 1), h100, node, g)
    dense = stage_params(LLAMA3_8B, par, 0).dense
    want = sum(comm.grad_sync_s(node, g.dense_grad, 1, n) for n in comm.buckets(dense, 4, MEGATRON.bucket_params))
    dp_only = sum(comm.grad_sync_s(node, g.dp, 1, n) for n in comm.buckets(dense, 2, MEGATRON.bucket_params))
    assert sum(work.stages[0].grad_buckets_s[0]) == pytest.approx(want) and want != pytest.approx(dp_only)
    one = build_work(LLAMA3_8B, ParallelSpec(tp=2, dp=4, zero=1), BatchSpec(4, 1), h100, node)
    assert work.stages[0].optimizer_s == pytest.approx(one.stages[0].optimizer_s)   # both shard the states 4 ways


def test_uneven_layer_split_like_llama3():
    assert layer_split(126, 16) == (7,) + (8,) * 14 + (7,)
    assert layer_split(80, 4, 5) == (4,) * 20


# --- error paths -------------------------------------------------------------------------------------------
def test_check_names_the_key():
    with pytest.raises(LlmConfigError, match="parallel.tp: tp 3 does not divide heads"):
        check(LLAMA3_8B, ParallelSpec(tp=3), BatchSpec(8, 1))
    with pytest.raises(LlmConfigError, match="parallel.dp: dp x tp x pp x cp = 2 x 2 x 1 x 1 = 4, but the machine has 8"):
        check(LLAMA3_8B, ParallelSpec(tp=2, dp=2), BatchSpec(8, 1), 8)
    with pytest.raises(LlmConfigError, match="global_batch"):
        check(LLAMA3_8B, ParallelSpec(dp=8), BatchSpec(12, 1))
    with pytest.raises(LlmConfigError, match="parallel.ep"):
        check(LLAMA3_8B, ParallelSpec(ep=2, dp=2), BatchSpec(8, 1))


SCENARIO = """\
name: t
machine:
  card: {root}/models/collective/h200x4-nvlink.yaml
  gpus_per_node: 8
  gpu: {{card: {root}/models/gpu/h100-sxm.yaml}}
jobs:
  - kind: llm_training
    model: {{layers: 32, hidden: 4096, ffn: 14336, heads: 32, kv_heads: 8, vocab: 128256, seq: 8192}}
    parallel: {parallel}
    global_batch: 16
    micro_batch: 1
"""


@pytest.mark.parametrize("parallel,message", [
    ("{tp: 3, dp: 1}", "jobs[0].parallel.tp: tp 3 does not divide heads (32)"),
    ("{tp: 2, dp: 2}", "jobs[0].parallel.dp: dp x tp x pp x cp = 2 x 2 x 1 x 1 = 4, but the machine has 8 GPUs"),
    ("{tp: 8, zero: 5}", "jobs[0].parallel.zero: expected an integer from 0 to 3, got 5"),
    ("{tp: 8, recompute: some}", "jobs[0].parallel.recompute: expected one of none, selective, full"),
    ("{tp: 8, recompute: selective, recompute_modules: [attn]}", "jobs[0].parallel.recompute_modules: expected modules among core_attn,"),
    ("{tp: 8, recompute: full, recompute_modules: [mlp]}", "jobs[0].parallel.recompute_modules: a module list needs recompute: selective"),
    ("{tp: 8, recompute: selective, recompute_modules: mlp}", "jobs[0].parallel.recompute_modules: expected a list, got 'mlp'"),
    ("{tp: 8, sequence_parallel: true, tp_comm_overlap: yes please}", "jobs[0].parallel.tp_comm_overlap: expected true or false"),
    ("{tp: 8, tp_comm_overlap: true}", "jobs[0].parallel.tp_comm_overlap: TP communication overlap needs sequence parallelism"),
    ("{tp: 8, overlap_param_gather: true}", "jobs[0].parallel.overlap_param_gather: needs the distributed optimizer"),
])
def test_scenario_errors_are_one_line_at_the_key(tmp_path, parallel, message):
    import pathlib

    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.format(root=pathlib.Path.cwd(), parallel=parallel))
    with pytest.raises(ScenarioError) as err:
        load(path)
    text = str(err.value)
    assert message in text and "\n" not in text and f"{path}:" in text


def test_model_dropout_must_be_a_boolean(tmp_path):
    import pathlib

    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.format(root=pathlib.Path.cwd(), parallel="{tp: 8}").replace("seq: 8192}", "seq: 8192, dropout: 0.1}"))
    with pytest.raises(ScenarioError, match=r"jobs\[0\]\.model\.dropout: expected true or false"):
        load(path)


def test_scenario_job_reads(tmp_path):
    import pathlib

    from simcluster.build import llm_prediction

    path = tmp_path / "s.yaml"
    path.write_text(textwrap.dedent(SCENARIO.format(root=pathlib.Path.cwd(), parallel="{tp: 8, sequence_parallel: true}")))
    sc = load(path)
    r = llm_prediction(sc.machine, sc.jobs[0], trace=True)
    assert r.gpus == 8 and r.fits and r.timeline["traceEvents"]


# --- host-bound eager steps ----------------------------------------------------------------------------------
def test_issue_bound_is_gpu_time_or_host_time_whichever_paces():
    import numpy as np

    from simcluster.llm import host

    assert host.issue_bound_s(np.array([1.0, 1.0, 1.0]), 0.1) == pytest.approx(0.1 + 3.0)    # GPU-bound: first issue + work
    assert host.issue_bound_s(np.array([0.01] * 4), 1.0) == pytest.approx(4.0 + 0.01)       # host-bound: last issue + its kernel
    # a long kernel early hides the host issuing the short ones behind it
    assert host.issue_bound_s(np.array([5.0, 0.1, 0.1]), 1.0) == pytest.approx(1.0 + 5.2)


def test_fit_host_recovers_a_line():
    from simcluster.llm import host

    c, a = host.fit_host([(2, 0.001 + 2 * 50 * 2e-5), (8, 0.001 + 8 * 50 * 2e-5), (32, 0.001 + 32 * 50 * 2e-5)], 50)
    assert c == pytest.approx(2e-5) and a == pytest.approx(0.001)


def test_host_cost_slows_a_small_model_and_lands_in_other(h100):
    from dataclasses import replace

    small = TransformerSpec(4, 256, 704, 4, 2, 1000, 256)
    net = comm.Network(None, 1)
    fast = predict_llm(small, ParallelSpec(), BatchSpec(1, 1), h100, net, 1, framework=TORCH_AMP)
    slow = predict_llm(small, ParallelSpec(), BatchSpec(1, 1), h100, net, 1, framework=replace(TORCH_AMP, host_kernel_s=50e-6))
    assert slow.step_time_s > fast.step_time_s
    assert slow.breakdown["other"] - fast.breakdown["other"] == pytest.approx(slow.step_time_s - fast.step_time_s)


# --- mixture of experts ------------------------------------------------------------------------------------------
MIXTRAL = TransformerSpec(32, 4096, 0, 32, 8, 32000, 4096, experts=8, top_k=2, expert_ffn=14336)


def test_mixtral_parameter_counts():
    assert abs(MIXTRAL.parameter_count() / 1e9 - 46.70) < 0.01          # Mistral AI: 46.7B total
    assert abs(MIXTRAL.active_parameter_count() / 1e9 - 12.88) < 0.01   # 12.9B active per token


def test_moe_expert_gemms_route_top_k_tokens(h100):
    par, batch = ParallelSpec(dp=4, ep=4), BatchSpec(4, 1)
    fwd = {o.name: o for o in ops.layer_forward(MIXTRAL, par, batch)}
    # 4096 tokens x top-2 over 8 experts, 2 experts per GPU: 2 batched GEMMs of 4 x 4096 x 2 / 8 = 4096 tokens each
    assert fwd["expert_gate"].shape == (4096, 14336, 4096, 2)
    assert fwd["router"].shape == (4096, 8, 4096, 1)
    dense = sum(o.total_flops for o in ops.layer_forward(MIXTRAL, ParallelSpec(), BatchSpec(1, 1)) if o.name.startswith("expert"))
    assert dense == pytest.approx(2 * 4096 * 2 * 3 * 4096 * 14336)      # every token through top_k experts


def test_moe_on_two_nodes_runs_expert_alltoall(h100):
    from simcluster.build import llm_network
    from simcluster.scenario_machine import FabricConfig, Machine, NicSpec

    machine = Machine(pathlib.Path("models/collective/h200x4-nvlink.yaml"), 8, 2, NicSpec(pathlib.Path("models/nic/roce-400g.yaml"), 8, 1),
                      FabricConfig("rail-optimized", 64, 32, 1.0, 1, 1e-7, 6e-7, "cut-through"))
    r = predict_llm(MIXTRAL, ParallelSpec(tp=2, dp=8, ep=8), BatchSpec(64, 1), h100, llm_network(machine), 16)
    assert r.breakdown["exposed_ep_comm"] > 0 and r.groups["ep"]["placement"] == "fabric"
    assert sum(r.breakdown.values()) == pytest.approx(r.step_time_s)


def test_buckets_follow_the_framework():
    assert comm.buckets(100e6, 8) == [40e6, 40e6, 20e6]                     # Megatron: max(40M, 1M dp)
    assert comm.buckets(100e6, 64) == [64e6, 36e6]
    assert len(comm.buckets(100e6, 2, TORCH_AMP.bucket_params)) == 16         # DDP: 25 MiB of fp32 = 6,553,600 params


def test_zero3_gathers_layer_by_layer_each_call_paying_the_ring_latency():
    """ZeRO-3 / FSDP: one all_gather and one reduce_scatter per layer; on a 64-node DP ring the L per-layer
    calls cost more than one model-sized call (each pays the ring's latency), and the bytes follow the framework
    (fp32 gathers under torch-amp cost more than bf16 under Megatron)."""
    from simcluster.build import llm_network
    from simcluster.llm.hsdp import zero3_calls
    from simcluster.scenario_machine import FabricConfig, Machine, NicSpec

    machine = Machine(pathlib.Path("models/collective/h200x4-nvlink.yaml"), 8, 64, NicSpec(pathlib.Path("models/nic/roce-400g.yaml"), 8, 1),
                      FabricConfig("rail-optimized", 64, 32, 1.0, 1, 1e-7, 6e-7, "cut-through"))
    net = llm_network(machine)
    par = ParallelSpec(dp=512, zero=3)
    g = comm.groups(par, net)
    params = 32 * 50e6
    z = zero3_calls(net, g, par, MEGATRON, params, 0.0, 32)
    ag, rs = z.gather_s, z.scatter_s
    assert ag > comm.collective_s(net, g.dp, "all_gather", params * 2)
    assert rs > comm.collective_s(net, g.dp, "reduce_scatter", params * 4)
    ag32 = zero3_calls(net, g, par, TORCH_AMP, params, 0.0, 32).gather_s
    assert ag32 > ag


def test_unfused_attention_core_by_hand():
    """Megatron before flash attention: Q K^T and P V over the full s x s scores, softmax and dropout in HBM,
    Korthikanti's 5 a s^2 b activation bytes unless selective recompute drops them (and recomputes the core)."""
    from simcluster.llm.framework import MEGATRON_UNFUSED

    gpt = TransformerSpec(2, 1024, 4096, 16, 16, 50304, 2048, tied_embeddings=True, mlp="gelu")
    par, batch = ParallelSpec(tp=2), BatchSpec(8, 2)
    core = {o.name: o for o in ops.layer_forward(gpt, par, batch, MEGATRON_UNFUSED) if o.name.startswith("core.")}
    n, s, d = 2 * 8, 2048, 64                                # micro-batch x heads per GPU (16 / tp 2)
    assert core["core.scores"].shape == (s, s, d, n) and core["core.scores"].flops == 2 * s * s * d * n
    assert core["core.context"].shape == (s, d, s, n)
    assert core["core.softmax"].bytes == n * s * s * 4 and core["core.dropout"].bytes == n * s * s * 5
    assert not any(o.kind == "attention" for o in ops.layer_forward(gpt, par, batch, MEGATRON_UNFUSED))
    sel = dataclasses.replace(par, recompute="selective")
    assert {o.name for o in ops.layer_backward(gpt, sel, batch, MEGATRON_UNFUSED) if o.name.startswith("recompute.")} == \
        {f"recompute.{k}" for k in core}
    extra = layer_activation_bytes(gpt, par, batch, MEGATRON_UNFUSED) - layer_activation_bytes(gpt, par, batch, MEGATRON)
    assert extra == pytest.approx(5 * 16 / 2 * s * s * 2)
    assert layer_activation_bytes(gpt, sel, batch, MEGATRON_UNFUSED) == layer_activation_bytes(gpt, sel, batch, MEGATRON)


def test_fp8_casts_by_hand():
    """fp8: one cast op per layer, forward = every GEMM input's transposed copy (M K) + the attention output's cast
    (3 M K); backward = every output gradient's cast-transpose (4 M N); none in bf16."""
    par = ParallelSpec()
    cast = [o for o in ops.layer_forward(LLAMA3_8B, par, BatchSpec(1, 1, "fp8")) if o.name == "fp8_cast"]
    T, h, f, qkv = 8192, 4096, 14336, 6144
    assert len(cast) == 1 and cast[0].bytes == T * (h + h + h + h + f) + 3 * T * h
    bwd = [o for o in ops.layer_backward(LLAMA3_8B, par, BatchSpec(1, 1, "fp8")) if o.name == "fp8_cast.bwd"]
    assert bwd[0].bytes == 4 * T * (qkv + h + f + f + h)
    assert not any(o.name == "fp8_cast" for o in ops.layer_forward(LLAMA3_8B, par, BatchSpec(1, 1)))


def test_published_runs_stay_within_their_documented_error():
    """Measured fidelity (docs/models/llm.md, `simcluster validate --published llm`): Korthikanti et al. 2022 Table 5
    (A100, pre-flash attention) within 10% mean and 19% per row (not held out: the file's simcluster block says why). On
    the card's fixed clock, the default. Session 26's stragglers term (llm/scaleout.py, +2-8% slower at 8-2240 GPUs)
    moved them from 6.1% mean, max 12% (the model had been changed after seeing them) to 9.5%, max 17.9%, while the
    held-out rows went 10.7% -> 8.9% mean. The Llama 3 405B rows were within 10% until session 25, whose context-parallel
    attention fix and ZeRO-2 per-micro-batch reduce-scatter moved them to -6.6 / -18.6 / +19.6% (pinned in
    tests/test_reference_llm.py; llm.md says why)."""
    from simcluster.reference.llm import validate_published_llm

    root = pathlib.Path(__file__).resolve().parent.parent / "calibration" / "published"
    for name, mean, worst in (("llm-korthikanti2022-table5.yaml", 0.10, 0.19),):
        errors = [abs(r.error) for r in validate_published_llm(root / name).rows if r.error is not None]
        assert len(errors) >= 3 and sum(errors) / len(errors) < mean and max(errors) < worst, (name, errors)


def test_published_file_naming_an_unknown_framework_is_one_line_naming_the_key(tmp_path):
    """Read with the rest of the `simcluster:` block (a bad block key fails the file, exit 2), not once per row."""
    from simcluster.errors import SimclusterError
    from simcluster.reference.llm import validate_published_llm

    src = pathlib.Path(__file__).resolve().parent.parent / "calibration" / "published" / "llm-korthikanti2022-table5.yaml"
    text = src.read_text().replace("framework: megatron-unfused-attention", "framework: megatron-2019")
    text = text.replace("../../models/", str(src.parent.parent.parent / "models") + "/")
    bad = tmp_path / "llm-bad.yaml"
    bad.write_text(text)
    with pytest.raises(SimclusterError) as err:
        validate_published_llm(bad)
    assert "llm-bad.yaml: simcluster: key 'framework': 'megatron-2019' is not a valid value: expected one of megatron," in err.value.one_line()


def test_ddp_bucket_copies_add_sixteen_bytes_per_parameter_per_step(h100):
    """torch DDP's reducer: copy-in with the division (read + write 4 bytes) and copy-out (read + write 4 bytes) of every
    fp32 gradient: 16 bytes per parameter on the GPU's memory model, once per step, only for DDP (dp > 1, no ZeRO), less
    the copy-outs hidden beside the last bucket's all_reduce."""
    from dataclasses import replace

    from simcluster.llm.work import build_work

    net = comm.Network(load_collective(pathlib.Path("models/collective/h200x2-primitives.yaml"))[0], 2)
    ddp = replace(TORCH_AMP, ddp_bucket_bytes=4.0)

    def copies(model):   # (the optimizer's DDP copy time, the other buckets' copy-outs, the last bucket's all_reduce)
        params = stage_params(model, ParallelSpec(dp=2), 0)
        with_copies = build_work(model, ParallelSpec(dp=2), BatchSpec(2, 1), h100, net, fw=ddp).stages[0].optimizer_s
        without = build_work(model, ParallelSpec(dp=2), BatchSpec(2, 1), h100, net, fw=TORCH_AMP).stages[0].optimizer_s
        sizes = comm.ddp_bucket_bytes(model, ParallelSpec(dp=2), params.dense, model.layers, True, True, ddp.bucket_params)
        last_s = comm.collective_s(net, comm.groups(ParallelSpec(dp=2), net).dense_grad, "all_reduce", sizes[-1])
        others = h100.memory_time_s(8 * (params.total - sizes[-1] / 4))   # their read + write
        return with_copies - without, h100.memory_time_s(16 * params.total), others, last_s

    # the copy-outs of all buckets but the last run beside the last bucket's all_reduce (reducer.cpp finalize_backward):
    # a small model's copy-outs fit inside it (all hidden), a larger model's do not (last_s of them hidden)
    delta, full, others, last_s = copies(TransformerSpec(4, 256, 704, 4, 2, 1000, 256))
    assert others < last_s and delta == pytest.approx(full - others)
    delta, full, others, last_s = copies(TransformerSpec(8, 2048, 5632, 16, 4, 32000, 256))
    assert last_s < others and delta == pytest.approx(full - last_s)
    model = TransformerSpec(4, 256, 704, 4, 2, 1000, 256)
    zero3 = build_work(model, ParallelSpec(dp=2, zero=3), BatchSpec(2, 1), h100, net, fw=ddp).stages[0].optimizer_s
    assert zero3 == pytest.approx(build_work(model, ParallelSpec(dp=2, zero=3), BatchSpec(2, 1), h100, net, fw=TORCH_AMP).stages[0].optimizer_s)


def test_only_torch_pipelining_gets_torchs_lowered_sends_and_receives(h100, node):
    """torch_p2p (llm/torch_p2p.py) is torch.distributed.pipelining's lowering: framework torch with virtual stages gets
    it; the other eager frameworks (composer-fsdp, torchtitan-fsdp2, fms-fsdp) and torch without virtual stages do not."""
    from simcluster.llm import eager
    from simcluster.llm.framework import FRAMEWORKS
    from simcluster.llm.work import build_work

    interleaved, plain = ParallelSpec(pp=2, virtual_stages=2), ParallelSpec(pp=2)
    batch = BatchSpec(4, 1)
    assert build_work(LLAMA3_8B, interleaved, batch, h100, node, fw=eager.torch_framework(interleaved)).torch_p2p
    assert not build_work(LLAMA3_8B, plain, batch, h100, node, fw=eager.torch_framework(plain)).torch_p2p
    others = [fw for fw in FRAMEWORKS.values() if fw.eager and fw.name != "torch-amp" and not fw.compiled]
    assert {fw.name for fw in others} >= {"composer-fsdp", "torchtitan-fsdp2", "fms-fsdp"}
    for fw in others:
        assert not build_work(LLAMA3_8B, interleaved, batch, h100, node, fw=fw).torch_p2p, fw.name
    with pytest.raises(LlmConfigError, match="parallel.pp: 2"):   # a compiled trainer (fms-fsdp-compile) refuses pp
        build_work(LLAMA3_8B, interleaved, batch, h100, node, fw=FRAMEWORKS["fms-fsdp-compile"])


def test_ddp_buckets_hold_whole_tensors_and_close_at_their_cap():
    """torch's compute_bucket_assignment_by_size: whole tensors, a bucket closed once it holds its limit or more, 1 MiB
    for the first and the cap after; a tensor over the cap is a bucket of its own."""
    mib = 2**20
    assert comm.ddp_buckets([0.5 * mib, 0.6 * mib, 10 * mib, 30 * mib, 3 * mib], 25 * mib) == [1.1 * mib, 40 * mib, 3 * mib]
    assert comm.ddp_buckets([100 * mib], 25 * mib) == [100 * mib]
    assert comm.ddp_buckets([], 25 * mib) == []


def test_ddp_buckets_of_the_3b_preset_are_the_profiled_steps_141_all_reduces():
    """The runner's 3b (28 layers of 9 tensors, tied 128K embedding) at bucket_cap_mb 25: 141 buckets, the count of
    all_reduce kernels in the profiled DDP step (calibration/h200x2-llm-eager-noise-2026-11-29/profiled), the last one
    the tied embedding's (its gradient is complete only after the embedding's backward)."""
    from simcluster.heldout.eager import model_of
    from simcluster.runner.llm_decoder import PRESETS

    model = model_of({"model": PRESETS["3b"]}, 2048)
    par = ParallelSpec(dp=2)
    params = stage_params(model, par, 0)
    sizes = comm.ddp_bucket_bytes(model, par, params.dense, model.layers, True, True, TORCH_AMP.bucket_params)
    assert len(sizes) == 141
    assert sum(sizes) == pytest.approx(4 * params.dense)
    assert sizes[-1] == pytest.approx(4 * model.vocab * model.hidden, rel=1e-3)
