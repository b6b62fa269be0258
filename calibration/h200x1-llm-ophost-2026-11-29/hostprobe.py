"""Issue 44 development probe (NOT registered): what grows with shape on the host under the op policy.

One process, one model (llm_step.build, the runner's own decoder and llm_ac modes), one shape; for each --modes entry
(op, full, none) in turn: --warmup untimed steps, --steps timed steps, then one profiled step. Per timed step: wall
time, host issue time (step() returns), the issuing thread's CPU time (time.thread_time) and the process's
(time.process_time; a CUDA backward runs on autograd's device thread): a host that waits on a synchronisation or an
allocator retry has wall >> CPU (a full launch queue may spin: the profiled step's long launch calls tell it);
forward / backward / optimizer issue times, the op policy's calls and Python time (llm_ac.op_policy wrapped), Python
GC pauses, the caching allocator's counters (cudaMalloc / cudaFree / retries / syncs: torch.cuda.memory_stats deltas).
The profiled step: top CPU ops by self time, CUDA runtime / driver calls (count, time, max, calls over 100 us: a
blocking launch or synchronisation), GPU kernels, their busy union and the GPU's idle gaps inside the step.
One small JSON on stdout.

    PYTHONPATH=. python3 hostprobe.py --preset 0.5b --shape 2048:8 --modes op,full
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import tempfile
import time

from simcluster.runner import llm_ac, llm_step

ALLOC_KEYS = ("num_alloc_retries", "num_device_alloc", "num_device_free", "num_sync_all_streams", "num_ooms",
              "allocation.all.allocated", "segment.all.allocated", "segment.all.freed")
POLICY = {"calls": 0, "seconds": 0.0, "by_op": {}}


def timed_op_policy(torch):
    """llm_ac.op_policy with its calls counted and timed (the policy's own Python time, not the dispatch mode's)."""
    inner = _ORIGINAL(torch)

    def policy(ctx, func, *args, **kwargs):
        t0 = time.perf_counter()
        out = inner(ctx, func, *args, **kwargs)
        POLICY["seconds"] += time.perf_counter() - t0
        POLICY["calls"] += 1
        POLICY["by_op"][func] = POLICY["by_op"].get(func, 0) + 1
        return out

    return policy


_ORIGINAL = llm_ac.op_policy
llm_ac.op_policy = timed_op_policy

GC = {"count": 0, "seconds": 0.0, "t0": 0.0}


def _gc_callback(phase, info):
    if phase == "start":
        GC["t0"] = time.perf_counter()
    else:
        GC["count"] += 1
        GC["seconds"] += time.perf_counter() - GC["t0"]


def med(xs):
    return statistics.median(xs) if xs else None


def profile_one(torch, step, sync, top: int) -> dict:
    """One profiled step: CPU ops by self time, CUDA runtime / driver calls, kernels, GPU busy union and idle gaps."""
    from torch.profiler import ProfilerActivity, profile

    sync()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        t0 = time.perf_counter()
        step()
        issue = time.perf_counter() - t0
        sync()
        wall = time.perf_counter() - t0
    rows = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)
    cpu_top = [{"op": e.key, "calls": e.count, "self_cpu_s": e.self_cpu_time_total * 1e-6} for e in rows[:top]]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = [e for e in json.load(f).get("traceEvents", []) if e.get("ph") == "X"]
    runtime: dict[str, list] = {}
    kernels = []
    cpu_ops = aten_ops = 0
    for e in events:
        cat, dur = e.get("cat"), float(e.get("dur", 0))
        if cat in ("cuda_runtime", "cuda_driver"):
            r = runtime.setdefault(str(e.get("name")), [0, 0.0, 0.0, 0, 0.0])
            r[0] += 1
            r[1] += dur
            r[2] = max(r[2], dur)
            if dur > 100:
                r[3] += 1
                r[4] += dur
        elif cat in ("kernel", "gpu_memcpy", "gpu_memset"):
            kernels.append((float(e["ts"]), float(e["ts"]) + dur))
        elif cat == "cpu_op":
            cpu_ops += 1
            aten_ops += str(e.get("name", "")).startswith("aten::")
    kernels.sort()
    busy = gaps = big_gaps = 0.0
    end = None
    for s, t in kernels:
        if end is None or s > end:
            if end is not None:
                gaps += s - end
                big_gaps += (s - end) if s - end > 50 else 0.0
            busy += t - s
            end = t
        elif t > end:
            busy += t - end
            end = t
    rt = {name: {"calls": n, "time_s": t * 1e-6, "max_s": m * 1e-6, "calls_over_100us": k, "time_over_100us_s": kt * 1e-6}
          for name, (n, t, m, k, kt) in sorted(runtime.items(), key=lambda kv: -kv[1][1])}
    return {"wall_s": wall, "issue_s": issue, "cpu_ops": cpu_ops, "aten_ops": aten_ops, "kernels": len(kernels),
            "gpu_busy_union_s": busy * 1e-6, "gpu_span_s": (kernels[-1][1] - kernels[0][0]) * 1e-6 if kernels else 0.0,
            "gpu_idle_gaps_s": gaps * 1e-6, "gpu_idle_gaps_over_50us_s": big_gaps * 1e-6,
            "cuda_runtime": rt, "cpu_ops_top_self": cpu_top}


def run_mode(torch, model, opt, device, cfg, seq, micro, mode, warmup, steps, top) -> dict:
    model.checkpoint = mode
    gen = torch.Generator(device="cpu").manual_seed(0)
    tokens = torch.randint(0, cfg["vocab"], (micro, seq + 1), generator=gen).to(device)
    inputs, labels = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
    sync = torch.cuda.synchronize
    marks = {}

    def step():
        t0 = time.perf_counter()
        with torch.autocast(device.type, dtype=torch.bfloat16):
            loss = model(inputs, labels)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        opt.step()
        opt.zero_grad(set_to_none=True)
        marks.update(fwd=t1 - t0, bwd=t2 - t1, opt=time.perf_counter() - t2)
        return loss

    rec = {"mode": mode, "seq": seq, "micro_batch": micro, "warmup": warmup, "steps": steps}
    try:
        for _ in range(warmup):
            step()
        sync()
        a0 = torch.cuda.memory_stats(device)
        POLICY.update(calls=0, seconds=0.0, by_op={})
        GC.update(count=0, seconds=0.0)
        per = {k: [] for k in ("wall_s", "issue_s", "thread_cpu_s", "process_cpu_s", "fwd_issue_s", "bwd_issue_s",
                               "opt_issue_s")}
        for _ in range(steps):
            p0, c0, t0 = time.process_time(), time.thread_time(), time.perf_counter()
            step()
            per["issue_s"].append(time.perf_counter() - t0)
            per["thread_cpu_s"].append(time.thread_time() - c0)
            per["process_cpu_s"].append(time.process_time() - p0)
            sync()
            per["wall_s"].append(time.perf_counter() - t0)
            for k in ("fwd", "bwd", "opt"):
                per[f"{k}_issue_s"].append(marks[k])
        a1 = torch.cuda.memory_stats(device)
    except torch.OutOfMemoryError as exc:
        rec.update(status="oom", error=str(exc).splitlines()[0][:200])
        opt.zero_grad(set_to_none=True)
        torch.cuda.empty_cache()
        return rec
    rec.update(status="ok", median={k: med(v) for k, v in per.items()}, per_step=per,
               policy_per_step={"calls": POLICY["calls"] / steps, "seconds": POLICY["seconds"] / steps,
                                "top_ops": {str(f): n / steps for f, n in
                                            sorted(POLICY["by_op"].items(), key=lambda kv: -kv[1])[:8]}},
               gc_per_step={"collections": GC["count"] / steps, "seconds": GC["seconds"] / steps},
               allocator_delta_per_step={k: (a1[k] - a0.get(k, 0)) / steps if k in a1 else None for k in ALLOC_KEYS},
               memory={"reserved_bytes": torch.cuda.memory_reserved(device),
                       "max_allocated_bytes": torch.cuda.max_memory_allocated(device)})
    try:
        rec["profiled_step"] = profile_one(torch, step, sync, top)
    except Exception as exc:  # noqa: BLE001 - the timed steps stand without the profile
        rec["profile_error"] = f"{type(exc).__name__}: {exc}"[:300]
    return rec


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", required=True, choices=sorted(llm_step.PRESETS))
    ap.add_argument("--layers", type=int)
    ap.add_argument("--shape", required=True, help="SEQ:MICRO_BATCH")
    ap.add_argument("--modes", default="op,full")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--top", type=int, default=25, help="CPU ops by self time kept")
    args = ap.parse_args()
    import torch

    cfg = dict(llm_step.PRESETS[args.preset])
    if args.layers:
        cfg["layers"] = args.layers
    (seq, micro), = llm_step.parse_shapes(args.shape)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.type != "cuda":
        torch.cuda.synchronize = lambda *a: None            # CPU dry run only
        torch.cuda.memory_stats = lambda *a: {}
        torch.cuda.memory_reserved = torch.cuda.max_memory_allocated = lambda *a: 0
    torch.manual_seed(0)
    with torch.device(device):
        model = llm_step.build(torch, cfg, rope=True)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=device.type == "cuda" or None)
    gc.callbacks.append(_gc_callback)
    doc = {"tool": "ophost-probe", "torch": torch.__version__, "preset": args.preset, "model": cfg,
           "preserve_rng_state": llm_ac.PRESERVE_RNG_STATE, "gc_thresholds": gc.get_threshold(), "modes": []}
    for mode in args.modes.split(","):
        t0 = time.perf_counter()
        doc["modes"].append(run_mode(torch, model, opt, device, cfg, seq, micro, mode, args.warmup, args.steps, args.top))
        doc["modes"][-1]["process_s"] = time.perf_counter() - t0
        print(f"ophost: {args.preset} {args.shape} {mode}: {doc['modes'][-1]['status']} "
              f"{doc['modes'][-1]['process_s']:.1f} s", file=sys.stderr, flush=True)
    json.dump(doc, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
