"""GPU micro-benchmarks for the GPU card: one JSON document on stdout.

    python -m simcluster.runner.gpu_micro              # the full sweep (a GPU; the fp8-layers section alone 81-82 s on H100 / H200)
    python -m simcluster.runner.gpu_micro --quick      # small sizes, also on a CPU (checks the logic)

After `--preheat` seconds of large GEMMs (steady clocks and power), sections, each timed with CUDA
events (on a CPU: perf_counter), `--warmup` calls, then `--repeats` timed batches of `inner` back-to-back
calls (inner chosen so a batch lasts >= `--min-batch` seconds);
a sample is batch time / inner, the record's time is the median sample:

  fp8-layers fp8 torch._scaled_mm of Megatron / Transformer Engine layer GEMMs (fp8_layer_shapes): M = tokens
             2048..16384, the fused QKV, out, fused MLP up+gate (N = 2 ffn) and down projections of FP8_LAYERS, each in
             its forward (M, N, K), data-gradient (M, K, N) and weight-gradient (N, K, M) orientation; both conditions
  gemm       bf16 torch.matmul: square 256..16384, and the shapes of a transformer layer: M = tokens
             512..16384 against (N, K) = (h, h), (ffn, h), (h, ffn) for h 1024..8192, and the weight
             gradients (h, ffn, tokens); fp8 (e4m3, torch._scaled_mm, bf16 out) where the GPU has it; tf32.
             Each shape twice: `condition: back-to-back` (the batch above), and `condition: interleaved`,
             every call preceded by bf16 copies of about the GEMM's own duration and timed alone by its
             own pair of events, as a training step runs GEMMs between memory-bound kernels (back to back
             an H100 GEMM sits at the 700 W cap at 1350-1425 MHz; interleaved it runs at 1800-1875 MHz).
             On a GPU each record carries the median SM clock and power nvidia-smi reported meanwhile (a
             sampling thread that runs during the GEMM sections only)
  gemm-shapes the GEMMs named by --gemm-shapes M:N:K[:ROLE],... in bf16 and fp8, both conditions; records in `gemm`
             (role 'custom' or ROLE). Not in the default sections
  attention  torch.nn.functional.scaled_dot_product_attention, causal, bf16: forward, and forward +
             backward (torch.autograd.grad), seq 512..8192, head_dim 64 / 128, MHA and GQA
  attention-backends  causal SDPA per backend (flash, cudnn, efficient, default), 1K-128K tokens, forward and
             forward + backward, time and peak memory (runner/gpu_micro_attention.py; records in `attention_backends`).
             Not in the default sections
  memory     bf16 copy, add (a + b), scale (2 * a) by bytes moved (read + written), 256 KiB .. 4 GiB;
             rms_norm (one F.rms_norm call, kernels not counted) for reference only
  launch     a one-element in-place add, thousands back to back: the per-kernel issue cost
  duty       SM clock and board power against the GEMM share of the GPU's time (copies or idle between GEMMs),
             and idle power: the power-limited clock's data (runner/gpu_duty.py)

A section that fails is an entry in `errors`, the others still run. Studies add sections of their own (`main(argv,
extra_sections)`: studies/moe_gemms_device.py's MoE sections). torch is imported in main only. The timer,
clock sampler and interleaving are runner/gpu_timing.py.
"""

from __future__ import annotations

import json
import platform
import statistics
import sys
import time
import traceback

from simcluster.runner.gpu_duty import run_duty
from simcluster.runner.gpu_micro_attention import run_attention_backends
from simcluster.runner.gpu_timing import HOST_ISSUE_CYCLES, SETTLE_S, ClockSampler, Interleaver, Timer, both_conditions, clocks
from simcluster.script_args import ArgumentParser

HIDDEN_FFN = ((1024, 2816), (2048, 5632), (4096, 14336), (8192, 28672))
TOKENS = (512, 2048, 8192, 16384)
SQUARE = (256, 512, 1024, 2048, 4096, 8192, 16384)
FP8_SQUARE = (1024, 2048, 4096, 8192, 16384)
# fp8 transformer layers (hidden, ffn, fused QKV width): Llama 3.2 1B, Llama 3 8B, 70B, 405B (GQA, 8 kv heads of 64 / 128)
FP8_LAYERS = ((2048, 8192, 3072), (4096, 14336, 6144), (8192, 28672, 10240), (16384, 53248, 18432))
FP8_TOKENS = (2048, 4096, 8192, 16384)
TF32_SQUARE = (2048, 4096, 8192)
SEQS = (512, 1024, 2048, 4096, 8192)
HEADS = ((32, 8, 128), (32, 32, 128), (16, 4, 64), (16, 16, 64))   # (heads, kv_heads, head_dim)
ATTN_TOKENS = 16384                                                   # batch * seq per attention call
MEMORY_BYTES = tuple(2**p for p in range(18, 33))                    # 256 KiB .. 4 GiB per tensor
QUICK = {"square": (64, 128), "fp8": (), "tf32": (64,), "hidden": ((64, 176),), "tokens": (32, 64), "seqs": (64, 128),
         "heads": ((4, 2, 16),), "attn_tokens": 256, "memory": (2**12, 2**16)}


def gemm_shapes(quick: bool) -> list[tuple[int, int, int, str]]:
    """(m, n, k, role) of the bf16 sweep: squares, then each layer's forward and weight-gradient GEMMs."""
    square = QUICK["square"] if quick else SQUARE
    shapes = [(s, s, s, "square") for s in square]
    for h, f in (QUICK["hidden"] if quick else HIDDEN_FFN):
        for t in (QUICK["tokens"] if quick else TOKENS):
            shapes += [(t, h, h, "proj"), (t, f, h, "mlp_up"), (t, h, f, "mlp_down"), (h, f, t, "wgrad")]
    return shapes


def run_gemm(torch, dev, timer, quick: bool, clock, interleaver) -> list[dict]:
    """bf16 shapes, then tf32 squares; operands are made per shape when it runs (the largest take 1.3 GB)."""
    def matmul(m, n, k, dtype):
        def make():
            a, b = torch.randn(m, k, device=dev, dtype=dtype), torch.randn(k, n, device=dev, dtype=dtype)
            return lambda: torch.matmul(a, b)
        return make

    records = [({"m": m, "n": n, "k": k, "batch": 1, "dtype": "bf16", "role": role}, matmul(m, n, k, torch.bfloat16))
               for m, n, k, role in gemm_shapes(quick)]
    out = both_conditions(timer, clock, interleaver, records)
    torch.backends.cuda.matmul.allow_tf32 = True
    records = [({"m": s, "n": s, "k": s, "batch": 1, "dtype": "fp32", "role": "square-tf32"}, matmul(s, s, s, torch.float32))
               for s in (QUICK["tf32"] if quick else TF32_SQUARE)]
    out += both_conditions(timer, clock, interleaver, records)
    torch.backends.cuda.matmul.allow_tf32 = False
    return out


def fp8_layer_shapes(layers=FP8_LAYERS, tokens=FP8_TOKENS) -> list[dict]:
    """One record per GEMM a transformer layer runs in fp8: the fused QKV (N = qkv, K = h), attention out (h, h), fused MLP
    up+gate (2 ffn, h) and down (h, ffn) projections, each forward (M = tokens, N, K), data gradient (tokens, K, N) and
    weight gradient (N, K, tokens)."""
    out = []
    for h, ffn, qkv in layers:
        for gemm, n, k in (("qkv", qkv, h), ("out", h, h), ("up", 2 * ffn, h), ("down", h, ffn)):
            for t in tokens:
                for role, shape in (("fwd", (t, n, k)), ("dgrad", (t, k, n)), ("wgrad", (n, k, t))):
                    out.append({"m": shape[0], "n": shape[1], "k": shape[2], "role": f"layer-{role}-{gemm}", "hidden": h, "tokens": t})
    return out


def run_fp8_layers(torch, dev, timer, quick: bool, clock, interleaver) -> list[dict]:
    shapes = fp8_layer_shapes(((64, 128, 96),), (32, 64)) if quick else fp8_layer_shapes()
    return run_fp8(torch, dev, timer, quick, clock, interleaver, shapes)


def run_fp8(torch, dev, timer, quick: bool, clock, interleaver, shapes: list[dict] | None = None) -> list[dict]:
    """e4m3 x e4m3 -> bf16 with per-tensor scales (torch._scaled_mm: A row-major, B column-major): squares and MLP-up
    shapes, or `shapes` (records with m, n, k, role)."""
    if dev.type != "cuda" or torch.cuda.get_device_capability(dev) < (8, 9) or not hasattr(torch, "_scaled_mm"):
        return []
    one = torch.tensor(1.0, device=dev)
    if shapes is None:
        shapes = [{"m": s, "n": s, "k": s, "role": "square"} for s in FP8_SQUARE]
        shapes += [{"m": t, "n": f, "k": h, "role": "mlp_up"} for h, f in HIDDEN_FFN[1:] for t in (2048, 8192)]

    def scaled_mm(m, n, k):
        def make():
            a = torch.randn(m, k, device=dev).to(torch.float8_e4m3fn)
            b = torch.randn(n, k, device=dev).to(torch.float8_e4m3fn).t()
            return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        return make

    records = [({**shape, "batch": 1, "dtype": "fp8"}, scaled_mm(shape["m"], shape["n"], shape["k"])) for shape in shapes]
    return both_conditions(timer, clock, interleaver, records)


def parse_gemm_shapes(text: str) -> list[dict]:
    """--gemm-shapes 'M:N:K[:ROLE],...' -> records (role 'custom' unless named)."""
    out = []
    for item in filter(None, (x.strip() for x in text.split(","))):
        parts = item.split(":")
        try:
            m, n, k = (int(v) for v in parts[:3])
        except ValueError:
            raise SystemExit(f"--gemm-shapes {item!r}: expected M:N:K or M:N:K:ROLE with positive integers") from None
        if len(parts) not in (3, 4) or min(m, n, k) < 1 or (len(parts) == 4 and not parts[3].strip()):
            raise SystemExit(f"--gemm-shapes {item!r}: expected M:N:K or M:N:K:ROLE with positive integers")
        out.append({"m": m, "n": n, "k": k, "role": parts[3] if len(parts) == 4 else "custom"})
    return out


def run_gemm_shapes(torch, dev, timer, shapes: list[dict], clock, interleaver) -> list[dict]:
    """GEMM records (m, n, k, role, ...) in bf16 and (where the GPU has it) fp8, both conditions: the --gemm-shapes
    section's and moe-experts'."""
    def matmul(m, n, k):
        def make():
            a, b = torch.randn(m, k, device=dev, dtype=torch.bfloat16), torch.randn(k, n, device=dev, dtype=torch.bfloat16)
            return lambda: torch.matmul(a, b)
        return make

    records = [({**shape, "batch": 1, "dtype": "bf16"}, matmul(shape["m"], shape["n"], shape["k"])) for shape in shapes]
    return both_conditions(timer, clock, interleaver, records) + run_fp8(torch, dev, timer, False, clock, interleaver, shapes)


def run_attention(torch, dev, timer, quick: bool) -> list[dict]:
    import torch.nn.functional as F

    out = []
    tokens = QUICK["attn_tokens"] if quick else ATTN_TOKENS
    for heads, kv, d in QUICK["heads"] if quick else HEADS:
        for seq in QUICK["seqs"] if quick else SEQS:
            b = max(1, tokens // seq)
            q = torch.randn(b, heads, seq, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
            k = torch.randn(b, kv, seq, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
            v = torch.randn(b, kv, seq, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
            grad = torch.randn(b, heads, seq, d, device=dev, dtype=torch.bfloat16)
            gqa = {"enable_gqa": True} if kv != heads else {}

            def fwd(q=q, k=k, v=v, gqa=gqa):
                with torch.no_grad():
                    return F.scaled_dot_product_attention(q, k, v, is_causal=True, **gqa)

            def fwd_bwd(q=q, k=k, v=v, gqa=gqa, grad=grad):
                o = F.scaled_dot_product_attention(q, k, v, is_causal=True, **gqa)
                return torch.autograd.grad(o, (q, k, v), grad)

            shape = {"batch": b, "heads": heads, "kv_heads": kv, "seq_q": seq, "seq_kv": seq, "head_dim": d,
                     "causal": True, "dtype": "bf16"}
            out.append({**shape, "mode": "fwd", **timer(fwd)})
            out.append({**shape, "mode": "fwd_bwd", **timer(fwd_bwd)})
            del q, k, v, grad
    return out


def run_memory(torch, dev, timer, quick: bool) -> list[dict]:
    import torch.nn.functional as F

    out = []
    free = torch.cuda.mem_get_info(dev)[0] if dev.type == "cuda" else 2**34
    for nbytes in QUICK["memory"] if quick else MEMORY_BYTES:
        if 4 * nbytes > 0.8 * free:
            break
        n = nbytes // 2
        a, b, c = (torch.randn(n, device=dev, dtype=torch.bfloat16) for _ in range(3))
        ops = (("copy", 2, lambda a=a, c=c: c.copy_(a)), ("add", 3, lambda a=a, b=b, c=c: torch.add(a, b, out=c)),
               ("scale", 2, lambda a=a, c=c: torch.mul(a, 2.0, out=c)))
        for name, passes, fn in ops:
            out.append({"op": name, "dtype": "bf16", "elements": n, "bytes_moved": passes * nbytes, **timer(fn)})
        if hasattr(F, "rms_norm") and nbytes >= 2**20:
            x, w = a.view(-1, 4096 if n % 4096 == 0 else n), torch.ones(4096 if n % 4096 == 0 else n, device=dev, dtype=torch.bfloat16)
            out.append({"op": "rms_norm", "dtype": "bf16", "elements": n, "bytes_moved": 2 * nbytes, "reference_only": True,
                        **timer(lambda x=x, w=w: F.rms_norm(x, (x.shape[-1],), w))})
        del a, b, c
    return out


def run_launch(torch, dev, kernels: int) -> dict:
    """Back-to-back one-element adds: device time per kernel (events) and host time to issue one."""
    x = torch.zeros(1, device=dev)
    for _ in range(100):
        x.add_(1.0)
    samples, host = [], []
    for _ in range(10):
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
        t0 = time.perf_counter()
        for _ in range(kernels):
            x.add_(1.0)
        host.append((time.perf_counter() - t0) / kernels)
        if dev.type == "cuda":
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) / 1e3 / kernels)
        else:
            samples.append(host[-1])
    return {"time_s": statistics.median(samples), "samples_s": samples, "host_issue_s": statistics.median(host), "kernels": kernels}


def preheat(torch, dev, seconds: float) -> float:
    """Large bf16 GEMMs for `seconds` before timing, so the sweep starts at the clocks and power it ends at
    (the first bundles measured one 8192^3 GEMM 13% apart early and late in one sweep). Seconds spent."""
    if dev.type != "cuda" or seconds <= 0:
        return 0.0
    a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(10):
            torch.matmul(a, a)
        torch.cuda.synchronize(dev)
    return time.perf_counter() - t0


def device_info(torch, dev) -> dict:
    if dev.type != "cuda":
        return {"name": platform.processor() or "cpu", "type": "cpu"}
    p = torch.cuda.get_device_properties(dev)
    return {"name": p.name, "type": "cuda", "capability": list(torch.cuda.get_device_capability(dev)),
            "sm_count": p.multi_processor_count, "memory_bytes": p.total_memory,
            "l2_bytes": getattr(p, "L2_cache_size", None)}


def main(argv: list[str] | None = None, extra_sections: tuple = ()) -> int:
    """`extra_sections`: (name, run(torch, dev, timer, quick, clock, interleaver, args), the document key its records go
    to, whether the GPU clock is sampled during it) a study adds; run when --sections names them."""
    ap = ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (logic check; runs on a CPU)")
    ap.add_argument("--repeats", type=int, default=10, help="timed batches per measurement (median taken)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed calls before timing")
    ap.add_argument("--min-batch", type=float, default=1e-3, help="seconds a timed batch lasts at least")
    ap.add_argument("--sections", default="gemm,fp8,fp8-layers,attention,memory,launch,duty", help="comma-separated sections")
    ap.add_argument("--preheat", type=float, default=5.0, help="seconds of large GEMMs before timing (GPU only; 0: none)")
    ap.add_argument("--gemm-shapes", default="", metavar="M:N:K[:ROLE],...",
                    help="section gemm-shapes: these GEMMs, bf16 and fp8, both conditions (records in gemm, role custom or ROLE)")
    args = ap.parse_args(argv)
    custom = parse_gemm_shapes(args.gemm_shapes)
    if ("gemm-shapes" in args.sections.split(",")) != bool(custom):
        raise SystemExit("--gemm-shapes and the gemm-shapes section go together: --sections gemm-shapes --gemm-shapes M:N:K,...")
    import torch

    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    timer = Timer(torch, dev, args.warmup, args.repeats, args.min_batch)
    doc = {"tool": "gpu-micro", "format": 1, "device": device_info(torch, dev), "torch": torch.__version__,
           "cuda": torch.version.cuda, "python": platform.python_version(), "clocks_before": clocks(),
           "method": {"timer": "cuda events" if dev.type == "cuda" else "perf_counter", "repeats": args.repeats,
                      "warmup": args.warmup, "min_batch_s": args.min_batch, "statistic": "median of batch time / inner"},
           "quick": args.quick, "gemm": [], "attention": [], "memory": [], "launch": None, "duty": {}, "errors": []}
    doc["method"]["preheat_s"] = round(preheat(torch, dev, args.preheat), 2)
    doc["clocks_after_preheat"] = clocks() if doc["method"]["preheat_s"] else {}
    wanted = set(args.sections.split(","))
    clock = ClockSampler().start() if dev.type == "cuda" else ClockSampler()
    interleaver = Interleaver(torch, dev, timer, 2**12 if args.quick else 2**27)   # 256 MiB a buffer on a GPU
    doc["method"]["interleaved"] = {"between_calls": "bf16 copies of about the back-to-back call time", "settle_s": SETTLE_S,
                                    "copy_rate_Bps": interleaver.rate_Bps, "buffer_elements": interleaver.src.numel(),
                                    "host_issue_cycles_per_call": HOST_ISSUE_CYCLES}
    sections = (("gemm", lambda: run_gemm(torch, dev, timer, args.quick, clock, interleaver), "gemm", True),
                ("fp8", lambda: run_fp8(torch, dev, timer, args.quick, clock, interleaver), "gemm", True),
                ("fp8-layers", lambda: run_fp8_layers(torch, dev, timer, args.quick, clock, interleaver), "gemm", True),
                ("gemm-shapes", lambda: run_gemm_shapes(torch, dev, timer, custom, clock, interleaver), "gemm", True),
                ("attention", lambda: run_attention(torch, dev, timer, args.quick), "attention", False),
                ("attention-backends", lambda: run_attention_backends(torch, dev, timer, args.quick), "attention_backends",
                 False),
                ("memory", lambda: run_memory(torch, dev, timer, args.quick), "memory", False),
                ("launch", lambda: run_launch(torch, dev, 200 if args.quick else 5000), "launch", False),
                ("duty", lambda: run_duty(torch, dev, timer, interleaver), "duty", False))
    extra = [(name, (lambda run=run: run(torch, dev, timer, args.quick, clock, interleaver, args)), key, clocked)
             for name, run, key, clocked in extra_sections]
    # the clock sampler stops before the first host-bound section: a study's sampled sections run before it
    sections = [s for s in sections if s[3]] + [s for s in extra if s[3]] + [s for s in extra if not s[3]] + \
        [s for s in sections if not s[3]]
    for name, fn, key, clocked in sections:
        if name not in wanted:
            continue
        if not clocked:
            clock.stop()   # nvidia-smi's processes take host time: the host-bound sections run without them
        t0 = time.perf_counter()
        try:
            result = fn()
        except Exception as exc:  # noqa: BLE001 - a failing section is recorded, the others still run
            doc["errors"].append({"section": name, "error": f"{type(exc).__name__}: {exc}",
                                  "traceback": traceback.format_exc(limit=3)})
            result = None
        if isinstance(doc.get(key), list):
            doc[key] += result or []
        elif result is not None or key not in doc:
            doc[key] = result if result is not None else []
        print(f"gpu-micro: {name} {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
        if dev.type == "cuda":
            torch.cuda.empty_cache()
    clock.stop()
    doc["clocks_after"] = clocks()
    json.dump(doc, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
