"""Device side (one GPU): one GPT-3 175B TP 4 layer, forward and backward, as the step model prices it, timed op by op
back to back and as one sequence in the model's order, with the SM clock during each (issue 44, session 60, fp8layer60:
development only, a diagnostic of the GPT-3 fp8 rows' level; nothing is fitted on it).

The op list (--ops, written locally by `python studies/fp8_layer_read.py --ops FILE` from ops.layer_forward /
layer_backward of the MLPerf 512-GPU layout: micro-batch 2 x 2,048 tokens, fp8, sequence parallel) is reproduced with
plain torch kernels: an fp8 GEMM as torch._scaled_mm (e4m3 x e4m3, per-tensor scales, bf16 out; Transformer Engine
feeds e5m2 gradients), a bf16 GEMM as torch.mm, a memory-bound op of B bytes as `count` bf16 copies of B / 4 elements
(B / 2 read, B / 2 written), attention as scaled_dot_product_attention (bf16, causal; the backward slot runs forward
and backward through autograd: the reader subtracts the forward). CUDA events, the median of 10 batches
(runner/gpu_timing.Timer), after 5 s of large GEMMs (runner/gpu_micro.preheat); the SM clock and power from nvidia-smi
every 0.1 s (runner/gpu_timing.ClockSampler) over 3 s of the sequence and 3 s of the largest GEMM back to back.
One JSON document on stdout.
    python studies/fp8_layer_device.py --ops OPS.json [--quick]
Read locally by studies/fp8_layer_read.py.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simcluster.runner.gpu_micro import device_info, preheat  # noqa: E402
from simcluster.runner.gpu_timing import ClockSampler, Timer, clocks  # noqa: E402
from simcluster.script_args import ArgumentParser  # noqa: E402

CLOCK_WINDOW_S = 3.0


def kernel(torch, dev, op: dict, scale: int):
    """A callable running the op once (its `count` kernels), built from the op's record."""
    kind, count = op["kind"], max(1, round(op["count"]))
    if kind == "gemm":
        m, n, k = (max(16, x // scale // 16 * 16) for x in (op["m"], op["n"], op["k"]))
        a = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
        b = torch.randn(k, n, device=dev, dtype=torch.bfloat16)
        fp8 = getattr(torch, "float8_e4m3fn", None)
        if op["dtype"] == "fp8" and fp8 is not None and dev.type == "cuda":
            one = torch.ones((), device=dev, dtype=torch.float32)
            a8, b8 = a.to(fp8), b.t().contiguous().to(fp8).t()
            return lambda: [torch._scaled_mm(a8, b8, one, one, out_dtype=torch.bfloat16) for _ in range(count)]
        return lambda: [torch.mm(a, b) for _ in range(count)]
    if kind == "attention":
        b, h, g, sq, skv, d = (int(x) for x in op["shape"][:6])
        sq, skv = max(16, sq // scale), max(16, skv // scale)
        q = torch.randn(b, h, sq, d, device=dev, dtype=torch.bfloat16, requires_grad=op["backward"])
        kv = [torch.randn(b, g, skv, d, device=dev, dtype=torch.bfloat16, requires_grad=op["backward"]) for _ in range(2)]
        sdpa = torch.nn.functional.scaled_dot_product_attention
        gqa = {"enable_gqa": True} if g != h else {}
        if not op["backward"]:
            return lambda: [sdpa(q, *kv, is_causal=True, **gqa) for _ in range(count)]
        grad = torch.randn(b, h, sq, d, device=dev, dtype=torch.bfloat16)
        return lambda: [sdpa(q, *kv, is_causal=True, **gqa).backward(grad) for _ in range(count)]
    elements = max(1, int(op["bytes"] // 4 // scale))
    src, dst = torch.randn(elements, device=dev, dtype=torch.bfloat16), torch.empty(elements, device=dev, dtype=torch.bfloat16)
    return lambda: [dst.copy_(src) for _ in range(count)]


def clocked(torch, dev, fn, seconds: float) -> dict:
    """The SM clock and power while `fn` runs back to back for `seconds` (empty off a GPU)."""
    if dev.type != "cuda":
        return {}
    sampler = ClockSampler().start()
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        fn()
        torch.cuda.synchronize(dev)
    t1 = time.perf_counter()
    sampler.stop()
    return sampler.window(t0 + 0.5, t1)


def run(torch, dev, ops: list[dict], quick: bool) -> dict:
    scale = 16 if quick else 1
    timer = Timer(torch, dev, 3, 10, 1e-3)
    fns = [kernel(torch, dev, op, scale) for op in ops]
    records = [{**op, "measured_s": timer(fn)["time_s"]} for op, fn in zip(ops, fns, strict=True)]

    def layer():
        for fn in fns:
            fn()

    seconds = 0.2 if quick or dev.type != "cuda" else CLOCK_WINDOW_S
    largest = max(range(len(ops)), key=lambda i: records[i]["measured_s"] if ops[i]["kind"] == "gemm" else 0.0)
    return {"ops": records, "sequence_s": timer(layer)["time_s"], "sequence_clock": clocked(torch, dev, layer, seconds),
            "largest_gemm": ops[largest]["name"], "largest_gemm_clock": clocked(torch, dev, fns[largest], seconds)}


def main() -> None:
    ap = ArgumentParser(prog="fp8_layer_device.py", description=__doc__.splitlines()[0])
    ap.add_argument("--ops", required=True, help="the op list (studies/fp8_layer_read.py --ops)")
    ap.add_argument("--quick", action="store_true", help="shapes / 16 (a logic check; runs on a CPU)")
    args = ap.parse_args()
    ops = json.loads(Path(args.ops).read_text())["ops"]
    import torch

    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    doc = {"tool": "fp8-layer", "device": device_info(torch, dev), "torch": torch.__version__, "cuda": torch.version.cuda,
           "quick": args.quick, "clocks_before": clocks()}
    doc["preheat_s"] = round(preheat(torch, dev, 0.0 if args.quick or dev.type != "cuda" else 5.0), 2)
    doc.update(run(torch, dev, ops, args.quick))
    doc["clocks_after"] = clocks()
    json.dump(doc, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
