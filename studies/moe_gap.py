"""Where the H100 Megatron MoE rows' misses could come from (issue 44, session 37 moe). Read-only: no model change, not
a test, nothing fitted. For each row of studies/moe_rows.py it prints the miss per MoE layer pass (one micro-batch's
forward + backward of one MoE layer on one GPU) beside the model's own parts of that pass and the size of each candidate
term of the brief, each from first principles and cited figures:

- router: the router's top-k / group limit / aux-loss kernels after its GEMM, which the model does not price. GPU time:
  DeepSeek's measured 339 us a forward + backward layer (63 small kernels at 4096 tokens, H800; studies/
  moe_deepseek_profile.py), the larger of the two readings the project holds (issue 44's reading of Megatron-Core's
  unfused router, ~105 us); host-bound form: the same 63 kernels each at the card's eager issue floor (`launch`,
  models/gpu/<card>.yaml), as if every one were exposed (an upper bound: the rows' host already sits behind the
  dispatcher sync, llm/moe_sync.py).
- imbalance: Megatron-Core's benchmark force-balance (moe_router_force_load_balancing: RandomSTE, normal logits from
  a rank-specific seed, so tokens route independently) leaves each GPU's received rows a sum of independent picks: over
  the EP group's N = ep T tokens each GPU's local experts get a token's pick with p = 1 / ep per pick, variance N k p
  (1 - p) (E - k) / (E - 1) (k distinct experts a token); the slowest GPU of the EP group gates the alltoall and its
  experts run the most rows, so the pass grows by E[max of ep] / mean - 1 of its expert GEMMs and EP time (the normal
  approximation of the maximum; the dgxc 25.05 rows pad every expert to capacity 1.0: exactly balanced, 0).
- tiles: the grouped GEMM's per-expert M quantised by tile_m (the card's tile): the model prices the balanced M of
  every expert; with M_e spread as above (one expert's picks, p = 1 / E per token), E[ceil(M_e / tile_m)] tiles
  against ceil(M / tile_m), times the expert GEMMs' time.
- SM share (A2A overlap rows only): compute beside the dispatcher's kernels on sm_count - EP_COMM_SMS SMs for the whole
  pair (studies/moe_sm_share.py's upper bound) less what layer_work.exposed_ep already charges.
Since session 37 the model prices the router / preprocess calls a recipe leaves ungraphed (llm/moe_graphs.py); the
graphed / ungraphed split printed last is what prompted it (this study at 82b8afe printed it, and an all-exposed
sensitivity of that term, before the model had it). The last columns: what the miss would need, as a multiple of
the router's GPU time, as a host cost per router kernel, as a factor on the model's EP time or on its expert GEMMs, and
as a share of the pass's modelled compute.
    python studies/moe_gap.py
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
from scipy import integrate, stats

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import moe_rows  # noqa: E402

from simcluster.llm import comm, compiled, layer_work, moe_compute, ops  # noqa: E402
from simcluster.llm.framework import MoeHost  # noqa: E402
from simcluster.published import read_published  # noqa: E402
from simcluster.reference.llm import RECIPE_PARSERS, memory_options  # noqa: E402

ROUTER_PROFILE_S = 339e-6      # DeepSeek's profile: router top-k / group limit / aux loss, forward + backward layer
ROUTER_PROFILE_KERNELS = 63    # its kernels (37 forward, 26 backward)
EXPERT_OPS = ("expert_gate", "expert_up", "expert_down")
# Megatron-Core's forward host per kernel (local spec, H200 traces of session 30): 50 us profiled, 40 us without the profiler
MEGATRON_HOST_KERNEL_S = MoeHost().kernel_s / MoeHost().profiled_over_plain
SKILLS = "llm-megatron-bridge-skills-qwen3-30b-h100-bf16"
# CUDA graphs over the router and the dispatcher's preprocess: what the files state (`simcluster.recipe` moe_graphs, read
# as the model reads it, framework_of(ref, run).moe_graphs), "?" where a file states nothing (dgxc DeepSeek-V3, 25.11).
# One explicit override: the skills file states nothing (its key would be per model name, and its graphed rows 0-2 and
# its graphs-disabled rows 3-4 share one), so the model prices all five graphed (the default); its notes say rows 0-2 ran
# Transformer Engine graphs over moe_router and moe_preprocess and rows 3-4 ran with graphs disabled, read so here.
SKILLS_GRAPHS = {0: "yes", 1: "yes", 2: "yes", 3: "no", 4: "no"}


def graphs_of(stem: str, i: int, row) -> str:
    """'yes' / 'no' / '?': CUDA graphs over router and preprocess for row i of <stem> (the comment above)."""
    if stem == SKILLS:
        return SKILLS_GRAPHS[i]
    ref = read_published(moe_rows.PUBLISHED / f"{stem}.yaml", "published-llm-run")
    if "moe_graphs" not in memory_options(ref, ref.runs[i], "recipe", RECIPE_PARSERS):
        return "?"
    return "yes" if row.framework.moe_graphs else "no"


# the two release outliers of the docs (llm.md's MoE row: the same presets printed 1.77x / 1.99x faster in another release)
OUTLIERS = {("llm-megatron-bridge-25.11-dgx-h100-b200", 4), ("llm-megatron-bridge-26.04-26.06-dgx-h100-moe", 3)}


def expected_max_z(n: int) -> float:
    """E[max of n independent standard normals] (0 for n = 1)."""
    if n <= 1:
        return 0.0
    f = lambda x: x * n * stats.norm.pdf(x) * stats.norm.cdf(x) ** (n - 1)   # noqa: E731
    return integrate.quad(f, -10, 10)[0]


def imbalance(model, par, tokens: int) -> float:
    """E[max over the EP group's GPUs of received rows] / mean - 1 under force-balanced routing (module docstring)."""
    if par.ep <= 1:
        return 0.0
    n, k, e, p = par.ep * tokens, model.top_k, model.experts, 1.0 / par.ep
    mean = n * k * p
    var = n * k * p * (1 - p) * (e - k) / (e - 1)
    return expected_max_z(par.ep) * math.sqrt(var) / mean


def tile_excess(model, par, tokens: int, tile_m: int) -> float:
    """E[ceil(M_e / tile_m)] / ceil(M / tile_m) - 1 for one local expert's rows M_e (mean M) under force balance."""
    n = par.ep * tokens
    q = model.top_k / model.experts
    mean, sd = n * q, math.sqrt(n * q * (1 - q))
    m = np.arange(max(1, int(mean - 8 * sd)), int(mean + 8 * sd) + 1)
    w = stats.norm.pdf(m, mean, sd)
    return float((np.ceil(m / tile_m) * w).sum() / w.sum()) / math.ceil(mean / tile_m) - 1


def pass_parts(row) -> dict:
    """The model's one MoE layer pass (seconds): its compute, its expert GEMMs, its EP time (as exposed by the row's
    overlap settings) and its raw EP time."""
    model, par, batch, gpu, fw = row.model, row.par, row.batch, row.gpu, row.framework
    dtype = batch.precision
    g = comm.groups(par, row.net)
    lc = comm.layer_comm(model, par, batch, row.net, g, fw)
    fwd, bwd = compiled.layer_ops(model, par, batch, fw)
    comp_f, comp_b = ops.ops_time_s(gpu, fwd, dtype), ops.ops_time_s(gpu, bwd, dtype)
    split = moe_compute.moe_compute(gpu, fwd, bwd, dtype, comp_f, comp_b)
    ep_f, ep_b = layer_work.exposed_ep(par, lc, gpu, fw, split)
    experts = sum(ops.op_time_s(gpu, o, dtype) for o in fwd + bwd if o.name.removeprefix("recompute.").split(".")[0] in EXPERT_OPS)
    sm_share = 0.0
    if par.moe_a2a_overlap and lc.ep_fwd_s + lc.ep_bwd_s > 0:
        s = layer_work.EP_COMM_SMS
        sm_share = max(0.0, s / (gpu.sm_count - s) * split.total - (ep_f + ep_b))
    return {"compute": comp_f + comp_b, "experts": experts, "ep": ep_f + ep_b, "ep_raw": lc.ep_fwd_s + lc.ep_bwd_s,
            "sm_share": sm_share}


def main() -> None:
    print("ms per MoE layer pass (one micro-batch's forward + backward of one MoE layer on one GPU); candidates from "
          "first principles (docstring); 'needs' = what the miss would need")
    head = (f"{'row':38s} {'disp':8s} {'a2a':3s} {'dt':4s} {'ep':>3s} {'gr':2s} {'miss':>6s} {'comp':>6s} {'exp':>6s} {'EP':>6s} | "
            f"{'router':>6s} {'imbal':>6s} {'tiles':>6s} {'SMs':>6s} {'sum':>6s} {'%miss':>6s} | "
            f"{'xrouter':>7s} {'us/krn':>6s} {'xEP':>5s} {'xexp':>5s} {'/comp':>5s}")
    print(head)
    shares, launch, by_graphs, excess = [], 0.0, {}, []
    for stem, runs in moe_rows.MOE_ROWS + moe_rows.NEW_ROWS:
        for i in runs:
            row = moe_rows.predict_row(stem, i)
            model, par, batch, gpu = row.model, row.par, row.batch, row.gpu
            pred = row.result.step_time_s
            meas = row.measured_step_s
            dp = row.gpus // (par.tp * par.pp * par.cp)
            passes = batch.micro_batches(dp) * model.moe_layers / par.pp
            miss = (meas - pred) / passes
            p = pass_parts(row)
            gr = graphs_of(stem, i, row)
            tokens = batch.micro_batch * model.seq // (par.tp // par.etp) // par.cp
            capacity = "25.05" in stem   # capacity factor 1.0, padded: every expert exactly its share
            imb = 0.0 if capacity else imbalance(model, par, tokens) * (p["experts"] + p["ep"])
            tiles = 0.0 if capacity else tile_excess(model, par, tokens, gpu.tile_m) * p["experts"]
            router = ROUTER_PROFILE_S
            total = router + imb + tiles + p["sm_share"]
            shares.append(total / miss)
            launch = gpu.launch_s
            if (stem, i) not in OUTLIERS:
                by_graphs.setdefault(gr, []).append(miss / p['compute'])
                excess.append((stem, i, miss, p['compute'], gr))
            print(f"{stem[4:38]:34s} {i:3d} {par.moe_dispatcher:8s} {'yes' if par.moe_a2a_overlap else 'no':3s} "
                  f"{batch.precision:4s} {par.ep:3d} {gr:3s}{1e3 * miss:6.2f} {1e3 * p['compute']:6.2f} {1e3 * p['experts']:6.2f} "
                  f"{1e3 * p['ep']:6.2f} | {1e3 * router:6.2f} {1e3 * imb:6.2f} {1e3 * tiles:6.2f} {1e3 * p['sm_share']:6.2f} "
                  f"{1e3 * total:6.2f} {100 * total / miss:5.0f}% | {miss / router:6.1f}x {1e6 * miss / ROUTER_PROFILE_KERNELS:6.0f} "
                  f"{(p['ep'] + miss) / p['ep'] if p['ep'] > 0 else float('nan'):5.2f} {(p['experts'] + miss) / p['experts']:5.2f} {miss / p['compute']:5.2f}")
    print(f"the candidates together cover {100 * min(shares):.0f}-{100 * max(shares):.0f}% of the rows' misses "
          f"(median {100 * float(np.median(shares)):.0f}%); host-bound router form: {ROUTER_PROFILE_KERNELS} kernels x the "
          f"card's eager issue floor {1e6 * launch:.1f} us = "
          f"{1e3 * ROUTER_PROFILE_KERNELS * launch:.2f} ms a pass")
    for key, vals in sorted(by_graphs.items()):
        print(f"miss / the pass's modelled compute, CUDA graphs over router and preprocess {key:3s} (release outliers left out): "
              f"{len(vals)} rows, median {float(np.median(vals)):.2f}, {min(vals):.2f}-{max(vals):.2f}")
    graphed = float(np.median(by_graphs["yes"]))
    print(f"ungraphed rows: the miss beyond the graphed rows' median share ({graphed:.2f} of compute), ms a pass, and as forward "
          f"host calls at Megatron's measured {1e6 * MEGATRON_HOST_KERNEL_S:.0f} us each (framework.MoeHost, unprofiled):")
    for stem, i, miss, compute, gr in excess:
        if gr == "no":
            extra = miss - graphed * compute
            print(f"  {stem[4:38]:34s} {i}  {1e3 * extra:5.2f} ms  {extra / MEGATRON_HOST_KERNEL_S:4.0f} calls")


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    main()
