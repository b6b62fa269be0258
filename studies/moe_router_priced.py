"""What the product prices today for the non-GEMM pieces of a MoE layer, on each held-out published MoE row's own shapes
(issue 44, session 49 moerouter). Read-only: no model change, nothing fitted, not a test. Run on the product before
adopt49 (heldout/registration.before_adopt49): the router term off, the MoE rows held out as their files say.

For each row `validate --published llm` labels held out and family MoE it prints one MoE layer pass (one micro-batch's
forward and backward of one MoE layer on one GPU), in microseconds:
  shape   T' (the router's tokens: b s / c, over t under sequence parallelism; the product's router GEMM takes b s / c), E experts, h hidden, k top-k, the score
          function (sigmoid for the DeepSeek-V3 architecture: DeepSeek-V3, Moonlight; softmax otherwise), local experts,
          EP, the rows this GPU dispatches (T k / (t / etp)), the row's precision
  priced  the router GEMM (T, E, h) forward and backward (dgrad + wgrad), the router's top-k chain (local spec only:
          fw.torch_chains), the dispatcher's permutations (ops.permutation: permute_copies row copies, forward and
          backward), and the host excess after the dispatcher's sync (llm/moe_sync.py, forward / backward; 0 where it
          does not apply: A2A overlap, the local spec)
  omitted what no op prices: the router's score function, top-k, score normalisation, aux / z loss and their backward
          (Megatron-Core router.py TopKRouter.routing; fused or not), the tokens-per-expert count, its device-to-host
          copy and the host's wait for it (token_dispatcher.py _maybe_dtoh_and_synchronize). Printed: 0, and the floor
          such kernels cannot go under: n x the card's launch floor (gpu.launch_s), n = ROUTER_KERNELS
  miss    (measured step - predicted step) / (micro-batches x MoE layers per stage): what the row's error is per layer pass
          (studies/moe_gap.py's definition)

    PYTHONPATH=. python studies/moe_router_priced.py > studies/moe_router_priced.txt
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import moe_rows  # noqa: E402

from simcluster.heldout.registration import moe_rows_then  # noqa: E402
from simcluster.llm import comm, compiled, layer_work, moe_compute, moe_sync, ops  # noqa: E402
from simcluster.published import read_published  # noqa: E402
from simcluster.reference.llm import validate_published_llm  # noqa: E402
from simcluster.runner.moerouter_grid import score_function  # noqa: E402

# forward + backward kernels of Megatron-Core's router after its GEMM with the fused TE router kernels (moe_router_fusion):
# fused top-k + score function, fused aux-loss scores, their count, the aux loss and its tracker (moe_graphs.ROUTER_CALLS
# = 7 forward) and as many backward: a floor of 14 kernels, each at least gpu.launch_s on the GPU
ROUTER_KERNELS = 14


def base(op) -> str:
    return op.name.removeprefix("recompute.").split(".")[0]


def priced(row) -> dict:
    """The row's priced non-GEMM MoE pieces of one layer pass (seconds)."""
    model, par, batch, gpu, fw = row.model, row.par, row.batch, row.gpu, row.framework
    dtype = batch.precision
    fwd, bwd = compiled.layer_ops(model, par, batch, fw)

    def t(lst, names) -> float:
        return sum(ops.op_time_s(gpu, o, dtype) for o in lst if base(o) in names)

    out = {"router_f": t(fwd, ("router",)), "router_b": t(bwd, ("router",)),
           "topk_f": t(fwd, ("router_topk",)), "topk_b": t(bwd, ("router_topk",)),
           "permute_f": t(fwd, ("permute",)), "permute_b": t(bwd, ("permute",)), "host_f": 0.0, "host_b": 0.0}
    if moe_sync.applies(fw, par):
        g = comm.groups(par, row.net)
        lc = comm.layer_comm(model, par, batch, row.net, g, fw)
        comp_f, comp_b = ops.ops_time_s(gpu, fwd, dtype), ops.ops_time_s(gpu, bwd, dtype)
        split = moe_compute.moe_compute(gpu, fwd, bwd, dtype, comp_f, comp_b)
        ep_f, ep_b = layer_work.exposed_ep(par, lc, gpu, fw, split)
        out["host_f"], out["host_b"] = moe_sync.sync_host_s(gpu, fwd, bwd, dtype, ep_f, ep_b, max(par.layer_split(model.layers)),
                                                            fw.moe_sync_kernel_s, fw)
    return out


def held_out_moe() -> list[tuple[str, int]]:
    """(file stem, run index) of every held-out MoE row of validate --published llm in the 13 files the router term's
    rule priced (heldout/registration.moe_rows_then: the MoE files of this study's day, session 49; publ50's Model Zoo
    files, recorded after, left out)."""
    return [(r.source, r.run) for r in moe_rows_then(validate_published_llm().rows) if r.held_out]


def layer_shape(stem: str, i: int, row) -> tuple:
    """(T', E, h, k, score function, local experts, ep, dispatched rows, expert groups, group top-k) of the row's MoE
    layer: runner/moerouter_grid.GRID's key; T' the tokens the router runs on (the rank's sequence shard under sequence
    parallelism, Megatron-Core moe_layer.py MoELayer.forward: the product's router GEMM takes T, ops.layer_forward)."""
    model, par, batch = row.model, row.par, row.batch
    name = str((read_published(moe_rows.PUBLISHED / f"{stem}.yaml", "published-llm-run").runs[i].get("model") or {}).get("name", ""))
    sh = ops.sharding(model, par, batch)
    local = model.experts // par.ep
    routed = sh.tokens * model.top_k * par.ep // (model.experts * (par.tp // par.etp))
    return (sh.seq_tokens, model.experts, model.hidden, model.top_k, score_function(name), local, par.ep, routed * local,
            model.expert_groups, model.group_topk)


def main() -> None:
    TP = "T'"
    print("us per MoE layer pass (one micro-batch's forward + backward of one MoE layer on one GPU); docstring for the columns")
    print(f"{'row':44s} {TP:>6s} {'E':>4s} {'h':>5s} {'k':>2s} {'sf':4s} {'loc':>3s} {'ep':>3s} {'rows':>6s} {'dt':4s} | "
          f"{'rtr_f':>6s} {'rtr_b':>6s} {'topk':>5s} {'perm_f':>6s} {'perm_b':>6s} {'host_f':>6s} {'host_b':>6s} | "
          f"{'omit':>4s} {'floor':>5s} | {'miss':>7s} {'priced/miss':>11s}")
    for stem, i in held_out_moe():
        row = moe_rows.predict_row(stem, i)
        p = priced(row)
        T, E, h, k, sf, local, ep, rows, _, _ = layer_shape(stem, i, row)
        dt = row.batch.precision
        dp = row.gpus // (row.par.tp * row.par.pp * row.par.cp)
        passes = row.batch.micro_batches(dp) * row.model.moe_layers / row.par.pp
        miss = (row.measured_step_s - row.result.step_time_s) / passes
        floor = ROUTER_KERNELS * row.gpu.launch_s
        total = sum(p.values())
        print(f"{stem[4:44]:40s} {i:3d} {T:6d} {E:4d} {h:5d} {k:2d} {sf[:4]:4s} {local:3d} {ep:3d} {rows:6d} {dt:4s} | "
              + " ".join(f"{1e6 * p[x]:6.1f}" if x != "topk" else f"{1e6 * (p['topk_f'] + p['topk_b']):5.1f}"
                         for x in ("router_f", "router_b", "topk", "permute_f", "permute_b", "host_f", "host_b"))
              + f" | {0:4d} {1e6 * floor:5.0f} | {1e6 * miss:7.0f} {total / miss if miss else float('nan'):11.2f}")


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    from simcluster.heldout.registration import before_adopt49
    with before_adopt49():   # the product before adopt49 turned the measured router term on (its output's day, session 49)
        main()
