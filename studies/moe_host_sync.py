"""Is the H100 Megatron MoE miss Megatron's host time after each MoE layer's host synchronisation? A diagnosis on
the 14 H100 Megatron MoE rows (issue 44, item 5): no model change, not a test, nothing here is a prediction.

Megatron-Core's MoE dispatchers need the token counts on the host every MoE layer forward (the alltoall dispatcher's
split sizes for torch's alltoall: token_dispatcher.py MoEAlltoAllTokenDispatcher.preprocess, cuda_sync_point
"before_ep_alltoall"; HybridEP without a token upper bound and DeepEP's normal-mode dispatch likewise; TE's grouped
GEMM takes the per-expert splits as a host list). At that point the host waits for the GPU, so the host can no longer
run ahead of the GPU across MoE layers: each forward segment between two syncs costs
    max_k ( k c + sum_{j >= k} t_j )     (llm/host.issue_bound_s; t_j the segment's kernels, c host seconds per kernel)
instead of its GPU time sum t_j. The backward reuses the host-known splits (no sync): its kernels run as one stream.

Since session moepub s35 the model itself prices this host for framework megatron (llm/moe_sync.py, 146.3 us per
modelled call from one Nsight GPU idle), so this study's c now comes on top of it: its printed numbers before s35 are in
llm-findings.md (session moe). For a host cost c per kernel (none measured with Transformer Engine before s35), this
prints each row's error if the critical stage's compute grew by that host excess (m micro-batches x the stage's
layers; an arithmetic bound, no re-simulation), and the c at which the row's error would be 0 (the implied host cost
per kernel). If one c closed every row the mechanism would be consistent with the rows; it is NOT fitted or adopted.
Kernels per op: its count, and one per local expert for the expert GEMMs (TE's GroupedLinear issues one cuBLAS GEMM
per expert); CUDA graphs (the Qwen3 30B recipe captures attention, router and preprocess) are ignored.

First, the GPU and network work of each MoE layer forward that the model leaves out and the code states, priced on the
row's own cards (added to the critical stage the same way, a bound): the router after its GEMM (router.py
TopKRouter.routing with moe_router_fusion: the force-balance random logits, the fused top-k with its score function,
the aux-loss scores and loss: ROUTER_KERNELS kernels over the T x E fp32 logits, ROUTER_BYTES bytes per element
forward, twice that backward) and the alltoall dispatcher's token-count all_gather over the EP group
(MoEAlltoAllTokenDispatcher.preprocess: gather_from_sequence_parallel_region of E int64 counts; one per forward MoE
layer pass, exposed: the host waits for it at the sync).
    python studies/moe_host_sync.py
"""

from __future__ import annotations

import functools
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from moe_rows import MOE_ROWS, predict_row  # noqa: E402

from simcluster.llm import comm, host, ops  # noqa: E402

C_GRID_US = (0, 5, 10, 20, 40)
ROUTER_KERNELS = 4      # random logits, fused top-k + score function, aux-loss scores, aux loss
ROUTER_BYTES = 30.0     # per T x E element forward: logits read 3 x 4, probs and scores written 2 x 4, maps 2 x 1, random 4 + 4


def kernels(gpu, op_list, dtype) -> np.ndarray:
    """GPU time of each kernel in issue order: an op of count n as round(n) (at least 1) equal kernels, an expert GEMM
    as one kernel per local expert."""
    out = []
    for o in op_list:
        n = o.shape[3] if o.kind == "gemm" and o.name.startswith("expert_") else max(1, round(o.count))
        out.append(np.full(int(n), ops.op_time_s(gpu, o, dtype) / n))
    return np.concatenate(out)


def excess_per_layer(gpu, fwd, bwd, dtype, c: float, layers: int) -> float:
    """Host excess of one micro-batch over `layers` MoE layers (forward segments cut after the router, backward one stream)."""
    cut = next(i for i, o in enumerate(fwd) if o.name == "router") + 1
    segment = np.concatenate([kernels(gpu, fwd[cut:], dtype), kernels(gpu, fwd[:cut], dtype)])
    f = host.issue_bound_s(segment, c) - segment.sum()
    b_stream = np.concatenate([kernels(gpu, bwd, dtype)] * layers)
    b = host.issue_bound_s(b_stream, c) - b_stream.sum()
    return layers * f + b


def host_error(error: float, step: float, m: int, gpu, fwd, bwd, dtype: str, layers: int,
               c: float) -> float:
    """The row's error if the critical stage's m micro-batches each took the host excess of its `layers` at c."""
    added = m * excess_per_layer(gpu, fwd, bwd, dtype, c, layers)
    return (1 + error) * step / (step + added) - 1


def main() -> None:
    print("row                                    error at c = " + " / ".join(f"{c} us" for c in C_GRID_US)
          + "   implied c   kernels/layer fwd, bwd")
    implied, left_out = [], []
    for stem, rows in MOE_ROWS:
        for i in rows:
            row = predict_row(stem, i)
            model, par, result, error, batch = row.model, row.par, row.result, row.error, row.batch
            fw, gpu, dtype = row.framework, row.gpu, batch.precision
            fwd, bwd = ops.layer_forward(model, par, batch, fw), ops.layer_backward(model, par, batch, fw)
            split = par.layer_split(model.layers)
            s = result.critical_stage
            layers = sum(split[k * par.pp + s] for k in range(par.virtual_stages))
            m = batch.micro_batches(par.dp)
            step = result.step_time_s

            err = functools.partial(host_error, error, step, m, gpu, fwd, bwd, dtype, layers)

            tokens = batch.micro_batch * model.seq // (par.cp * par.tp)
            router = 3 * ops.op_time_s(gpu, ops.memory("router_ops", ROUTER_BYTES * tokens * model.experts,
                                                       count=ROUTER_KERNELS), dtype)
            counts = (comm.collective_s(row.net, comm.groups(par, row.net).ep, "all_gather", 8 * model.experts * par.ep)
                      if par.moe_dispatcher == "alltoall" else 0.0)
            extra = m * layers * (router + counts * (2 if "moe" in par.recompute_modules else 1))
            gpu_side = (1 + error) * step / (step + extra) - 1
            left_out.append(abs(gpu_side))
            errs = [err(c * 1e-6) for c in C_GRID_US]
            lo, hi = 0.0, 1e-3
            c0 = math.nan
            if error > 0 and err(hi) < 0:
                for _ in range(50):
                    mid = (lo + hi) / 2
                    lo, hi = (mid, hi) if err(mid) > 0 else (lo, mid)
                c0 = lo
                implied.append(c0)
            print(f"{stem[4:40]:36s} {i}  router {1e6 * router:5.1f} us + counts {1e6 * counts:5.1f} us per layer:"
                  f" {100 * error:+6.1f} -> {100 * gpu_side:+6.1f}%")
            print(f"{'':36s}    " + " / ".join(f"{100 * e:+6.1f}%" for e in errs)
                  + f"   {1e6 * c0:7.1f} us   {len(kernels(gpu, fwd, dtype))}, {len(kernels(gpu, bwd, dtype))}")
    print(f"with the router and token counts: mean |error| {100 * sum(left_out) / len(left_out):.1f}%, "
          f"{sum(e <= 0.10 for e in left_out)} within 10%")
    print(f"implied host cost per kernel over the fast rows: {1e6 * min(implied):.1f} .. {1e6 * max(implied):.1f} us, "
          f"median {1e6 * float(np.median(implied)):.1f} us")


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    main()
