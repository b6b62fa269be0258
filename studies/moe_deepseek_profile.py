"""DeepSeek's published training profile of MoE layers, per kernel class, against the model's price of the same layer
(issue 44, session 36 moeprof). Read-only: no model change, not a test.

Source: github deepseek-ai/profile-data, train.json at 4496024 (2025-03-21; PyTorch profiler, Chrome trace of rank 0
of 64, H800, trace name prof_ep64_tp1_varsm_hidden7168_seqlen4096). Its README: one DualPipe pair, a forward chunk
and a backward chunk of 4 MoE layers each run overlapped, EP 64, TP 1, 4K sequence, routing forced balanced, PP
communication left out. The trace (3 MB) is not committed; `--trace PATH` re-parses it and rewrites the summary
(studies/moe_deepseek_profile-summary.json), which the table is printed from otherwise.
    git --git-dir /work/.mirror/deepseek-ai+profile-data/repo show HEAD:train.json > /tmp/train.json
    python studies/moe_deepseek_profile.py --trace /tmp/train.json      # parse, write the summary, print
    python studies/moe_deepseek_profile.py                              # print from the committed summary

Reading the trace. Every kernel is put in the host range that launched it (the profile's user annotations attn(F),
dispatch(F), mlp(F), combine(F) for the forward layer, combine(B), mlp(B), dispatch(B), mlp(W), attn(B), attn(W) for
the backward one; the launch found through the kernel's correlation id). Streams: 7 compute, 23 a second compute
stream (expert weight gradients beside stream 7's), 27 DeepEP's communication kernels. Classes by kernel name; GEMMs
(DeepSeek's own fp8 kernels, 128-wide block scaling) by their host range: attention projections in attn(*), the
experts' grouped GEMMs (m_grouped_*) and the expert weight gradients in mlp(*), the shared expert's the other GEMMs of
mlp(*) (in mlp(W) the first and last on stream 7: its two weight gradients bracket the experts' eight). Router: the
bf16 cuBLAS GEMM, and every non-cast kernel after it in attn(F) (top-k, group limit, aux loss) or before it in attn(B).
Time per class: "sum" adds kernel durations; "share" splits each instant of compute-stream time evenly over the
compute kernels running at it (streams 7 and 23), so the shares add up to the compute streams' busy union. DeepEP's
kernels hold 20 SMs (20 blocks each) the whole pair; the compute GEMMs run persistent on the other 112 (112 CTAs).

Tokens per micro-batch: 4096, from the grids (the per-token fp8 casts of the layer input and the router's top-k
gather launch one block per token; the trace records no tensor shapes). Rows the experts see per layer: the grid of the
fused SwiGLU-and-cast over the received rows (one block per row); balanced routing gives T k ep / E x E / ep = 32,768.

The model's side: DeepSeek-V3's shape (from the 25.08 DeepSeek-V3 published row's assumptions: MLA, 256 experts top 8
in 8 groups of which 4, one shared expert), TP 1, EP 64 over 8 nodes with the deepep dispatcher, micro-batch 1 of
4096 tokens, fp8, recompute_modules layernorm, mla_up_proj, moe_act (what the backward here runs again: the norms, the
MLA up-projections, the SwiGLU), on the h100-sxm card (H800 = H100 SXM's 132 SMs, HBM3 and clocks; its NVLink is
cut to 400 GB/s, which prices nothing here but the EP term). Each op of llm/ops.layer_forward / layer_backward is put
in the profile's classes by name and priced by ops.op_time_s. MLA's layout in its unfused form (FrameworkSpec.rope_fusion
False: DeepSeek's kernels write the whole query out; the 25.08 row's recipe runs Megatron's fused rope, printed beside it).
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from dataclasses import replace
from itertools import pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from simcluster.llm.layer_work import EP_COMM_SMS  # noqa: E402
from simcluster.script_args import ArgumentParser  # noqa: E402

SUMMARY = ROOT / "studies" / "moe_deepseek_profile-summary.json"
SOURCE = {"repository": "github.com/deepseek-ai/profile-data", "file": "train.json",
          "commit": "449602428a1b023acb8a505d4f34fef536535db6", "blob": "7a8f40f9626fdcabccfe12787b2148b1e4b8e282",
          "read": "2026-11-29"}
COMPUTE_STREAMS, COMM_STREAM = (7, 23), 27
LAYERS = 4
CLASSES = ("attention core", "attention GEMMs (MLA, out)", "expert GEMMs", "shared expert GEMMs", "router GEMM (bf16)",
           "router top-k / aux loss", "norms + residual adds", "rotary / MLA copies", "SwiGLU", "permute / unpermute",
           "fp8 quantize / cast", "elementwise / copies", "fp32 main_grad accumulate")
COMM_CLASSES = ("DeepEP dispatch", "DeepEP combine", "DeepEP notify / layout", "comm-stream cast")


# ---------------------------------------------------------------------------------------------------- the trace

EVENT_KEYS = {"kernel": ("name", "ts", "dur", "tid", "args"), "gpu_memcpy": ("name", "ts", "dur", "tid", "args"),
              "gpu_memset": ("name", "ts", "dur", "tid", "args"), "user_annotation": ("name", "ts", "dur"),
              "cuda_runtime": ("ts",), "cuda_driver": ("ts",)}


def missing_key(trace) -> str | None:
    """The first key summarize() reads that the trace lacks (None: all there): traceEvents, deviceProperties[0]'s name
    and numSms, distributedInfo's rank and world_size, and each read event's fields (a kernel's args among them)."""
    if not isinstance(trace, dict):
        return "top-level object"
    if not isinstance(trace.get("traceEvents"), list):
        return "traceEvents"
    dev = trace.get("deviceProperties")
    if not isinstance(dev, list) or not dev or not isinstance(dev[0], dict):
        return "deviceProperties"
    for key in ("name", "numSms"):
        if key not in dev[0]:
            return f"deviceProperties[0].{key}"
    info = trace.get("distributedInfo")
    if not isinstance(info, dict):
        return "distributedInfo"
    for key in ("rank", "world_size"):
        if key not in info:
            return f"distributedInfo.{key}"
    for i, e in enumerate(trace["traceEvents"]):
        if not isinstance(e, dict):
            return f"traceEvents[{i}] (not an object)"
        for key in EVENT_KEYS.get(e.get("cat"), ()):
            if key not in e or (key == "args" and not isinstance(e[key], dict)):
                return f"traceEvents[{i}].{key} ({e.get('cat')} event)"
    return None


def _kernels(trace: dict) -> list[dict]:
    """Every GPU kernel / memcpy / memset with the host range (annotation) that launched it, in start order."""
    ev = trace["traceEvents"]
    launches = {e["args"]["correlation"]: e["ts"] for e in ev
                if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    ranges = sorted((e["ts"], e["ts"] + e["dur"], e["name"]) for e in ev
                    if e.get("cat") == "user_annotation" and re.fullmatch(r"(attn|mlp|dispatch|combine)\([FBW]\)", e["name"]))
    out, order = [], defaultdict(int)
    for e in sorted((e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")), key=lambda e: e["ts"]):
        at = launches.get(e["args"].get("correlation"))
        hit = [(i, r) for i, r in enumerate(ranges) if at is not None and r[0] <= at <= r[1]]
        if not hit:
            raise SystemExit(f"kernel {e['name'][:60]!r} at {e['ts']}: launched outside every annotated range")
        i, (_, _, name) = hit[0]
        out.append({"name": e["name"], "start": float(e["ts"]), "dur": float(e["dur"]), "stream": e["tid"],
                    "range": name, "range_i": i, "grid": e["args"].get("grid"), "seq": order[i]})
        order[i] += 1
    return out


def _is_gemm(n: str) -> bool:
    return "grouped_gemm::cuda::" in n and "GemmKernel" in n


def _is_cast(n: str) -> bool:
    return any(x in n for x in ("per_token_cast", "per_channel_cast", "cast_back", "batched_transpose", "utils::transpose",
                                "fill_tensormaps"))


def _classify(ks: list[dict]) -> None:
    """Set each kernel's class and pass (fwd / bwd: the annotation's F, or B / W)."""
    by_range = defaultdict(list)
    for k in ks:
        by_range[k["range_i"]].append(k)
    for rng in by_range.values():
        rng.sort(key=lambda k: k["seq"])
        router_at = [k["seq"] for k in rng if "sm90_xmma_gemm_bf16" in k["name"]]
        wgrads = [k for k in rng if _is_gemm(k["name"]) and k["stream"] == 7]
        before = None
        for k in rng:
            k["pass"] = "fwd" if k["range"].endswith("(F)") else "bwd"
            k["cls"] = _class_of(k, rng[0]["range"], router_at, wgrads)
            if "direct_copy" in k["name"] and before is not None and before["cls"] == "rotary / MLA copies":
                k["cls"] = "rotary / MLA copies"   # the value made contiguous, right after the key's concatenation
            before = k if k["stream"] == 7 else before


def _class_of(k: dict, rng: str, router_at: list[int], wgrads: list[dict]) -> str:
    n = k["name"]
    if k["stream"] == COMM_STREAM:
        return ("DeepEP dispatch" if "internode::dispatch" in n else "DeepEP combine" if "internode::combine" in n
                else "DeepEP notify / layout" if ("notify" in n or "dispatch_layout" in n) else "comm-stream cast")
    if "flash::" in n:
        return "attention core"
    if _is_gemm(n):
        if rng.startswith("attn"):
            return "attention GEMMs (MLA, out)"
        if "m_grouped" in n or (rng == "mlp(W)" and k not in wgrads[:1] + wgrads[-1:]):
            return "expert GEMMs"
        return "shared expert GEMMs"
    if "sm90_xmma_gemm_bf16" in n:
        return "router GEMM (bf16)"
    if "swiglu" in n:
        return "SwiGLU"
    if _is_cast(n):
        return "fp8 quantize / cast"
    if router_at and ((rng == "attn(F)" and k["seq"] > router_at[0]) or (rng == "attn(B)" and k["seq"] < router_at[0])):
        return "router top-k / aux loss"
    if "layer_norm::" in n or "CUDAFunctor_add<c10::BFloat16>" in n:   # the residual add: fused into the norm forward
        return "norms + residual adds"
    if "rotary_kernel" in n or "_copy_tensor_kernel" in n:
        return "rotary / MLA copies"
    if any(x in n for x in ("expand_to_fused", "reduce_fused", "get_fused_mapping", "clean_and_count_expert")):
        return "permute / unpermute"
    return "elementwise / copies"


def _union(iv: list[tuple[float, float]]) -> float:
    total, end = 0.0, None
    for s, e in sorted(iv):
        if end is None or s > end:
            total, end = total + e - s, e
        elif e > end:
            total, end = total + e - end, e
    return total


def _shares(ks: list[dict]) -> None:
    """Each compute-stream kernel's share of the compute streams' time: every instant split evenly over the compute
    kernels running at it (the shares sum to the compute streams' busy union)."""
    comp = [k for k in ks if k["stream"] in COMPUTE_STREAMS]
    cuts = sorted({t for k in comp for t in (k["start"], k["start"] + k["dur"])})
    for k in comp:
        k["share"] = 0.0
    for a, b in pairwise(cuts):
        live = [k for k in comp if k["start"] <= a and k["start"] + k["dur"] >= b]
        for k in live:
            k["share"] += (b - a) / len(live)


def summarize(trace: dict) -> dict:
    ks = _kernels(trace)
    _classify(ks)
    _shares(ks)
    comp = [(k["start"], k["start"] + k["dur"]) for k in ks if k["stream"] in COMPUTE_STREAMS]
    comm = [(k["start"], k["start"] + k["dur"]) for k in ks if k["stream"] == COMM_STREAM]
    classes: dict = {}
    for k in ks:
        c = classes.setdefault(k["cls"], {}).setdefault(k["pass"], {"kernels": 0, "sum_us": 0.0, "share_us": 0.0})
        c["kernels"] += 1
        c["sum_us"] += k["dur"]
        c["share_us"] += k.get("share", 0.0)
    rows = [k["grid"][0] for k in ks if k["range"] == "mlp(F)" and "swiglu_forward_with_weight_and_per_token_cast" in k["name"]
            and k["grid"][0] != 4096]
    gemm_ctas = sorted({k["grid"][0] * k["grid"][1] for k in ks if _is_gemm(k["name"])})
    comm_blocks = sorted({k["grid"][0] for k in ks if k["stream"] == COMM_STREAM and re.search(r"internode::(dispatch|combine)<", k["name"])})
    sms = trace["deviceProperties"][0]["numSms"]
    beside = _union(comp) + _union(comm) - _union(comp + comm)
    return {"source": SOURCE, "trace_name": trace.get("traceName"), "device": trace["deviceProperties"][0]["name"],
            "rank": trace["distributedInfo"]["rank"], "world_size": trace["distributedInfo"]["world_size"],
            "layers_per_chunk": LAYERS, "tokens_per_micro_batch": 4096, "expert_rows_per_layer": rows,
            "sms": sms, "gemm_ctas": gemm_ctas, "comm_blocks": comm_blocks,
            "span_us": max(k["start"] + k["dur"] for k in ks) - min(k["start"] for k in ks),
            "compute_busy_us": _union(comp), "comm_busy_us": _union(comm), "comm_beside_compute_us": beside,
            "all_busy_us": _union(comp + comm), "classes": classes}


# ---------------------------------------------------------------------------------------------------- the model

OP_CLASSES = (   # llm/ops.py op names (recompute. and .dgrad / .wgrad / .bwd stripped) -> the profile's classes
    ("attention core", ("attention",)),
    ("attention GEMMs (MLA, out)", ("q_down", "q_up", "kv_down", "kv_up", "attn_out")),
    ("expert GEMMs", ("expert_gate", "expert_up", "expert_down")),
    ("shared expert GEMMs", ("shared_gate", "shared_up", "shared_down")),
    ("router GEMM (bf16)", ("router",)),
    ("norms + residual adds", ("rmsnorm", "latent_rmsnorm", "residual_add")),
    ("rotary / MLA copies", ("rotary",)),
    ("SwiGLU", ("swiglu", "shared_swiglu")),
    ("permute / unpermute", ("permute",)),
    ("fp8 quantize / cast", ("fp8_cast",)),
    ("fp32 main_grad accumulate", ("main_grad_accumulate",)),
)


def _op_class(name: str) -> str:
    base = re.sub(r"\.(dgrad|wgrad|bwd)$", "", name.removeprefix("recompute."))
    for cls, names in OP_CLASSES:
        if base in names:
            return cls
    raise SystemExit(f"model op {name!r}: no profile class")


def model_setup(rope_fusion: bool = False):
    """DeepSeek-V3 as the profile runs it, priced like the validation's DeepSeek-V3 DeepEP row (its machine, card), but
    MLA's layout in the unfused form (FrameworkSpec.rope_fusion False, llm/mla_layout.py): DeepSeek's own kernels write
    the whole query out (its rotary and copy kernels' times fit 2 T a' (d_nope + d_rope) 2 bytes, not the rope slice
    alone that Megatron's fused rotary moves, which the 25.08 row's recipe runs)."""
    from moe_rows import predict_row

    from simcluster.llm import comm
    row = predict_row("llm-dgxc-benchmarking-v25.08-deepseek-v3-h100", 0)
    par = replace(row.par, recompute="selective", recompute_modules=("layernorm", "mla_up_proj", "moe_act"),
                  moe_dispatcher="deepep", ep=64, tp=1, expert_tp=1)
    batch = replace(row.batch, micro_batch=1, precision="fp8")
    return row.model, par, batch, row.gpu, row.net, replace(row.framework, rope_fusion=rope_fusion), comm.groups(par, row.net)


def model_layer(rope_fusion: bool = False) -> dict:
    """Per class {fwd, bwd} seconds of one MoE layer on one GPU, and the EP calls' seconds."""
    from simcluster.llm import comm, ops
    model, par, batch, gpu, net, fw, g = model_setup(rope_fusion)
    out: dict = {c: {"fwd": 0.0, "bwd": 0.0} for c in CLASSES}
    for key, layer_ops in (("fwd", ops.layer_forward(model, par, batch, fw)), ("bwd", ops.layer_backward(model, par, batch, fw))):
        for op in layer_ops:
            out[_op_class(op.name)][key] += ops.op_time_s(gpu, op, batch.precision)
    lc = comm.layer_comm(model, par, batch, net, g, fw)
    out["_ep"] = {"fwd": lc.ep_fwd_s, "bwd": lc.ep_bwd_s,
                  "one_call": comm.ep_dispatch_s(model, par, net, g.ep, 4096 * model.top_k * model.hidden * 2)}
    return out


# ---------------------------------------------------------------------------------------------------- the table

COMPUTE_BOUND = ("attention core", "attention GEMMs (MLA, out)", "expert GEMMs", "shared expert GEMMs", "router GEMM (bf16)")


def table(s: dict, m: dict) -> None:
    per = s["layers_per_chunk"]
    layer_us = s["compute_busy_us"] / per
    sm_scale = s["sms"] / (s["sms"] - max(s["comm_blocks"]))    # the compute-bound kernels beside DeepEP's resident blocks
    print(f"{s['device']}, rank {s['rank']} of {s['world_size']} ({s['trace_name']}); {per} forward + {per} backward MoE layers "
          f"overlapped (DualPipe)")
    print(f"kernel span {s['span_us'] / 1e3:.1f} ms; compute streams busy {s['compute_busy_us'] / 1e3:.1f} ms "
          f"({layer_us / 1e3:.2f} ms per forward + backward layer); DeepEP stream busy {s['comm_busy_us'] / 1e3:.1f} ms, "
          f"{s['comm_beside_compute_us'] / 1e3:.1f} ms of it beside compute")
    rows = s["expert_rows_per_layer"]
    print(f"tokens per micro-batch {s['tokens_per_micro_batch']}; rows at the experts per layer {rows} (mean "
          f"{sum(rows) / len(rows):.0f}; balanced 32768); SMs {s['sms']}: GEMM CTAs {s['gemm_ctas']}, DeepEP dispatch / "
          f"combine blocks {s['comm_blocks']}")
    print("\nus per forward + backward layer. prof: the class's share of the compute streams (bwd: sum of kernel durations in "
          f"brackets where streams 7 and 23 overlap); @{s['sms'] - max(s['comm_blocks'])}: the model's compute-bound classes "
          f"x {sm_scale:.3f} (SMs left beside DeepEP); missing: prof - model, and prof - model @SMs, in us and % of the layer")
    print(f"{'class':27s} {'prof fwd':>8s} {'model':>6s} {'prof bwd':>14s} {'model':>6s} {'prof':>6s} {'model':>6s} {'@SMs':>6s}"
          f" {'missing':>15s} {'@SMs':>14s}")
    tot = [0.0, 0.0, 0.0]
    for c in CLASSES:
        pf, pb = (s["classes"].get(c, {}).get(k, {}) for k in ("fwd", "bwd"))
        f_us, b_us = pf.get("share_us", 0.0) / per, pb.get("share_us", 0.0) / per
        b_sum = pb.get("sum_us", 0.0) / per
        mf, mb = 1e6 * m[c]["fwd"], 1e6 * m[c]["bwd"]
        at = (mf + mb) * (sm_scale if c in COMPUTE_BOUND else 1.0)
        prof = f_us + b_us
        tot = [tot[0] + prof, tot[1] + mf + mb, tot[2] + at]
        bracket = f"({b_sum:.0f})" if abs(b_sum - b_us) > 1 else ""
        print(f"{c:27s} {f_us:8.0f} {mf:6.0f} {b_us:7.0f}{bracket:>7s} {mb:6.0f} {prof:6.0f} {mf + mb:6.0f} {at:6.0f}"
              f" {prof - mf - mb:+7.0f} {100 * (prof - mf - mb) / layer_us:+6.1f}% {prof - at:+6.0f} {100 * (prof - at) / layer_us:+6.1f}%")
    p, mo, at = tot
    print(f"{'all compute':27s} {'':8s} {'':6s} {'':14s} {'':6s} {p:6.0f} {mo:6.0f} {at:6.0f} {p - mo:+7.0f} "
          f"{100 * (p - mo) / layer_us:+6.1f}% {p - at:+6.0f} {100 * (p - at) / layer_us:+6.1f}%")
    print("\nDeepEP stream, us per layer (kernel durations: they include each kernel's wait for its peers)")
    for c in COMM_CLASSES:
        for k in ("fwd", "bwd"):
            v = s["classes"].get(c, {}).get(k)
            if v:
                print(f"  {c:24s} {k}: {v['sum_us'] / per:7.0f} us ({v['kernels'] // per} a layer)")
    ep = m["_ep"]
    print(f"model: one deepep dispatch (or combine) of T k h 2 = {4096 * 8 * 7168 * 2 / 1e6:.0f} MB: {1e6 * ep['one_call']:.0f} us; "
          f"forward {1e6 * ep['fwd']:.0f} us, backward {1e6 * ep['bwd']:.0f} us a layer; under A2A overlap the model charges "
          f"{EP_COMM_SMS} / {s['sms']} of that as compute lost to the dispatcher's SMs: {1e6 * EP_COMM_SMS / s['sms'] * (ep['fwd'] + ep['bwd']):.0f} us "
          f"a layer pair (exposed_ep), against the profile's {(sm_scale - 1) * sum(1e6 * (m[c]['fwd'] + m[c]['bwd']) for c in COMPUTE_BOUND):.0f} us "
          f"(the model's compute-bound classes on {s['sms'] - max(s['comm_blocks'])} SMs for the whole pair)")
    fused = model_layer(rope_fusion=True)["rotary / MLA copies"]
    c = "rotary / MLA copies"
    prof = sum(s["classes"].get(c, {}).get(k, {}).get("share_us", 0.0) for k in ("fwd", "bwd")) / per
    print(f"\n{c}: profile {prof:.0f} us a layer; the model's unfused form (the whole query written, as DeepSeek's kernels "
          f"do; the table) {1e6 * (m[c]['fwd'] + m[c]['bwd']):.0f} us, its fused form (Megatron's apply_rope_fusion: the "
          f"query's rope slice rotated in place) {1e6 * (fused['fwd'] + fused['bwd']):.0f} us")


def main() -> None:
    ap = ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trace", type=Path, help="train.json of deepseek-ai/profile-data: parse it and rewrite the summary")
    args = ap.parse_args()
    if args.trace:
        try:
            trace = json.loads(args.trace.read_text())
        except (OSError, ValueError) as e:
            raise SystemExit(f"--trace {args.trace}: cannot read a Chrome trace ({e})") from None
        missing = missing_key(trace)
        if missing:
            raise SystemExit(f"--trace {args.trace}: not a profile trace as read here: no {missing}")
        summary = summarize(trace)
        SUMMARY.write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    else:
        summary = json.loads(SUMMARY.read_text())
    table(summary, model_layer())


if __name__ == "__main__":
    main()
