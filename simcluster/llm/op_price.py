"""One op of the step model and its time on a GPU card: Op (a GEMM, an attention kernel, a memory-bound pass, a chain
of plain torch kernels: FLOPs, bytes and the shape its curve reads), its constructors (gemm, attention, memory,
torch_chain; a GEMM's backward, gemm_backward), and op_time_s: an op priced on the card's GEMM, attention and
memory-bound curves (llm/torch_kernels.py for the torch chains), memoised per card, op and dtype. The layer's ops are
composed in llm/ops.py (which re-exports these names), the embedding, LM head and loss in llm/vocab_ops.py.

Units: FLOPs, bytes, seconds. A GEMM Y[M, N] = X[M, K] W[K, N] moves (M K + K N) e + M N 2 bytes (e: the input element
size, 2 bf16, 1 fp8) and does 2 M N K FLOPs per batch entry; attention does 4 b a s_q s_kv d FLOPs forward (halved when
causal; backward 2.5 x forward: flash recomputes the scores, 5 matmuls against 2) and moves q, o, k, v once forward,
twice backward.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

from simcluster.llm import moe_gemm_term, moe_router_term, torch_kernels

ACT_BYTES = 2  # bf16 activations


@dataclass(frozen=True)
class Op:
    name: str
    kind: str                 # 'gemm' | 'attention' | 'memory' | 'upcast' / 'unvectorized' (GpuSpec.upcast_time_s)
    flops: float
    bytes: float
    shape: tuple = ()         # gemm: (M, N, K, batch); attention: (batch, heads, kv_heads, seq_q, seq_kv, head_dim, causal, backward, dropout);
                              # memory: () or (its backward's bytes[, its backward's kernels, each an equal share])
    count: float = 1          # identical ops in a row (e.g. the two RMSNorms); a fraction for an op only some layers run
                              # (a sliding-window model's full and windowed attention: each its share of the layers)
    term: moe_router_term.RouterTerm | None = None   # priced with a measured term too (llm/moe_router_term.adjust):
                              # TABLE, ops.layer_forward's mark on an ADOPTED framework's router and permute; UNFUSED, the
                              # router of llm/moe_router_unfused; their backward and recomputed copies keep it; None: neither

    @property
    def total_flops(self) -> float:
        return self.flops * self.count

    @property
    def total_bytes(self) -> float:
        return self.bytes * self.count


def gemm(name: str, m: int, n: int, k: int, batch: int = 1, in_bytes: int = 2) -> Op:
    return Op(name, "gemm", 2.0 * m * n * k * batch, float(batch * ((m * k + k * n) * in_bytes + m * n * ACT_BYTES)),
              (m, n, k, batch))


def gemm_backward(op: Op, in_bytes: int = 2) -> list[Op]:
    m, n, k, batch = op.shape
    out = [gemm(f"{op.name}.dgrad", m, k, n, batch, in_bytes), gemm(f"{op.name}.wgrad", k, n, m, batch, in_bytes)]
    return [replace(o, term=op.term) for o in out] if op.term else out


def attention(name: str, batch: int, heads: int, kv_heads: int, seq_q: int, seq_kv: int, head_dim: int,
              causal: bool, backward: bool, dropout: bool = False) -> Op:
    flops = 4.0 * batch * heads * seq_q * seq_kv * head_dim * (0.5 if causal else 1.0) * (2.5 if backward else 1.0)
    io = batch * (2 * seq_q * heads + 2 * seq_kv * kv_heads) * head_dim * ACT_BYTES  # q, o and k, v
    return Op(name, "attention", flops, float(io * (2 if backward else 1)),
              (batch, heads, kv_heads, seq_q, seq_kv, head_dim, causal, backward, dropout))


def memory(name: str, bytes_moved: float, flops: float = 0.0, count: int = 1) -> Op:
    return Op(name, "memory", float(flops), float(bytes_moved), (), count)


def torch_chain(name: str, chain: str, elements: float, *row: float) -> Op:
    """A chain of plain torch kernels (Megatron-Core's local spec: FrameworkSpec.torch_chains), each kernel at its own
    measured rate (llm/torch_kernels.py); `row` the row length where the kernels' rate depends on it (the norms)."""
    return Op(name, "torch", torch_kernels.chain_flops(chain, elements), elements * torch_kernels.chain_bytes(chain), (chain, float(elements), *row))


# the experts' GEMMs: a grouped linear layer (Transformer Engine's GroupedLinear) issues one GEMM per local expert, so each
# is priced as its own kernel (batch x one GEMM), not as one batched kernel. On one H100 (calibration/h100x1-moe-grouped-
# 2026-11-27) a loop of per-expert GEMMs is priced this way within 8.2% (bf16) and 12.3% (fp8) mean, one batched kernel
# 10.2% and 21.1% (up to 63% fast for Qwen3 30B's 16 small fp8 experts)
GROUPED_GEMMS = ("expert_fc1", "expert_gate", "expert_up", "expert_down")
# GEMMs that stay bf16 under fp8: only Transformer Engine modules run in fp8 inside fp8_autocast, and Megatron-Core builds
# the LM head as its own tensor_parallel.ColumnParallelLinear (megatron/core/models/gpt/gpt_model.py, output_layer at
# NVIDIA/Megatron-LM 007562f9) and the MoE router as a plain linear of its own weight (TopKRouter.gating); torchtitan's
# llama3 train configs leave `output` out of float8 ([float8] filter_fqns = ["output"] at e7c0cae). Priced on the bf16 curve.
BF16_UNDER_FP8 = ("lm_head", "router")


def gemm_dtype(name: str, dtype: str) -> str:
    """The precision a GEMM op named `name` runs in under the step's `dtype`: bf16 for BF16_UNDER_FP8 (recomputed or not)."""
    return "bf16" if dtype == "fp8" and name.removeprefix("recompute.").split(".")[0] in BF16_UNDER_FP8 else dtype


_TIMES: dict = {}     # (id(gpu), op, dtype) -> (gpu, seconds): a plan's points price the same ops on the same card


def forget() -> None:
    """Drop the memo: called after moe_gemm_term's or moe_router_term's table changes (enable / disable), which the key leaves out (hot path)."""
    _TIMES.clear()


@contextmanager
def expert_gemm_term(rows) -> Iterator[None]:
    """The measured expert-GEMM term (llm/moe_gemm_term.py) on with `rows` inside the block, its table before (or off)
    back on leaving it, an error included, and the memo dropped at both edges: the term's switch-and-restore (here, not
    in moe_gemm_term, which cannot import this module's memo: this module imports it)."""
    before = moe_gemm_term.table()
    moe_gemm_term.enable(rows)
    forget()
    try:
        yield
    finally:
        if before:
            moe_gemm_term.enable(before)
        else:
            moe_gemm_term.disable()
        forget()


def op_time_s(gpu, op: Op, dtype: str) -> float:
    """One op's time on the GPU card (its GEMM, attention and memory-bound curves), computed once per card, op and dtype."""
    key = (id(gpu), op, dtype)
    hit = _TIMES.get(key)
    if hit is None or hit[0] is not gpu:
        if len(_TIMES) >= 200_000:
            _TIMES.clear()
        hit = _TIMES[key] = (gpu, _op_time_s(gpu, op, dtype))
    return hit[1]


def _op_time_s(gpu, op: Op, dtype: str) -> float:
    if op.kind == "gemm":
        m, n, k, batch = op.shape
        dtype = gemm_dtype(op.name, dtype)
        if op.name.removeprefix("recompute.").split(".")[0] in GROUPED_GEMMS:
            # times the measured expert-GEMM term's ratio (llm/moe_gemm_term.py; 1.0 while it is off)
            t = batch * gpu.gemm_time_s(m, n, k, dtype=dtype) * moe_gemm_term.factor(m, n, k, dtype)
        else:
            t = gpu.gemm_time_s(m, n, k, dtype=dtype, batch=batch)
    elif op.kind == "attention":
        b, a, g, sq, skv, d, causal, backward, dropout = op.shape
        t = gpu.attention_time_s(b, a, g, sq, skv, d, causal=causal, backward=backward, dtype="bf16", dropout=dropout)
    elif op.kind == "torch":
        t = torch_kernels.time_s(gpu, *op.shape)
    else:
        t = gpu.upcast_time_s(op.bytes) if op.kind in ("upcast", "unvectorized") else gpu.memory_time_s(op.bytes)
    return (moe_router_term.adjust(gpu, op, t) if op.term else t) * op.count   # the measured router / permute term


def ops_time_s(gpu, ops: list[Op], dtype: str) -> float:
    return sum(op_time_s(gpu, op, dtype) for op in ops)


def total_flops(ops: list[Op]) -> float:
    return sum(op.total_flops for op in ops)
