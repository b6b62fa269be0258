"""Issue 44 (session 35, engineer gemm): why the eager step's GEMMs run 8-15% faster than the H200 card (device study,
registered in calibration/h200x1-eager-gemms-2026-11-29/README.md before any run; not a test).

The card's GEMM curve is fitted on gpu-micro's `torch.matmul(a, b)` of randn operands (row-major a (m, k), b (k, n):
cuBLAS's NN), interleaved with copies. The eager step calls F.linear (x W^T: TN) forward, mm(g, W) for the data gradient
and mm(g^T, x) for the weight gradient, on trained-scale data. At the same shape (2048 x 5632 x 2048) and clock (1920 MHz)
gpu-micro read 72.2 us and the step 60 us. Each shape here is timed interleaved (runner/gpu_timing.py, as gpu-micro) in
three variants: `nn` (gpu-micro's call), `step` (the step's call and layout, randn operands) and `step-data` (the step's
call, operands at the runner's scales: x unit RMS, W uniform +-1/sqrt(in) as nn.Linear, g randn x 1e-3), with the SM
clock nvidia-smi reported and the kernel name torch.profiler saw (one extra call).

    python studies/eager_gemm_device.py OUT.json          # on the device (torch only)
    python studies/eager_gemm_device.py --read OUT.json   # here: measured against the card and the registration
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# (preset label, tokens, linear, out, in): the eager5 shapes' linears (studies/eager_gemm_kernels.py); 1.1b 1024:2 is
# gpu-micro's h 2048 / ffn 5632 / M 2048 row; k is each preset's small-output (kv) projection
SHAPES = [("1.1b", 2048, "q", 2048, 2048), ("1.1b", 2048, "gate", 5632, 2048), ("1.1b", 2048, "down", 2048, 5632),
          ("1.1b", 2048, "k", 256, 2048), ("0.5b", 16384, "gate", 4096, 1536), ("0.5b", 16384, "q", 1536, 1536),
          ("0.5b", 16384, "k", 512, 1536), ("2b", 8192, "gate", 6912, 2560), ("2b", 8192, "down", 2560, 6912),
          ("2b", 8192, "k", 512, 2560)]
PASSES = ("fwd", "dgrad", "wgrad")
VARIANTS = ("nn", "step", "step-data")


def mnk(tokens: int, out: int, inp: int, ps: str) -> tuple[int, int, int]:
    return {"fwd": (tokens, out, inp), "dgrad": (tokens, inp, out), "wgrad": (out, inp, tokens)}[ps]


def make(torch, dev, tokens, out, inp, ps, variant):
    bf = torch.bfloat16
    if variant == "nn":
        m, n, k = mnk(tokens, out, inp, ps)
        a, b = torch.randn(m, k, device=dev, dtype=bf), torch.randn(k, n, device=dev, dtype=bf)
        return lambda: torch.matmul(a, b)
    scaled = variant == "step-data"
    x = torch.randn(tokens, inp, device=dev, dtype=bf)
    w = (torch.rand(out, inp, device=dev) * 2 - 1).mul(1 / math.sqrt(inp)).to(bf) if scaled else torch.randn(out, inp, device=dev, dtype=bf)
    g = torch.randn(tokens, out, device=dev, dtype=bf) * (1e-3 if scaled else 1.0)
    f = torch.nn.functional.linear
    return {"fwd": lambda: f(x, w), "dgrad": lambda: torch.mm(g, w), "wgrad": lambda: torch.mm(g.t(), x)}[ps]


def kernel_name(torch, fn) -> str:
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    return " + ".join(names)


def run(path: str) -> int:
    import torch

    from simcluster.runner.gpu_timing import SETTLE_S, ClockSampler, Interleaver, Timer, clocks
    dev = torch.device("cuda")
    timer = Timer(torch, dev, 3, 10, 1e-3)
    clock = ClockSampler().start()
    big = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 5.0:       # preheat, as gpu-micro --preheat
        torch.matmul(big, big)
    torch.cuda.synchronize()
    del big
    inter = Interleaver(torch, dev, timer, 2**27)
    doc = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
           "clocks_before": clocks(), "records": []}
    for preset, tokens, lin, out, inp in SHAPES:
        for ps in PASSES:
            for variant in VARIANTS:
                fn = make(torch, dev, tokens, out, inp, ps, variant)
                b2b = timer(fn)
                t1 = time.perf_counter()
                rec = timer.interleaved(fn, inter.between(b2b["time_s"]), SETTLE_S)
                doc["records"].append({"preset": preset, "linear": lin, "pass": ps, "variant": variant,
                                       "mnk": mnk(tokens, out, inp, ps), "b2b_s": b2b["time_s"], "time_s": rec["time_s"],
                                       **clock.window(t1, time.perf_counter()), "kernel": kernel_name(torch, fn)})
                print(json.dumps(doc["records"][-1]), flush=True)
                del fn
    clock.stop()
    doc["clocks_after"] = clocks()
    Path(path).write_text(json.dumps(doc, indent=1))
    return 0


def read(path: str) -> int:
    from simcluster.hardware.gpu import load_gpu
    from simcluster.strict import load_json
    gpu = load_gpu(ROOT / "models/gpu/h200-sxm-interleaved.yaml")[0]
    recs = load_json(Path(path), what="eager GEMM device records")["records"]
    by = {(r["preset"], r["linear"], r["pass"], r["variant"]): r for r in recs}
    print("interleaved time us (SM MHz) per variant; card; step / nn - 1; step-data / step - 1")
    for preset, tokens, lin, out, inp in SHAPES:
        for ps in PASSES:
            rs = [by.get((preset, lin, ps, v)) for v in VARIANTS]
            if None in rs:
                continue
            card = gpu.gemm_time_s(*mnk(tokens, out, inp, ps))
            cells = "  ".join(f"{v} {1e6 * r['time_s']:7.1f} ({r.get('sm_MHz', 0):.0f})" for v, r in zip(VARIANTS, rs, strict=True))
            print(f"{preset:4s} {lin:4s} {ps:5s} {str(tuple(rs[0]['mnk'])):20s} {cells}  card {1e6 * card:7.1f}  "
                  f"{100 * (rs[1]['time_s'] / rs[0]['time_s'] - 1):+6.1f}%  {100 * (rs[2]['time_s'] / rs[1]['time_s'] - 1):+6.1f}%")
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--read"] and len(args) == 2:
        sys.exit(read(args[1]))
    if len(args) == 1 and not args[0].startswith("-"):
        sys.exit(run(args[0]))
    print("eager_gemm_device: expected OUT.json or --read OUT.json", file=sys.stderr)
    sys.exit(2)
