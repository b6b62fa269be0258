"""Scratch (not committed): per-kernel GPU time of llm-step shapes, to see which op class carries the error."""
import json
import os
import sys
import tempfile
import time

import torch
from torch.profiler import ProfilerActivity, profile

from simcluster.runner import llm_step as L


def run(preset, shapes):
    cfg = dict(L.PRESETS[preset])
    device = torch.device("cuda:0")
    torch.manual_seed(0)
    with torch.device(device):
        model = L.build(torch, cfg, rope=True)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    res = []
    for i, (seq, mb) in enumerate(shapes):
        gen = torch.Generator(device="cpu").manual_seed(i)
        tokens = torch.randint(0, cfg["vocab"], (mb, seq + 1), generator=gen).to(device)
        x, y = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()

        def step():
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(x, y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

        for _ in range(5):
            step()
        torch.cuda.synchronize()
        times = []
        for _ in range(10):
            t0 = time.perf_counter()
            step()
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(3):
                step()
            torch.cuda.synchronize()
        with tempfile.TemporaryDirectory() as tmp:
            p = os.path.join(tmp, "t.json")
            prof.export_chrome_trace(p)
            events = json.load(open(p))["traceEvents"]
        kernels = {}
        for e in events:
            if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and e.get("ph") == "X":
                k = kernels.setdefault(e["name"][:200], [0, 0.0])
                k[0] += 1
                k[1] += e.get("dur", 0) / 3.0
        res.append({"preset": preset, "seq": seq, "micro_batch": mb, "step_times_s": times, "kernels_us_per_step": kernels})
        print(preset, seq, mb, sorted(times)[5], file=sys.stderr, flush=True)
    del model, opt
    torch.cuda.empty_cache()
    return res


if __name__ == "__main__":
    out = run("3b", [(2048, 2), (4096, 1)]) + run("1b", [(2048, 2)])
    json.dump(out, open(sys.argv[1], "w"))
