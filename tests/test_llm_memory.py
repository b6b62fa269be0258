"""Per-GPU memory at scale (issue 22, item 4): each mechanism a framework's source states, by hand on one Megatron
configuration (docs/models/llm.md, Memory), and the published files' recipe settings read as filed."""

from __future__ import annotations

from dataclasses import replace

import pytest

from simcluster.cards import load_collective
from simcluster.hardware.gpu import load_gpu
from simcluster.llm import comm
from simcluster.llm.framework import MEGATRON, TORCH_AMP
from simcluster.llm.memory import GiB, layer_activation_bytes, memory_per_gpu
from simcluster.llm.predict import predict_llm
from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec
from simcluster.published import PUBLISHED, read_published
from simcluster.reference.llm import framework_of

LLAMA3_8B = TransformerSpec(32, 4096, 14336, 32, 8, 128256, 8192)
LLAMA3_70B = TransformerSpec(80, 8192, 28672, 64, 8, 128256, 8192)
GPT3_175B = TransformerSpec(96, 12288, 49152, 96, 96, 50688, 2048, mlp="gelu", tied_embeddings=True)
# one Llama 3 8B layer's weights in TE linear layers: Q, O 2 h^2, K, V 2 h (8 x 128), gate / up / down 3 h f
LINEAR_8B_LAYER = 2 * 4096**2 + 2 * 4096 * 1024 + 3 * 4096 * 14336       # 218,103,808


def test_the_distributed_optimizer_shards_over_data_and_context_parallel_ranks():
    """Megatron-Core's optimizer group is get_data_parallel_group(with_context_parallel=True): dp 4 x cp 2 = 8 shards."""
    p = LLAMA3_8B.parameter_count()
    z1 = memory_per_gpu(LLAMA3_8B, ParallelSpec(dp=4, cp=2, zero=1), BatchSpec(128, 1), 80 * GiB)
    assert z1.optimizer == pytest.approx(12 * p / 8) and z1.gradients == pytest.approx(4 * p) and z1.parameters == pytest.approx(2 * p)
    z2 = memory_per_gpu(LLAMA3_8B, ParallelSpec(dp=4, cp=2, zero=2), BatchSpec(128, 1), 80 * GiB)
    assert z2.gradients == pytest.approx(4 * p / 8)


def test_torch_ddp_holds_a_reducer_bucket_copy_of_every_gradient():
    """DDP with gradient_as_bucket_view off: 4 bytes per parameter of fp32 bucket copies for the whole run, on top of
    torch-amp's 4 + 4 + 8; none at dp 1 or under ZeRO (FSDP does not use DDP's reducer). Hand count for a 2-layer
    h 64 / f 128 / 4 heads (2 kv) / vocab 256 model: embedding + head 2 x 256 x 64 = 32,768; per layer q, o 2 x 64^2 =
    8,192, k, v 2 x 64 x 32 = 4,096, MLP 3 x 64 x 128 = 24,576, norms 128 -> 36,992 x 2 = 73,984; final norm 64 ->
    106,816 parameters = 427,264 bytes of buckets."""
    model = TransformerSpec(2, 64, 128, 4, 2, 256, 128)
    assert model.parameter_count() == 106_816
    ddp = replace(TORCH_AMP, ddp_bucket_bytes=4.0)
    two = memory_per_gpu(model, ParallelSpec(dp=2), BatchSpec(2, 1), 80 * GiB, ddp)
    plain = memory_per_gpu(model, ParallelSpec(dp=2), BatchSpec(2, 1), 80 * GiB, TORCH_AMP)
    assert two.ddp_buckets == pytest.approx(427_264) and two.steady_allocated - plain.allocated == pytest.approx(427_264)
    # the first iterations hold one more copy while the reducer rebuilds its buckets: in the job's peak only
    assert two.ddp_rebuild == pytest.approx(427_264) and two.allocated - two.steady_allocated == pytest.approx(427_264)
    assert memory_per_gpu(model, ParallelSpec(dp=1), BatchSpec(1, 1), 80 * GiB, ddp).ddp_buckets == 0.0
    assert memory_per_gpu(model, ParallelSpec(dp=2, zero=3), BatchSpec(2, 1), 80 * GiB, ddp).ddp_buckets == 0.0


def test_a_replicated_embedding_and_head_under_tensor_parallelism():
    """The runner's DTensor tp shards only the decoder layers: embedding and head (2 x 256 x 64 = 32,768 parameters)
    stay whole on each of 2 ranks instead of half (16,384 more), and the logits (128 x 1 x 256 at 12 bytes) too."""
    model = TransformerSpec(2, 64, 128, 4, 2, 256, 128)
    split = memory_per_gpu(model, ParallelSpec(tp=2), BatchSpec(1, 1), 80 * GiB, TORCH_AMP)
    whole = memory_per_gpu(model, ParallelSpec(tp=2), BatchSpec(1, 1), 80 * GiB, replace(TORCH_AMP, tp_vocab_split=False))
    assert whole.parameters - split.parameters == pytest.approx(4 * 16_384)
    assert whole.optimizer - split.optimizer == pytest.approx(8 * 16_384)
    assert whole.logits - split.logits == pytest.approx(12 * 128 * 256 / 2)


def test_a_recipes_gradient_buffer_and_master_weights():
    """bf16 gradient buffers (grad_reduce_in_fp32 false / grad_sync_dtype bf16): 2 bytes; Apex's parameter remainders:
    2 + 4 + 4 = 10 bytes of state, a full fp32 master (12) once the weights are fp8 (NeMo's store_params)."""
    p, par = LLAMA3_8B.parameter_count(), ParallelSpec(dp=4, cp=2, zero=1)
    nemo = replace(MEGATRON, grad_buffer_bytes=2.0, master_remainders=True)
    bf16 = memory_per_gpu(LLAMA3_8B, par, BatchSpec(128, 1), 80 * GiB, nemo)
    assert bf16.gradients == pytest.approx(2 * p) and bf16.optimizer == pytest.approx(10 * p / 8)
    fp8_weights = memory_per_gpu(LLAMA3_8B, par, BatchSpec(128, 1, "fp8"), 80 * GiB, replace(nemo, fp8_params=True))
    assert fp8_weights.optimizer == pytest.approx(12 * p / 8)


def test_fp8_weight_cache_is_two_bytes_per_linear_weight_unless_the_weights_are_fp8():
    par = ParallelSpec(dp=4, cp=2, zero=1)
    fp8 = memory_per_gpu(LLAMA3_8B, par, BatchSpec(128, 1, "fp8"), 80 * GiB)
    assert fp8.fp8_weight_cache == pytest.approx(2 * 32 * LINEAR_8B_LAYER) == 13_958_643_712
    assert fp8.allocated - memory_per_gpu(LLAMA3_8B, par, BatchSpec(128, 1, "fp8"), 80 * GiB,
                                          replace(MEGATRON, fp8_params=True)).allocated == pytest.approx(2 * 32 * LINEAR_8B_LAYER)
    assert memory_per_gpu(LLAMA3_8B, par, BatchSpec(128, 1), 80 * GiB).fp8_weight_cache == 0.0            # bf16: no fp8 copies
    assert memory_per_gpu(LLAMA3_8B, ParallelSpec(tp=4, sequence_parallel=True), BatchSpec(8, 1, "fp8"),
                          80 * GiB).fp8_weight_cache == pytest.approx(2 * 32 * LINEAR_8B_LAYER / 4)     # / tp


@pytest.mark.parametrize("model", [LLAMA3_70B, GPT3_175B])
def test_fp8_saves_gemm_inputs_in_one_byte(model):
    """Llama 3 70B (SwiGLU) and GPT-3 175B (GeLU) on tp 4 with sequence parallelism, one sequence: the QKV, fc1 and fc2
    inputs go from 2 bytes to 1, the out-projection adds its fp8 copy of the attention output: s (h + f) / t less."""
    s, h, f, t = model.seq, model.hidden, model.ffn, 4
    par = ParallelSpec(tp=t, sequence_parallel=True)
    bf16 = layer_activation_bytes(model, par, BatchSpec(8, 1))
    fp8 = layer_activation_bytes(model, par, BatchSpec(8, 1, "fp8"))
    assert bf16 - fp8 == pytest.approx(s * (h + f) / t)
    if model is LLAMA3_70B:   # by hand: norm1 in 2 + qkv in 1 (/t), Q, O 2 + 2, K, V 2 x 2 x 2 kv heads x 128, lse 4 a / t,
        kv = 2 * 128          # the out-projection's fp8 copy 1, norm2 in 2 + fc1 in 1 (/t), SwiGLU input 4 f / t, fc2 in f / t
        assert fp8 == pytest.approx(s * (3 * h / t + 4 * h / t + 4 * kv + h / t + 3 * h / t + 5 * f / t) + 4 * 64 / t * s)
    assert layer_activation_bytes(model, par, BatchSpec(8, 1, "fp8"), TORCH_AMP) == \
        layer_activation_bytes(model, par, BatchSpec(8, 1), TORCH_AMP)        # no Transformer Engine: nothing changes


def test_memory_settings_do_not_move_the_step(tmp_path):
    """The recipe's memory fields are read by memory.py only: same step time, different memory."""
    h100 = load_gpu("models/gpu/h100-sxm.yaml")[0]
    node = comm.Network(load_collective("models/collective/h200x4-nvlink.yaml")[0], 8, None)
    args = (LLAMA3_8B, ParallelSpec(tp=2, dp=2, cp=2, zero=1, sequence_parallel=True), BatchSpec(16, 1, "fp8"), h100, node, 8)
    plain = predict_llm(*args, trace=False)
    recipe = predict_llm(*args, trace=False, framework=replace(MEGATRON, grad_buffer_bytes=2.0, master_remainders=True, fp8_params=True))
    assert recipe.step_time_s == plain.step_time_s and recipe.memory_per_gpu_GiB["total"] < plain.memory_per_gpu_GiB["total"]


def test_published_recipe_settings_are_applied_per_model():
    """NeMo 24.07: Apex's remainders and bf16 gradient buffers for every model; Nemotron 340B's own bf16 optimizer."""
    ref = read_published(PUBLISHED / "llm-nemo-24.07-dgx-h100-fp8.yaml", "published-llm-run")
    by_name = {r["model"]["name"]: r for r in ref.runs}
    llama = framework_of(ref, by_name["LLAMA3-8B"])
    assert (llama.grad_buffer_bytes, llama.state_bytes, llama.master_remainders, llama.fp8_params) == (2, 12, True, False)
    nemotron = framework_of(ref, by_name["Nemotron-340B"])
    assert (nemotron.grad_buffer_bytes, nemotron.state_bytes, nemotron.master_remainders) == (2, 4, False)
    assert nemotron.name == "megatron-unfused-loss"     # framework_by_model still applies
