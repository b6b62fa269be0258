"""Rank 0's GPU kernel time of one profiled Megatron-Core local-spec MoE step (a Chrome trace of studies/megatron_moe/device.py
--trace), grouped by kind, beside the LLM model's price of the same kinds (framework megatron-local-spec). A measurement
read of development data (every trace read here is of a set already run), not a test (issue 44, session 40).

    python studies/megatron_moe/kernel_kinds.py calibration/h200x2-megatron-moe3-2026-11-28/trace-h200-x2-e16-top4-ffn2048-ep2-armB-rank0.json.gz ...
    python studies/megatron_moe/kernel_kinds.py --chain FOLDER/trace-...json.gz   # the softmax chain kernel by kernel
    python studies/megatron_moe/kernel_kinds.py --gaps FOLDER/trace-...json.gz    # the GPU's idle, by the kernel after each gap

Each GPU kernel is put in a kind by the host ops it was launched under (the trace's cpu_op events enclosing its launch
on the launching thread) and where it was launched:
  core_gemm      the unfused attention core's batched GEMMs: aten::baddbmm (scores) / aten::bmm (context), their backward
  softmax_chain  every kernel launched between the scores GEMM and the context GEMM (forward), between the context GEMM's
                 backward and the scores GEMM's (backward): the fp32 casts, masked_fill, softmax and their backward
  expert_gemm    Linear GEMMs launched from a layer's permutation (aten::index_select) to its unpermutation
                 (aten::scatter_add_), both included; backward ScatterAddBackward0 .. IndexSelectBackward0
  expert_other   the other non-NCCL kernels of those windows (the permutations, SwiGLU, the sort by expert's cats)
  dense_gemm     the other Linear GEMMs (QKV, the attention output, the LM head)
  router         RouterGatingLinearFunction and the routing ops after it up to the permutation (top-k, softmax, aux loss)
  nccl           NCCL kernels (all_to_all, the count all_gather, the loss's all_reduces)
  loss_embed     the vocabulary-parallel cross-entropy and the embedding (forward, backward)
  elementwise    everything else (RMSNorms, QK-norm, rotary, residual adds, GQA's key / value expansion)
Kernel times are summed (not their union): the NCCL kernels' time includes their wait for the other rank.
"""

from __future__ import annotations

import collections
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from simcluster.errors import SimclusterError, TraceFormatError  # noqa: E402
from simcluster.script_args import check  # noqa: E402
from simcluster.traces.torch_profiler import complete_events  # noqa: E402

KINDS = ("core_gemm", "softmax_chain", "expert_gemm", "expert_other", "dense_gemm", "router", "nccl", "loss_embed", "elementwise")
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
EF = "autograd::engine::evaluate_function: "


def load(path: Path) -> tuple[list[dict], dict]:
    """(GPU events each with its launch stack 'stack', launch time 'launch', stream 'stream' and trace 'args', cpu ops by
    thread sorted by start); a missing, truncated or foreign file is a TraceFormatError naming it
    (torch_profiler.complete_events)."""
    try:
        return _load(complete_events(path))
    except (KeyError, TypeError, ValueError) as exc:   # an event without the fields a torch.profiler trace gives it
        raise TraceFormatError(f"not a torch.profiler trace's events ({type(exc).__name__}: {exc})", where=str(path)) from None


def _load(ev: list[dict]) -> tuple[list[dict], dict]:
    ops = collections.defaultdict(list)
    for e in ev:
        if e.get("cat") == "cpu_op" and e.get("ph") == "X":
            ops[e["tid"]].append(e)
    for v in ops.values():
        v.sort(key=lambda e: e["ts"])
    runtime = {e["args"]["correlation"]: e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")
               and "correlation" in e.get("args", {})}
    gpu = []
    for e in ev:
        if e.get("cat") in GPU_CATS and e.get("ph") == "X":
            r = runtime.get(e.get("args", {}).get("correlation"))
            stack = [o["name"] for o in ops.get(r["tid"], []) if o["ts"] <= r["ts"] <= o["ts"] + o["dur"]] if r else []
            gpu.append(dict(name=e["name"], dur=e["dur"], ts=e["ts"], launch=r["ts"] if r else None, stack=stack,
                            stream=e.get("tid"), args=e.get("args", {})))
    return sorted(gpu, key=lambda e: e["launch"] or e["ts"]), ops


def windows(ops: dict) -> dict[str, list[tuple[float, float]]]:
    """Host-time windows: the softmax chain's (forward and backward) and the expert regions'."""
    allops = sorted((o for v in ops.values() for o in v), key=lambda o: o["ts"])

    def named(name):
        return [o for o in allops if o["name"] == name]

    def pair(starts, ends, start_at_end=True, end_at_start=True):
        out = []
        for a in starts:
            t0 = a["ts"] + a["dur"] if start_at_end else a["ts"]
            nxt = [b for b in ends if b["ts"] >= t0]
            if nxt:
                out.append((t0, nxt[0]["ts"] if end_at_start else nxt[0]["ts"] + nxt[0]["dur"]))
        return out

    fwd_thread = named("aten::baddbmm")[0]["tid"] if named("aten::baddbmm") else None
    bmm = [o for o in named("aten::bmm") if o["tid"] == fwd_thread]
    chain = pair(named("aten::baddbmm"), bmm) + pair(named(EF + "BmmBackward0"), named(EF + "BaddbmmBackward0"))
    embedding = named("aten::embedding")   # the embedding's own index_select is not a permutation
    index = [o for o in named("aten::index_select") if o["tid"] == fwd_thread
             and not any(e["ts"] <= o["ts"] <= e["ts"] + e["dur"] for e in embedding)]
    experts = pair(index, named("aten::scatter_add_"), start_at_end=False, end_at_start=False)
    experts += pair(named(EF + "ScatterAddBackward0"), named(EF + "IndexSelectBackward0"), start_at_end=False, end_at_start=False)
    return {"chain": chain, "experts": _first_each(experts)}


def _first_each(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Overlapping spans (two index_selects before one scatter_add_) merged."""
    out: list[tuple[float, float]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def kind_of(k: dict, win: dict) -> str:
    s = " > ".join(k["stack"])
    t = k["launch"]
    if k["name"].startswith("ncclDevKernel") or "record_param_comms" in s:
        return "nccl"
    if any(x in s for x in ("aten::baddbmm", "aten::bmm")) and ("BmmBackward0" in s or "BaddbmmBackward0" in s or EF not in s):
        return "core_gemm"
    if t is not None and any(a < t < b for a, b in win["chain"]):
        return "softmax_chain"
    linear = "LinearWithGradAccumulationAndAsyncCommunication" in s and "aten::mm" in s
    if t is not None and any(a <= t < b for a, b in win["experts"]):
        return "expert_gemm" if linear else "expert_other"
    if linear:
        return "dense_gemm"
    if re.search(r"Router|topk|MoEAuxLoss|Topk|aux_loss", s):
        return "router"
    if "VocabParallelCrossEntropy" in s or "Embedding" in s or "embedding" in s:
        return "loss_embed"
    return "elementwise"


def measured_kinds(path: Path) -> dict[str, float]:
    """{kind: rank 0's summed kernel seconds in the profiled step}."""
    gpu, ops = load(path)
    win = windows(ops)
    out = dict.fromkeys(KINDS, 0.0)
    for k in gpu:
        out[kind_of(k, win)] += k["dur"] * 1e-6
    return out


MODEL_KIND = {"core.scores": "core_gemm", "core.context": "core_gemm", "core.softmax": "softmax_chain",
              "expert_fc1": "expert_gemm", "expert_gate": "expert_gemm", "expert_up": "expert_gemm", "expert_down": "expert_gemm",
              "swiglu": "expert_other", "permute": "expert_other", "qkv": "dense_gemm", "attn_out": "dense_gemm",
              "lm_head": "dense_gemm", "router": "router", "router_topk": "router", "cross_entropy": "loss_embed", "embedding": "loss_embed"}


def model_kinds(doc: dict, fw=None) -> dict[str, float]:
    """{kind: the model's seconds} for a run document's configuration: its layer ops x layers and the vocabulary ops
    (ep: the exposed dispatch / combine the model prices, under nccl)."""
    from simcluster.hardware.gpu import load_gpu
    from simcluster.heldout.moe_lab import GPU_CARDS, device_gpu, lab_spec, step_s
    from simcluster.llm import compiled, ops, vocab_ops
    from simcluster.llm.framework import MEGATRON_LOCAL

    fw = fw or MEGATRON_LOCAL
    m = {**doc["model"], "ep": doc["parallel"]["ep"]}
    ranks = doc["world_size"]
    model, par, batch = lab_spec(m, ranks)
    card = device_gpu(doc.get("device", ""))
    gpu, _ = load_gpu(ROOT / GPU_CARDS[card])
    out = dict.fromkeys(KINDS, 0.0)
    f, b = compiled.layer_ops(model, par, batch, fw)
    for o in f + b:
        base = o.name.removeprefix("recompute.").split(".")[0]
        base = "core.softmax" if o.name.startswith("core.softmax") else ("core.scores" if o.name.startswith("core.") else base)
        out[MODEL_KIND.get(base, "elementwise")] += ops.op_time_s(gpu, o, "bf16") * model.layers
    for o in (vocab_ops.embedding_forward(model, par, batch, fw) + vocab_ops.embedding_backward(model, par, batch, fw)
              + vocab_ops.head_forward(model, par, batch, fw) + vocab_ops.head_backward(model, par, batch, fw)):
        base = o.name.split(".")[0]
        out[MODEL_KIND.get(base, "elementwise")] += ops.op_time_s(gpu, o, "bf16")
    _, parts = step_s(m, ranks, card, fw)
    out["nccl"] = parts.get("ep", 0.0)
    return out


def chain(path: Path) -> None:
    """The softmax chain's kernels of the first layer, forward and backward, with their time."""
    gpu, ops = load(path)
    win = windows(ops)
    for a, b in win["chain"][:1] + win["chain"][len(win["chain"]) // 2:len(win["chain"]) // 2 + 1]:
        for k in gpu:
            if k["launch"] is not None and a < k["launch"] < b:
                print(f"  {k['dur']:8.1f} us  {k['stack'][-1][:40]:40s} {k['name'][:90]}")
        print()


def gaps(path: Path) -> dict[str, float]:
    """The GPU's idle seconds in the profiled step, each gap put on the kernel that ends it, by pass and kind ('fwd router',
    'bwd elementwise', ...): where the GPU waited for the host or the other rank. The profiler slows the host (framework.MoeHost
    profiled_over_plain: about 1.25), so these are larger than an unprofiled step's."""
    gpu, ops = load(path)
    win = windows(ops)
    out: dict[str, float] = collections.defaultdict(float)
    ks = sorted(gpu, key=lambda k: k["ts"])
    end = ks[0]["ts"] + ks[0]["dur"] if ks else 0.0
    for k in ks[1:]:
        if k["ts"] > end:
            backward = any(EF in s or "backward" in s.lower() for s in k["stack"])
            out[("bwd " if backward else "fwd ") + kind_of(k, win)] += (k["ts"] - end) * 1e-6
        end = max(end, k["ts"] + k["dur"])
    return dict(out)


def one_line_errors(command, argv: list[str]) -> int:
    """`command(argv)`, a SimclusterError (a missing or corrupt trace, its run document) one line on stderr, exit 1."""
    try:
        return command(argv)
    except SimclusterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


def main(argv: list[str]) -> int:
    """The command line; a missing or corrupt trace (or its run document) is one line on stderr naming it, exit 1."""
    check(options=("--chain", "--gaps"), words=None, usage="[--chain | --gaps] TRACE ...", argv=argv)
    return one_line_errors(_main, argv)


def _main(argv: list[str]) -> int:
    if argv[:1] == ["--chain"]:
        for p in argv[1:]:
            print(Path(p).name)
            chain(Path(p))
        return 0
    if argv[:1] == ["--gaps"]:
        for p in argv[1:]:
            idle = gaps(Path(p))
            print(f"{Path(p).name}: GPU idle {sum(idle.values()) * 1e3:.2f} ms (profiled step)")
            for key, v in sorted(idle.items(), key=lambda x: -x[1]):
                print(f"  {key:22s} {v * 1e3:7.2f} ms")
        return 0
    from simcluster.heldout.moe_lab import run_document

    for p in argv:
        path = Path(p)
        name = re.sub(r"^trace-", "", path.name).replace("-rank0", "").replace(".json.gz", "")
        doc_path = next(iter(sorted(path.parent.glob(f"megatron-moe-{name}.json"))), None)
        doc = run_document(doc_path)[0] if doc_path else None
        meas = measured_kinds(path)
        mod = model_kinds(doc) if doc else {}
        print(f"{path.name}: kernels {sum(meas.values()) * 1e3:.2f} ms" + (f", model {sum(mod.values()) * 1e3:.2f} ms" if mod else ""))
        for kind in KINDS:
            line = f"  {kind:14s} measured {meas[kind] * 1e3:7.2f} ms"
            if mod:
                line += f"  model {mod[kind] * 1e3:7.2f} ms  ({mod[kind] / meas[kind] - 1:+.0%})" if meas[kind] else f"  model {mod[kind] * 1e3:7.2f} ms"
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
