"""Scratch (not committed): one bf16 GEMM's time back to back (as gpu-micro times it) vs interleaved with
memory-bound kernels (as in a training step), with the SM clock and power sampled by nvidia-smi meanwhile."""
import json
import statistics
import subprocess
import sys
import threading
import time

import torch

dev = "cuda"
samples = []
stop = threading.Event()


def sampler():
    while not stop.is_set():
        out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True).stdout.strip()
        samples.append((time.time(), out))
        time.sleep(0.1)


def timed(fn_gemm, fn_other, n, phase):
    t0 = time.time()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    for i in range(n):
        if fn_other:
            fn_other()
        starts[i].record()
        fn_gemm()
        ends[i].record()
    torch.cuda.synchronize()
    t1 = time.time()
    ms = [s.elapsed_time(e) for s, e in zip(starts, ends)]
    clk = [s for t, s in samples if t0 <= t <= t1]
    return {"phase": phase, "median_ms": statistics.median(ms), "min_ms": min(ms), "max_ms": max(ms), "n": n,
            "wall_s": t1 - t0, "clocks_power": clk}


res = []
th = threading.Thread(target=sampler, daemon=True)
th.start()
for (m, n, k) in ((4096, 8192, 3072), (4096, 3072, 3072), (4096, 3072, 8192)):
    a = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
    b = torch.randn(k, n, device=dev, dtype=torch.bfloat16)
    big = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    src = torch.randn(4096 * 3072 * 4, device=dev, dtype=torch.float32)
    dst = torch.empty_like(src, dtype=torch.bfloat16)
    t_end = time.time() + 5
    while time.time() < t_end:          # preheat as gpu-micro does
        big @ big
    torch.cuda.synchronize()
    g = lambda: a @ b  # noqa: E731
    res.append({"shape": [m, n, k], **timed(g, None, 3000, "back-to-back")})
    res.append({"shape": [m, n, k], **timed(g, lambda: [dst.copy_(src) for _ in range(3)], 1500, "interleaved with 3 copies")})
    res.append({"shape": [m, n, k], **timed(g, None, 3000, "back-to-back again")})
    for r in res[-3:]:
        print(r["shape"], r["phase"], round(r["median_ms"] * 1e3, 1), "us", 2 * m * n * k / r["median_ms"] / 1e9, "TF",
              r["clocks_power"][len(r["clocks_power"]) // 2] if r["clocks_power"] else None, file=sys.stderr, flush=True)
stop.set()
json.dump(res, open(sys.argv[1], "w"))
