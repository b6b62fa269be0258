"""The llm-step runner's profiled steps (simcluster/runner/llm_step.py, megatron_moe.py): GPU kernels per step and their
summed time from a torch.profiler trace. torch is passed in."""

from __future__ import annotations

import json
import os
import sys


def profile_steps(torch, step, sync, steps: int, trace: str | None = None) -> dict:
    """GPU kernels per step and their summed time (the device's busy time, which a GPU model predicts),
    from a torch.profiler Chrome trace of `steps` extra steps (events of category kernel, gpu_memcpy, gpu_memset);
    with `trace`, that Chrome trace is also kept, gzipped, at that path (the timeline, for Perfetto)."""
    import gzip
    import shutil
    import tempfile

    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
    with profile(activities=activities) as prof:
        for _ in range(steps):
            step()
        sync()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f).get("traceEvents", [])
        if trace:
            try:
                with open(path, "rb") as src, gzip.open(trace, "wb") as dst:
                    shutil.copyfileobj(src, dst)
            except OSError as exc:   # the kernel summary below stands without the kept timeline
                print(f"llm-step: --trace {trace}: not written ({exc})", file=sys.stderr, flush=True)
    out = {"profiled_steps": steps}
    for cat in ("kernel", "gpu_memcpy", "gpu_memset"):
        durs = [e.get("dur", 0) for e in events if e.get("cat") == cat and e.get("ph") == "X"]
        out[f"{cat}_per_step"] = len(durs) / steps
        out[f"{cat}_time_per_step_s"] = sum(durs) * 1e-6 / steps
    out["cpu_ops_per_step"] = sum(1 for e in events if e.get("cat") == "cpu_op" and e.get("ph") == "X") / steps
    # the host's CUDA runtime calls (launches, synchronizations, allocations): count and summed host time per step,
    # the ten largest by time; the profile's closing synchronization is among them
    runtime: dict[str, list[float]] = {}
    for e in events:
        if e.get("cat") == "cuda_runtime" and e.get("ph") == "X":
            acc = runtime.setdefault(str(e.get("name")), [0.0, 0.0])
            acc[0] += 1
            acc[1] += e.get("dur", 0) * 1e-6
    top = sorted(runtime.items(), key=lambda kv: -kv[1][1])[:10]
    out["cuda_runtime_per_step"] = {name: {"calls": n / steps, "time_s": t / steps} for name, (n, t) in top}
    from simcluster.runner.host_cpu import profiled_host

    out["host"] = profiled_host(events, steps)   # the issue window less its waits (host_cpu.py)
    return out
