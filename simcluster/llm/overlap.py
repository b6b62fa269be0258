"""Communication hidden behind compute: Megatron's tensor-parallel communication overlap (`--tp-comm-overlap`,
Transformer Engine's userbuffers) and the distributed optimizer's overlapped parameter all-gather
(`--overlap-param-gather`). Each returns the time the communication adds to the compute it overlaps (exposed).

TP overlap (sequence parallelism, TE's default userbuffer methods when no configuration file is given,
transformer_engine/pytorch/module/base.py initialize_ub, TE 1.x): per layer, with g the GEMM's time and c the
collective's (the NVLink card's all_gather / reduce_scatter of the full T h tensor):
  forward   QKV (qkv_fprop) and fc1 (fc1_fprop): the all_gather of their input by ring exchange, tp chunks on the
            copy engines (no SMs): the local chunk's GEMM first, then one chunk per received piece:
            ring_exchange_s = max(g, c + g / tp)
            out-projection (proj_fprop) and fc2 (fc2_fprop): the reduce_scatter of their output, 'pipeline' in
            PIPELINE_SPLITS chunks on COMM_SMS SMs; assumed: the GEMM loses those SMs (g' = g S / (S - COMM_SMS)):
            TE's default launches it on all SMs (set_sm_margin=0), so this prices contention, not a reservation,
            pipelined_s = max(g', c) + min(g', c) / PIPELINE_SPLITS
  backward  out-projection and fc2 dgrad (proj_dgrad, fc2_dgrad): the all_gather of the output gradient, ring exchange;
            QKV and fc1 (qkv_wgrad, fc1_wgrad, 'bulk'): the reduce_scatter of the input gradient runs beside the
            weight-gradient GEMM on COMM_SMS SMs: bulk_s = max(g', c)
  exposed = overlapped time - g, per collective; full recompute repeats the forward's (recompute_modules mlp / moe the
  MLP's). A MoE layer: the attention block's calls, and a shared expert's against its own GEMMs (comm.mlp_block_tp_calls).
  Under fp8 the all_gather buffers hold fp8 (TE: "AllGather buffers use fp8 when using fp8 recipe"): 1 byte per
  element.
Not modelled: the input all_gather TE's 'bulk' qkv_dgrad / fc1_dgrad overlaps with the dgrad GEMM for the weight
gradient (without the overlap Megatron runs it asynchronously too, and the model counts it in neither case), and any
slowdown of the copy-engine ring exchange on the GEMM's memory traffic.

Parameter all-gather (distributed optimizer, `--overlap-param-gather`): bucket 0's gather is issued at the step's
start and each bucket's forward pre-hook waits for it and issues the next, so the gather of n buckets (total G)
runs one bucket ahead of the forward (total F) of the chunk's first micro-batch: that forward starts after the
first bucket and its last 1/n waits for the last bucket; from a gather started with the forward:
  param_gather_s = pipelined_s(F, G, n) - F = max(F, G) + min(F, G) / n - F
(the DES, llm/simulate.py, does this per chunk from the gather's actual start on the DP stream: chunks' gathers run
in order from the step's start, as without the overlap, where each chunk's first forward waits for all of it).

Compute and NCCL kernels beside each other (beside, beside_excess; FrameworkSpec.comm_interference with the GPU card's
measured comm_overlap): what the compute loses and when the communication ends; llm/work.py prices DP reductions and
gathers with it, llm/layer_work.py a shared expert beside its dispatch.
"""

from __future__ import annotations

from simcluster.llm import comm, ops
from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec

COMM_SMS = 16          # TE initialize_ub default num_sm of the 'pipeline' and 'bulk' methods; the GEMM's loss of them is an
                       # assumption (contention): TE 1.x's default set_sm_margin=0 launches the GEMM on all SMs
PIPELINE_SPLITS = 4    # TE initialize_ub default num_splits of the 'pipeline' method


def ring_exchange_s(gemm_s: float, comm_s: float, tp: int) -> float:
    """All_gather by ring exchange beside its GEMM: the local chunk first, the other tp - 1 as they arrive."""
    return max(gemm_s, comm_s + gemm_s / tp)


def pipelined_s(compute_s: float, comm_s: float, chunks: int) -> float:
    """Compute and communication in `chunks` pieces, each piece's communication after (or before) its compute."""
    return max(compute_s, comm_s) + min(compute_s, comm_s) / chunks


def bulk_s(compute_s: float, comm_s: float) -> float:
    return max(compute_s, comm_s)


def param_gather_s(forward_s: float, gather_s: float, buckets: int) -> float:
    """Exposed time of a parameter all_gather in `buckets` buckets, one bucket ahead of the forward that uses them."""
    return pipelined_s(forward_s, gather_s, max(1, buckets)) - forward_s


def beside(compute_s: float, comm_s: float, gpu, fw) -> tuple[float, float]:
    """Compute and NCCL kernels running beside each other (FrameworkSpec.comm_interference, with the GPU card's
    measured comm_overlap: compute rate lost s, NCCL rate kept r): (compute seconds lost, seconds until the
    communication ends, from the start). The communication of C seconds alone takes C / r beside the compute, which
    loses s C / r; when that outlasts the compute (C (1 - s) / r > T), the compute is slowed throughout (T s / (1 - s))
    and the rest of the communication runs alone after it. Without interference: (0, C)."""
    s, r = gpu.overlap_compute_slowdown, gpu.overlap_comm_rate
    if not fw.comm_interference or s <= 0 or comm_s <= 0:
        return 0.0, comm_s
    alongside = comm_s / r
    if alongside * (1 - s) <= compute_s:
        return s * alongside, alongside
    stretched = compute_s / (1 - s)
    return stretched - compute_s, stretched + (comm_s - r * stretched)


def beside_excess(compute_s: float, comm_s: float, gpu, fw) -> float:
    """What communication running beside `compute_s` of compute adds to it (beside: the compute's loss, then the
    communication's tail)."""
    slow, span = beside(compute_s, comm_s, gpu, fw)
    return max(compute_s + slow, span) - compute_s


def _gemm_s(gpu, layer_ops: list[ops.Op], names: tuple[str, ...], dtype: str) -> float:
    return sum(ops.op_time_s(gpu, op, dtype) for op in layer_ops if op.kind == "gemm" and op.name in names)


def tp_layer_exposed(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, gpu, net: comm.Network, group: comm.Group,
                     fwd_ops: list[ops.Op], bwd_ops: list[ops.Op]) -> tuple[float, float]:
    """Exposed TP communication of one layer and micro-batch, forward and backward, with TE's overlap (above)."""
    tokens = batch.micro_batch * model.seq // par.cp
    dtype, t = batch.precision, par.tp
    ag = comm.collective_s(net, group, "all_gather", tokens * model.hidden * (1 if dtype == "fp8" else 2))
    rs = comm.collective_s(net, group, "reduce_scatter", tokens * model.hidden * 2)
    slow = gpu.sm_count / (gpu.sm_count - COMM_SMS)
    qkv = ("qkv", "q", "k", "v")
    # the MLP block's TP calls: a dense MLP's, a MoE layer's shared expert's (its own SP all_gather / reduce_scatter,
    # assumed overlapped like the dense MLP's), none for a MoE layer without one (comm.mlp_block_tp_calls)
    fc1, down = (("shared_gate", "shared_up"), "shared_down") if model.moe else (("gate", "up"), "down")
    mlp = comm.mlp_block_tp_calls(model)
    def gathered(names):      # a GEMM fed by an all_gather: the ring exchange's exposed part
        g = _gemm_s(gpu, fwd_ops, names, dtype)
        return ring_exchange_s(g, ag, t) - g

    def scattered(names):     # a GEMM whose output is reduce-scattered: pipelined in chunks
        g = _gemm_s(gpu, fwd_ops, names, dtype)
        return pipelined_s(g * slow, rs, PIPELINE_SPLITS) - g

    attn_part, mlp_part = gathered(qkv) + scattered(("attn_out",)), mlp * (gathered(fc1) + scattered((down,)))
    fwd = attn_part + mlp_part
    bwd = fwd if par.recompute == "full" else (mlp_part if par.recomputes_mlp_block(model) else 0.0)
    for name in ("attn_out", down)[:1 + mlp]:
        g = _gemm_s(gpu, bwd_ops, (f"{name}.dgrad",), dtype)
        bwd += ring_exchange_s(g, ag, t) - g
    for names in (qkv, fc1)[:1 + mlp]:
        g = _gemm_s(gpu, bwd_ops, tuple(f"{n}.wgrad" for n in names), dtype)
        bwd += bulk_s(g * slow, rs) - g
    return fwd, bwd
