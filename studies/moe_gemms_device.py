"""gpu-micro with three MoE sections of its own (a study: not part of the runner `simcluster collect` uses), one JSON
document on stdout in gpu-micro's format, parsed by simcluster.traces.gpu_micro:

    python studies/moe_gemms_device.py --sections moe-experts      # also moe-grouped, moe-permute; --quick on a CPU

  moe-experts the expert GEMMs of MoE layers as a grouped linear layer runs them, one GEMM per local expert (moe_expert_shapes:
             M = tokens an expert receives under balanced routing, fused up+gate (N = 2 f) and down (h, f), each forward,
             data gradient and weight gradient), bf16 and fp8; both conditions; records in `gemm`
  moe-grouped each expert GEMM group of moe-experts as a whole (the `experts` local experts' GEMMs of one layer pass): a loop
             on one stream, the same spread over GROUP_STREAMS streams (as Transformer Engine's grouped linear layer
             issues its cuBLAS GEMMs), and torch._grouped_mm (bf16) where torch has it; back to back; records in
             `moe_grouped`, time per group
  moe-rows    (session 48) the published MoE rows' own expert GEMM groups (simcluster/runner/moe_grid.GRID), as
             moe-grouped times them; records in `moe_grouped`, read by heldout/moegemm.table_of
  moe-permute the token permutations of Megatron's alltoall dispatcher for each MOE_EXPERTS layer, N = tokens per expert x
             local experts rows of `hidden` bf16 (T = N / top_k tokens): permute (gather N rows of the T tokens), the
             chunk sort by local expert after the alltoall (gather N rows, block permutation of ep x experts chunks),
             its inverse before the combine, unpermute (index_add of N rows into T); forward alone and forward +
             backward (autograd: a gather's backward is a scatter and the reverse), one bf16 copy of N rows for
             reference, and alone: one gather of N rows, one index_add of N rows into T, and the same combine
             without atomic adds (gather into token order, sum the top_k rows); records in `moe_permute`. The
             routing is balanced, the expert GEMMs left out

Measured: calibration/h100x1-moe-experts-, h100x1-moe-grouped-, h100x1-moe-permute-2026-11-27 (then as sections of
simcluster/runner/gpu_micro.py); compared by studies/moe_expert_gemms.py and studies/moe_permute.py. torch is passed
in, never imported here."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simcluster.runner import gpu_micro  # noqa: E402

# MoE layers of the published H100 rows (hidden, expert ffn, tokens per expert = EP ranks x tokens per rank x top_k / experts):
# Qwen3 30B-A3B at EP 8 and 16, Qwen3 235B-A22B (EP 32, TP 2 + SP, expert TP 1), GPT-OSS 120B (EP 8), DeepSeek-V3 (EP 64 at TP 2
# + SP and at TP 1)
MOE_EXPERTS = (("qwen3-30b-ep8", 2048, 768, 2048), ("qwen3-30b-ep16", 2048, 768, 4096), ("qwen3-235b-ep32", 4096, 1536, 4096),
               ("gpt-oss-120b-ep8", 2880, 2880, 1024), ("deepseek-v3-ep64-tp2", 7168, 2048, 4096), ("deepseek-v3-ep64", 7168, 2048, 8192))
# local experts per GPU of each MOE_EXPERTS layer (experts / ep): Qwen3 30B 128 / 8 and / 16, 235B 128 / 32, GPT-OSS 128 / 8,
# DeepSeek-V3 256 / 64
MOE_LOCAL_EXPERTS = {"qwen3-30b-ep8": 16, "qwen3-30b-ep16": 8, "qwen3-235b-ep32": 4, "gpt-oss-120b-ep8": 16,
                     "deepseek-v3-ep64-tp2": 4, "deepseek-v3-ep64": 4}
# top-k of each MOE_EXPERTS layer's model, and its EP ranks (the chunk count of the dispatcher's sort is ep x local experts)
MOE_TOP_K = {"qwen3-30b-ep8": 8, "qwen3-30b-ep16": 8, "qwen3-235b-ep32": 8, "gpt-oss-120b-ep8": 4, "deepseek-v3-ep64-tp2": 8,
             "deepseek-v3-ep64": 8}
MOE_EP = {"qwen3-30b-ep8": 8, "qwen3-30b-ep16": 16, "qwen3-235b-ep32": 32, "gpt-oss-120b-ep8": 8, "deepseek-v3-ep64-tp2": 64,
          "deepseek-v3-ep64": 64}
GROUP_STREAMS = 4


def moe_expert_shapes(layers=MOE_EXPERTS) -> list[dict]:
    """One record per expert GEMM of each MoE layer: fused up+gate (N = 2 f, K = h) and down (N = h, K = f), forward
    (M = tokens per expert), data gradient (M, K, N) and weight gradient (N, K, M)."""
    out = []
    for name, h, f, t in layers:
        for gemm, n, k in (("up", 2 * f, h), ("down", h, f)):
            for role, shape in (("fwd", (t, n, k)), ("dgrad", (t, k, n)), ("wgrad", (n, k, t))):
                out.append({"m": shape[0], "n": shape[1], "k": shape[2], "role": f"moe-{role}-{gemm}", "moe": name, "hidden": h,
                            "tokens": t})
    return out


def _group_modes(torch, dev, m: int, n: int, k: int, experts: int, dtype: str, streams: list) -> list[tuple[str, object]]:
    """(mode, call) for one group of `experts` GEMMs of (m, n, k): the calls hold their operands."""
    if dtype == "bf16":
        a = [torch.randn(m, k, device=dev, dtype=torch.bfloat16) for _ in range(experts)]
        b = [torch.randn(k, n, device=dev, dtype=torch.bfloat16) for _ in range(experts)]
        gemm = torch.matmul
    else:
        one = torch.tensor(1.0, device=dev)
        a = [torch.randn(m, k, device=dev).to(torch.float8_e4m3fn) for _ in range(experts)]
        b = [torch.randn(n, k, device=dev).to(torch.float8_e4m3fn).t() for _ in range(experts)]

        def gemm(x, y):
            return torch._scaled_mm(x, y, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

    def loop():
        for x, y in zip(a, b, strict=True):
            gemm(x, y)

    def spread():
        main = torch.cuda.current_stream(dev)
        for st in streams:
            st.wait_stream(main)
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            with torch.cuda.stream(streams[i % len(streams)]):
                gemm(x, y)
        for st in streams:
            main.wait_stream(st)

    modes = [("loop", loop)] + ([("streams", spread)] if streams else [])
    if dtype == "bf16" and streams and hasattr(torch, "_grouped_mm"):
        a_cat, b_stack = torch.cat(a), torch.stack(b)
        offs = torch.arange(m, m * experts + 1, m, device=dev, dtype=torch.int32)
        modes.append(("grouped_mm", lambda: torch._grouped_mm(a_cat, b_stack, offs=offs)))
    return modes


def run_moe_grouped(torch, dev, timer, quick: bool) -> list[dict]:
    """Each moe-experts shape as the group of `experts` GEMMs one layer pass runs (module docstring); time per group."""
    layers = (("tiny", 64, 32, 48),) if quick else MOE_EXPERTS
    experts = {"tiny": 3} if quick else MOE_LOCAL_EXPERTS
    cuda = dev.type == "cuda"
    streams = [torch.cuda.Stream(dev) for _ in range(GROUP_STREAMS)] if cuda else []
    dtypes = ("bf16", "fp8") if cuda and torch.cuda.get_device_capability(dev) >= (8, 9) else ("bf16",)
    out = []
    for shape in moe_expert_shapes(layers):
        e = experts[shape["moe"]]
        for dtype in dtypes:
            for mode, fn in _group_modes(torch, dev, shape["m"], shape["n"], shape["k"], e, dtype, streams):
                head = {**shape, "experts": e, "dtype": dtype, "mode": mode}
                try:
                    out.append({**head, **timer(fn)})
                except Exception as exc:  # noqa: BLE001 - a mode this torch lacks is recorded, the others still run
                    out.append({**head, "error": f"{type(exc).__name__}: {exc}"})
            if cuda:
                torch.cuda.empty_cache()
    return out


def _permutations(torch, dev, rows: int, top_k: int, chunks: int, gen):
    """Row maps of one balanced dispatch: each token's top_k copies sorted by expert (token id per dispatched row), a
    block permutation of `chunks` equal chunks (the sort by local expert) and its inverse."""
    tokens = rows // top_k
    src = (torch.randperm(rows, generator=gen) % tokens).to(dev)
    size = rows // chunks
    order = torch.randperm(chunks, generator=gen)
    block = (order[:, None] * size + torch.arange(size)[None, :]).reshape(-1)
    block = torch.cat([block, torch.arange(chunks * size, rows)]).to(dev)
    return src, block, torch.argsort(block)


def run_moe_permute(torch, dev, timer, quick: bool) -> list[dict]:
    """The alltoall dispatcher's four permutations per MoE layer pass (module docstring), forward and forward + backward."""
    layers = (("tiny", 64, 32, 48),) if quick else MOE_EXPERTS
    experts = {"tiny": 3} if quick else MOE_LOCAL_EXPERTS
    top_k, ep = ({"tiny": 2}, {"tiny": 2}) if quick else (MOE_TOP_K, MOE_EP)
    gen = torch.Generator().manual_seed(0)
    out = []
    for name, h, _f, t in layers:
        rows = t * experts[name]
        tokens = rows // top_k[name]
        src, block, unblock = _permutations(torch, dev, rows, top_k[name], ep[name] * experts[name], gen)
        x = torch.randn(tokens, h, device=dev, dtype=torch.bfloat16, requires_grad=True)

        def forward(x=x, src=src, block=block, unblock=unblock, tokens=tokens, h=h):
            p = x.index_select(0, src)            # permute: the dispatched copies, grouped by expert
            q = p.index_select(0, block)          # sort the received chunks by local expert
            r = q.index_select(0, unblock)        # and back, before the combine
            return torch.zeros(tokens, h, device=x.device, dtype=x.dtype).index_add(0, src, r)   # unpermute

        def fwd():
            with torch.no_grad():
                forward()

        grad = torch.randn(tokens, h, device=dev, dtype=torch.bfloat16)

        def fwd_bwd(x=x, grad=grad):
            torch.autograd.grad(forward(), x, grad)

        copy_src = torch.randn(rows, h, device=dev, dtype=torch.bfloat16)
        copy_dst = torch.empty_like(copy_src)
        by_token = torch.argsort(src)     # the dispatched rows in token order: k rows per token, side by side
        kk = top_k[name]

        def gather(a=copy_src, idx=block):            # one permutation alone: a gather of the rows
            return a.index_select(0, idx)

        def scatter(a=copy_src, idx=src, tokens=tokens, h=h):   # one unpermute alone as an index_add (atomic adds)
            return torch.zeros(tokens, h, device=a.device, dtype=a.dtype).index_add(0, idx, a)

        def gather_sum(a=copy_src, idx=by_token, tokens=tokens, h=h, kk=kk):   # the same without atomics: gather, sum k
            return a.index_select(0, idx)[: tokens * kk].view(tokens, kk, h).sum(1)

        head = {"moe": name, "hidden": h, "rows": rows, "tokens": tokens, "top_k": top_k[name], "experts": experts[name],
                "chunks": ep[name] * experts[name], "dtype": "bf16", "row_bytes": 2 * h}
        for mode, fn in (("fwd", fwd), ("fwd_bwd", fwd_bwd), ("copy", lambda a=copy_src, b=copy_dst: b.copy_(a)),
                         ("gather", gather), ("index_add", scatter), ("gather_sum", gather_sum)):
            out.append({**head, "mode": mode, **timer(fn)})
        del x, grad, copy_src, copy_dst
        if dev.type == "cuda":
            torch.cuda.empty_cache()
    return out


def run_moe_rows(torch, dev, timer, quick: bool) -> list[dict]:
    """Section moe-rows (session 48, moegemm): every group of simcluster/runner/moe_grid.GRID (the published MoE rows'
    own expert GEMM shapes) in each mode _group_modes has; time per group, records in `moe_grouped`. fp8 groups only on
    a GPU with fp8 (capability >= 8.9); --quick: one tiny layer, bf16."""
    from simcluster.runner.moe_grid import grid_gemms

    cuda = dev.type == "cuda"
    streams = [torch.cuda.Stream(dev) for _ in range(GROUP_STREAMS)] if cuda else []
    fp8 = cuda and torch.cuda.get_device_capability(dev) >= (8, 9) and hasattr(torch, "_scaled_mm")
    shapes = grid_gemms((("tiny", 48, 32, 64, 3, "bf16"),)) if quick else grid_gemms()
    out = []
    for shape in shapes:
        if shape["dtype"] == "fp8" and not fp8:
            continue
        for mode, fn in _group_modes(torch, dev, shape["m"], shape["n"], shape["k"], shape["experts"], shape["dtype"], streams):
            try:
                out.append({**shape, "mode": mode, **timer(fn)})
            except Exception as exc:  # noqa: BLE001 - a mode this torch lacks is recorded, the others still run
                out.append({**shape, "mode": mode, "error": f"{type(exc).__name__}: {exc}"})
        if cuda:
            torch.cuda.empty_cache()
    return out


def run_moe_experts(torch, dev, timer, quick: bool, clock, interleaver, args=None) -> list[dict]:
    shapes = moe_expert_shapes((("tiny", 64, 32, 48),)) if quick else moe_expert_shapes()
    return gpu_micro.run_gemm_shapes(torch, dev, timer, shapes, clock, interleaver)


SECTIONS = (("moe-experts", run_moe_experts, "gemm", True),
            ("moe-grouped", lambda torch, dev, timer, quick, clock, interleaver, args: run_moe_grouped(torch, dev, timer, quick),
             "moe_grouped", False),
            ("moe-permute", lambda torch, dev, timer, quick, clock, interleaver, args: run_moe_permute(torch, dev, timer, quick),
             "moe_permute", False),
            ("moe-rows", lambda torch, dev, timer, quick, clock, interleaver, args: run_moe_rows(torch, dev, timer, quick),
             "moe_grouped", False))


if __name__ == "__main__":
    sys.exit(gpu_micro.main(extra_sections=SECTIONS))
