"""How many kernel launches one CUDA stream queues before the launching host blocks (issue 44, session 44): the probe of
llm/host.LAUNCH_QUEUE_KERNELS, the bound on how far a pipeline stage's host runs ahead of its GPU (launch_backlog.free_host).

The GPU is held busy by one long kernel (torch.cuda._sleep, `--hold-ms`), and the host then launches `--launches` tiny
kernels (an in-place add on one element) on the same stream, timing each launch's return. A launch returns in a few
microseconds while the queue has room; the first one past the queue's depth waits for the held kernel to finish (most of
the hold). The depth is the number of launches before the first that took more than a quarter of the hold; None where
every launch returned fast (the queue held them all: depth >= launches). Repeated `--repeats` times, each from an idle
device.

    python -m simcluster.runner.launch_queue [--launches 4000] [--hold-ms 200] [--repeats 3]

Prints one JSON document: tool "launch-queue", the device, torch's version, and per repeat the depth, the median fast
launch (s) and the blocked launch's wait (s); depth_median over the repeats that found one.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

SM_CYCLES_PER_S = 1.98e9   # H200's boost clock (gpu_duty.py's filler uses the same): torch.cuda._sleep counts cycles


def measure(torch, launches: int, hold_s: float) -> dict:
    """One repeat: the held kernel, then the timed launches (module docstring)."""
    x = torch.zeros(1, device="cuda")
    for _ in range(50):   # warm: the add's first launches load its kernel
        x.add_(1.0)
    torch.cuda.synchronize()
    torch.cuda._sleep(int(hold_s * SM_CYCLES_PER_S))
    times = []
    for _ in range(launches):
        t0 = time.perf_counter()
        x.add_(1.0)
        times.append(time.perf_counter() - t0)
    torch.cuda.synchronize()
    depth = next((i for i, t in enumerate(times) if t > 0.25 * hold_s), None)
    fast = statistics.median(times[: min(100, depth or launches)])
    return {"depth": depth, "median_fast_launch_s": fast, "blocked_launch_s": None if depth is None else times[depth]}


def main(argv: list[str] | None = None) -> int:
    import torch

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--launches", type=int, default=4000)
    ap.add_argument("--hold-ms", type=float, default=200.0)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        raise SystemExit("launch_queue: no CUDA device")
    runs = [measure(torch, args.launches, args.hold_ms / 1e3) for _ in range(args.repeats)]
    found = [r["depth"] for r in runs if r["depth"] is not None]
    print(json.dumps({"tool": "launch-queue", "format": 1, "device": torch.cuda.get_device_name(0),
                      "torch": torch.__version__, "launches": args.launches, "hold_s": args.hold_ms / 1e3,
                      "repeats": runs, "depth_median": statistics.median(found) if found else None}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
