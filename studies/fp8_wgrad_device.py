"""Device side (one GPU): the weight-gradient GEMMs of GPT-3 175B at TP 4 writing Megatron's fp32 main_grad, bf16 and fp8.

Session 59 (mlperf59 diagnostic, development only): the model prices every weight gradient's addition into the fp32
main_grad as its own memory-bound pass (ops.grad_accumulate: 10 bytes a weight element a micro-batch at the HBM rate),
measured for bf16 on H100 (torch.addmm with an fp32 C: 1.25-1.40x the bf16-output GEMM). Transformer Engine fuses the
addition into its fp8 weight-gradient GEMM (cuBLASLt, fp32 C read and written); torch has no fp8 GEMM with a C input,
so this measures what brackets it on GPT-3 175B's TP 4 shapes (tokens 4096 and 2048 a micro-batch):
  bf16_out, bf16_fp32_out, bf16_fp32_accumulate (torch.mm / torch.addmm with out_dtype fp32: the fused bf16 case),
  fp8_bf16_out, fp8_fp32_out (torch._scaled_mm, e4m3 x e4m3, per-tensor scales), fp8_fp32_out_then_add (the unfused
  pass the model prices: the fp32 product added into an fp32 main_grad),
and the layer's forward GEMMs in fp8 (the card's fp8 level at these shapes). CUDA events, the median of 10 batches
(runner/gpu_timing.Timer), after 5 s of large GEMMs (runner/gpu_micro.preheat). One JSON document on stdout.
    python studies/fp8_wgrad_device.py [--quick]
Read locally by studies/fp8_wgrad_read.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simcluster.runner.gpu_micro import device_info, preheat  # noqa: E402
from simcluster.runner.gpu_timing import Timer, clocks  # noqa: E402
from simcluster.script_args import ArgumentParser  # noqa: E402

HIDDEN, FFN, TP = 12288, 49152, 4
# (name, K_in, N_out) of each weight at TP 4: fused QKV (column-parallel), attention out (row), MLP up (column), down (row)
WEIGHTS = (("qkv", HIDDEN, 3 * HIDDEN // TP), ("attn_out", HIDDEN // TP, HIDDEN), ("up", HIDDEN, FFN // TP),
           ("down", FFN // TP, HIDDEN))
TOKENS = (4096, 2048)


def measure(torch, dev, timer, m: int, n: int, k: int) -> dict:
    """One weight gradient [m, n] = X^T [m, k] dY [k, n], every case of the module's docstring; a case torch refuses is
    an `_error` entry."""
    one = torch.ones((), device=dev, dtype=torch.float32)
    fp8 = getattr(torch, "float8_e4m3fn", None) if dev.type == "cuda" else None
    a = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
    b = torch.randn(k, n, device=dev, dtype=torch.bfloat16)
    c = torch.zeros(m, n, device=dev, dtype=torch.float32)
    rec = {"m": m, "n": n, "k": k}
    cases = {"bf16_out": lambda: torch.mm(a, b)}
    try:
        torch.mm(a, b, out_dtype=torch.float32)
        cases["bf16_fp32_out"] = lambda: torch.mm(a, b, out_dtype=torch.float32)
        cases["bf16_fp32_accumulate"] = lambda: torch.addmm(c, a, b, out_dtype=torch.float32)
    except (TypeError, RuntimeError) as e:
        rec["bf16_fp32_error"] = str(e)[:200]
    if fp8 is not None:
        a8 = a.to(fp8)
        b8 = b.t().contiguous().to(fp8).t()   # column-major, as _scaled_mm wants its second operand
        fa = torch.randn(k, m, device=dev, dtype=torch.bfloat16).to(fp8)   # the forward GEMM Y[tokens, N] = X[tokens, K] W[K, N]
        fb = torch.randn(n, m, device=dev, dtype=torch.bfloat16).to(fp8).t()
        cases["fp8_bf16_out"] = lambda: torch._scaled_mm(a8, b8, one, one, out_dtype=torch.bfloat16)
        cases["fp8_fp32_out"] = lambda: torch._scaled_mm(a8, b8, one, one, out_dtype=torch.float32)
        cases["fp8_fp32_out_then_add"] = lambda: c.add_(torch._scaled_mm(a8, b8, one, one, out_dtype=torch.float32))
        cases["fp8_forward_bf16_out"] = lambda: torch._scaled_mm(fa, fb, one, one, out_dtype=torch.bfloat16)
    for label, fn in cases.items():
        try:
            rec[label + "_s"] = timer(fn)["time_s"]
        except RuntimeError as e:
            rec[label + "_error"] = str(e)[:200]
    return rec


def run(torch, dev, timer, quick: bool) -> list[dict]:
    scale = 16 if quick else 1
    out = []
    for tokens in TOKENS:
        for name, k_in, n_out in WEIGHTS:
            rec = {"weight": name, "tokens": tokens // scale}
            rec.update(measure(torch, dev, timer, k_in // scale, n_out // scale, tokens // scale))
            out.append(rec)
    return out


def main() -> None:
    ap = ArgumentParser(prog="fp8_wgrad_device.py", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="shapes / 16 (a logic check; runs on a CPU)")
    args = ap.parse_args()
    import torch

    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    doc = {"tool": "fp8-wgrad", "device": device_info(torch, dev), "torch": torch.__version__, "cuda": torch.version.cuda,
           "quick": args.quick, "clocks_before": clocks()}
    doc["preheat_s"] = round(preheat(torch, dev, 0.0 if args.quick or dev.type != "cuda" else 5.0), 2)
    doc["gemms"] = run(torch, dev, Timer(torch, dev, 3, 10, 1e-3), args.quick)
    doc["clocks_after"] = clocks()
    json.dump(doc, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
