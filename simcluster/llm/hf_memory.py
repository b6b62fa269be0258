"""Memory of the Hugging Face Trainer's frameworks beyond the generic eager count (issue 44, session 57; measured tensor by
tensor in calibration/h200x1-hfmem57-2026-12-02, docs/models/llm.md "Hugging Face trainers", Memory).

transformers' LlamaDecoderLayer (FrameworkSpec.hf_llama_saves; hf-fsdp1, hf-deepspeed*), no recompute, per layer:
  LlamaRMSNorm     `x.to(float32)`, `x * rsqrt(x.pow(2).mean(-1) + eps)`, `weight * x.to(input_dtype)`: autograd keeps the
                   fp32 upcast (pow's and the multiply's input, 4 bytes an element) and the normalized tensor in the input
                   dtype (the weight multiply's input, r bytes) beside the projection's input (g bytes); the bf16 residual
                   itself is saved by nothing. The generic count keeps r + g an element for each norm: 4 more here, for
                   each of the two norms (under bf16 autocast with fp32 weights, r = 4: the fp32 input and normalized copy)
  repeat_kv        the SDPA path repeats K and V to every query head before scaled_dot_product_attention, which saves the
                   repeated tensors: 2 x 2 (a d - kv) bytes a token more than the generic K, V at the kv width
                   (transformers' flash_attention_2 path does not repeat; not modelled)
  attention output SDPA's flash kernel writes its output in the (b, s, heads, d) layout: `transpose(1, 2).contiguous()` is
                   a view, so the out-projection saves no copy: memory.layer_activation_bytes leaves eager's 2 s b h copy
                   out under hf_llama_saves, as under bf16_param_block (not a delta here)
Measured at hfmem57's 1.1B mb4 point: 46.2 h bytes a token a layer (24 h + 8 f: norms 2 x 8 h, Q / K / V / O 8 h) against
the generic count's 36.7 h.

DeepSpeed ZeRO-3 (FrameworkSpec.deepspeed_zero3_buffers; hf-deepspeed*, parallel.zero 3), per rank's partition of P / dp:
  a flat gradient partition in the communication dtype (grad_bytes, bf16), allocated at the engine's start and held
  (hfmem57: 16.0 B a parameter between steps = 2 bf16 weights + 12 fp32 master and moments + 2 of it);
  at the optimizer step, sub-group by sub-group, the partition's gradient flattened (2 bytes) and copied to fp32 (4 bytes)
  alive together: STEP_GRAD_BYTES x the largest sub-group, about min(P / dp, SUB_GROUP_PARAMS) (a sub-group closes once it
  reaches sub_group_size, so it can pass it by one parameter's partition: 1.0117e9 at 1.1B; hfmem57: 6.0 B a parameter at
  0.13 and 0.35 B, 6.07e9 B at 1.1 B parameters = 6 x 1e9).
"""

from __future__ import annotations

from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec

NORM_UPCAST_BYTES = 4.0        # each LlamaRMSNorm's saved fp32 upcast, per element of its input
STEP_GRAD_BYTES = 6.0          # DeepSpeed stage 3's step: a sub-group's gradient flattened (2) and its fp32 copy (4)
SUB_GROUP_PARAMS = 1e9         # DeepSpeed's zero_optimization.sub_group_size default (elements a sub-group)
# The FrameworkSpec switches of these terms (on for the HF frameworks since session 57): a set registered before them
# reproduces its figures with them off (registration.switched_off; tests/test_hfdev55.py).
SWITCHES = ("hf_llama_saves", "deepspeed_zero3_buffers")


def layer_extra_bytes(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec) -> float:
    """Bytes a layer saves beyond memory.layer_activation_bytes' eager count, without recompute: the norms' upcasts and
    the repeated K and V (module docstring). The
    HF frameworks run no tensor, context or sequence parallelism (llm/framework.py refuses them), so s and h are whole."""
    s, b, h = model.seq, batch.micro_batch, model.hidden
    kv = model.kv_heads * model.head_dim
    norms = 2 * NORM_UPCAST_BYTES * s * b * h
    repeated_kv = 2 * 2 * s * b * (model.heads * model.head_dim - kv)
    return norms + repeated_kv


def zero3_gradient_bytes(grad_bytes: float, partition_params: float) -> tuple[float, float]:
    """(the persistent flat gradient partition, the gradients alive at the optimizer step) in bytes (module docstring)."""
    return grad_bytes * partition_params, STEP_GRAD_BYTES * min(partition_params, SUB_GROUP_PARAMS)
