"""The MoE router chain and the torch permutations of session 49's moerouter, timed three ways on one GPU on the same 7
layers (simcluster/runner/moerouter_grid.GRID; issue 44, session 50 moeker50): the GPU kernels' own time apart from the
host's launch gaps. One JSON document on stdout: {"device": {...}, "quick": bool, "clocks": [...], "records": [{"layer",
"piece", "pass", "impl", "clock", "time_s", "samples", ...}, ...]}, read by simcluster/heldout/moeker50.py.

    python studies/moe_kernel_device.py --clocks events,kernels,graph-router     # on the H200 (calibration/h200x1-moeker50-2026-12-01)
    python studies/moe_kernel_device.py --clocks graph-permute                   # the permutations' capture attempt, alone
    python studies/moe_kernel_device.py --device cpu --quick                     # the dry run: tiny shapes, float32

The chain is studies/moe_router_device.py's Layer (imported, not copied): router = Layer.router(backward), permute =
Layer.permute(backward) (torch form), pass fwd / fwdbwd. Clocks (each record's "clock"):
  events   moe_router_device.timer exactly as moerouter ran it (CUDA events around INNER eager calls after WARMUP calls);
           one sample per repeat (timer with 1 repeat), so the lease's repeat noise is in the record: host launch gaps
           between the chain's small kernels are inside this figure.
  kernels  torch.profiler (CUDA activity) around INNER calls, the device side only: the summed durations of the GPU's
           kernels, memsets and memcopies per call (time_s), their count per call (n_kernels), the first start to the last
           end per call (span_s: the kernels plus the gaps between them) and the GEMM kernels' share (gemm_s: names with
           gemm / nvjet / cutlass / xmma); one sample per profiled repeat.
  graph    the call captured once in a CUDA graph (after warm-up calls on a side stream, as torch.cuda.graphs documents
           for whole-network capture, backward included) and replayed: CUDA events around INNER replays. Where capture
           fails the record has time_s null and "why" (the exception's first line): the torch permutation's
           masked_select sizes its output on the host (a device-to-host copy, illegal while a stream captures), so its
           attempt runs in a process of its own (--clocks graph-permute) after everything else.
On the CPU (--device cpu) the kernels clock has no device activity (time_s 0, n_kernels 0) and the graph clocks are
skipped (why "cpu"): the dry run checks the paths and the JSON, not the figures."""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from moe_router_device import INNER, Layer, timer  # noqa: E402

from simcluster.runner.moerouter_grid import GRID  # noqa: E402

CLOCKS = ("events", "kernels", "graph-router", "graph-permute")
DEVICE_CATS = ("kernel", "gpu_memset", "gpu_memcpy")     # the chrome trace's device-side event categories
GEMM_NAMES = ("gemm", "nvjet", "cutlass", "xmma")


def device_events(trace: dict) -> list[dict]:
    """The device-side complete events (kernels, memsets, memcopies) of a torch.profiler chrome trace document."""
    return [e for e in trace.get("traceEvents", []) if e.get("ph") == "X" and e.get("cat") in DEVICE_CATS]


def kernel_sample(trace: dict, calls: int) -> dict:
    """Per call: device busy seconds (summed durations), count, span (first start to last end) and the GEMMs' seconds."""
    ev = device_events(trace)
    if not ev:
        return {"busy_s": 0.0, "n": 0.0, "span_s": 0.0, "gemm_s": 0.0}
    busy = sum(float(e["dur"]) for e in ev)
    span = max(float(e["ts"]) + float(e["dur"]) for e in ev) - min(float(e["ts"]) for e in ev)
    gemm = sum(float(e["dur"]) for e in ev if any(g in str(e.get("name", "")).lower() for g in GEMM_NAMES))
    return {"busy_s": 1e-6 * busy / calls, "n": len(ev) / calls, "span_s": 1e-6 * span / calls, "gemm_s": 1e-6 * gemm / calls}


def profile_kernels(torch, fn, dev: str, warmup: int, repeats: int) -> list[dict]:
    """kernel_sample of `repeats` profiled runs of INNER calls each (after `warmup` calls)."""
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CUDA] if dev == "cuda" else [ProfilerActivity.CPU]
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(repeats):
        if dev == "cuda":
            torch.cuda.synchronize()
        with profile(activities=acts) as prof:
            for _ in range(INNER):
                fn()
            if dev == "cuda":
                torch.cuda.synchronize()
        fd, path = tempfile.mkstemp(suffix=".json")
        os.close(fd)
        try:
            prof.export_chrome_trace(path)
            out.append(kernel_sample(json.loads(Path(path).read_text()), INNER))
        finally:
            os.unlink(path)
    return out


def graph_samples(torch, fn, warmup: int, repeats: int) -> list[float]:
    """Seconds per replay of `fn` captured in a CUDA graph: CUDA events around INNER replays, `repeats` samples."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(max(3, warmup)):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    for _ in range(warmup):
        g.replay()
    out = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(INNER):
            g.replay()
        b.record()
        torch.cuda.synchronize()
        out.append(a.elapsed_time(b) / 1e3 / INNER)
    del g
    return out


def record(lay, piece: str, pas: str, clock: str, samples: list[float], **extra) -> dict:
    return {"layer": lay.name, "piece": piece, "pass": pas, "impl": "torch", "clock": clock,
            "time_s": statistics.median(samples) if samples else None, "samples": samples, **extra}


def measure(torch, lays, clocks, dev: str, warmup: int, repeats: int, prof_repeats: int, device: dict, records: list) -> None:
    """Every clock asked for on every layer, appended to `records` as measured; the graph clocks last (a failed capture
    cannot spoil the other figures)."""
    one = timer(torch, dev, 0, 1)
    for lay in lays:
        for piece in ("router", "permute"):
            fn0 = getattr(lay, piece)
            for pas, bwd in (("fwd", False), ("fwdbwd", True)):
                def fn(fn0=fn0, bwd=bwd):
                    fn0(bwd)
                if "events" in clocks:
                    timer(torch, dev, warmup, 1)(fn)
                    records.append(record(lay, piece, pas, "events", [one(fn) for _ in range(repeats)]))
                if "kernels" in clocks:
                    ks = profile_kernels(torch, fn, dev, warmup, prof_repeats)
                    records.append(record(lay, piece, pas, "kernels", [k["busy_s"] for k in ks],
                                          n_kernels=statistics.median(k["n"] for k in ks),
                                          span_s=statistics.median(k["span_s"] for k in ks),
                                          gemm_s=statistics.median(k["gemm_s"] for k in ks)))
    for piece in ("router", "permute"):
        if f"graph-{piece}" not in clocks:
            continue
        for lay in lays:
            for pas, bwd in (("fwd", False), ("fwdbwd", True)):
                if dev != "cuda":
                    records.append(record(lay, piece, pas, "graph", [], why="cpu"))
                    continue
                try:
                    records.append(record(lay, piece, pas, "graph", graph_samples(
                        torch, lambda lay=lay, bwd=bwd, piece=piece: getattr(lay, piece)(bwd), warmup, repeats)))
                except Exception as exc:   # not capturable (a host sync inside): recorded per piece, the rest stands
                    why = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ''}"
                    records.append(record(lay, piece, pas, "graph", [], why=why))
                    try:
                        torch.cuda.synchronize()
                    except Exception as sticky:   # the context did not recover: the remaining attempts are recorded as such
                        device["graph_context"] = f"{type(sticky).__name__}: {str(sticky)[:160]}"


def stop(signum, frame):
    raise TimeoutError("SIGTERM (the device script's time limit)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--quick", action="store_true", help="tiny shapes (T / 64, h / 16): a dry run")
    ap.add_argument("--clocks", default="events,kernels,graph-router", help=f"comma-separated, of {', '.join(CLOCKS)}")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=10, help="events and graph samples per record")
    ap.add_argument("--prof-repeats", type=int, default=3, help="profiled runs per kernels record")
    ap.add_argument("--layers", default="", help="comma-separated GRID names (default: all)")
    args = ap.parse_args(argv)
    clocks = tuple(c for c in args.clocks.split(",") if c)
    bad = [c for c in clocks if c not in CLOCKS]
    if bad or not clocks:
        print(f"moe_kernel_device: --clocks {args.clocks!r}: expected a comma-separated subset of {', '.join(CLOCKS)}", file=sys.stderr)
        return 2
    import torch

    dev = args.device
    if dev == "cuda" and not torch.cuda.is_available():
        print("moe_kernel_device: --device cuda but torch sees no CUDA device (use --device cpu --quick for a dry run)", file=sys.stderr)
        return 2
    dtype = torch.bfloat16 if dev == "cuda" else torch.float32
    name = torch.cuda.get_device_name(0) if dev == "cuda" else "cpu"
    device = {"name": name, "torch": torch.__version__, "cuda": torch.version.cuda, "dtype": str(dtype)}
    keep = set(args.layers.split(",")) if args.layers else None
    lays = [Layer(torch, row, dev, dtype, args.quick) for row in GRID if not keep or row[0] in keep]
    records = []
    signal.signal(signal.SIGTERM, stop)   # timeout's signal: the records measured so far are still written
    try:
        measure(torch, lays, clocks, dev, args.warmup, args.repeats, args.prof_repeats, device, records)
    except TimeoutError as exc:
        device["stopped"] = f"{exc} after {len(records)} records"
    json.dump({"device": device, "quick": args.quick, "clocks": list(clocks), "inner": INNER, "records": records},
              sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
