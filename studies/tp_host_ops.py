"""Host time per operator of profiled eager steps (issue 44, session 37; a diagnostic, not a test, no model input).

Reads the runner's gzipped Chrome traces (llm_step --profile 1 --trace PREFIX) and prints, per trace: the profiled
span, the GPU's busy time (kernels, copies, sets; NCCL's kernels left out, they spin while the peer lags), the
top-level CPU operators (those not inside another on their thread) with their count and mean host time per call, and
the operators both traces share side by side.
    python studies/tp_host_ops.py calibration/h200x2-eager-diagnose-2026-11-29/runs/tp-2b-2048x1-rank0.json.gz \\
        calibration/h200x2-eager-diagnose-2026-11-29/runs/tp-L8-512x1-rank0.json.gz [--inside aten::linear]
With --inside OP: the CPU operators nested in OP's calls, host time per OP call, side by side.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simcluster.errors import TraceFormatError  # noqa: E402 (the repository on the path first)
from simcluster.traces.torch_profiler import complete_events  # noqa: E402

GPU = ("kernel", "gpu_memcpy", "gpu_memset")


def _events(path: str) -> list[dict]:
    """The trace's complete events (torch_profiler.complete_events) with a numeric ts / dur; one line for a bad file."""
    try:
        events = [e for e in complete_events(path) if isinstance(e.get("ts"), (int, float)) and isinstance(e.get("dur"), (int, float))]
    except TraceFormatError as exc:
        raise SystemExit(str(exc)) from None
    if not any(e.get("cat") == "cpu_op" and "tid" in e for e in events):
        raise SystemExit(f"{path}: no CPU operator events (cat cpu_op with a tid): not a profiled step")
    return events


def inside(path: str, op: str) -> dict[str, float]:
    """Host microseconds per call of `op` spent in each CPU operator nested in it (same thread, inside its interval)."""
    cpu = [e for e in _events(path) if e.get("cat") == "cpu_op" and "tid" in e]
    calls = [e for e in cpu if e["name"] == op]
    if not calls:
        raise SystemExit(f"{path}: no CPU operator named {op!r}")
    out = defaultdict(float)
    for call in calls:
        for e in cpu:
            if e is not call and e["tid"] == call["tid"] and call["ts"] <= e["ts"] and e["ts"] + e["dur"] <= call["ts"] + call["dur"]:
                out[e["name"]] += e["dur"] / len(calls)
    return dict(out)


def summary(path: str) -> dict:
    """{span_us, gpu_us, kernels, ops: {name: [count, total_us]}} of one trace."""
    events = _events(path)
    span = max(e["ts"] + e.get("dur", 0) for e in events) - min(e["ts"] for e in events)
    by_thread = defaultdict(list)
    for e in events:
        if e.get("cat") == "cpu_op" and "tid" in e:
            by_thread[e["tid"]].append(e)
    ops = defaultdict(lambda: [0, 0.0])
    for thread in by_thread.values():
        thread.sort(key=lambda e: (e["ts"], -e["dur"]))
        end = float("-inf")
        for e in thread:
            if e["ts"] >= end:
                ops[e["name"]][0] += 1
                ops[e["name"]][1] += e["dur"]
                end = e["ts"] + e["dur"]
    gpu = [e for e in events if e.get("cat") in GPU and "nccl" not in e.get("name", "").lower()]   # NCCL kernels spin on the peer
    return {"span_us": span, "gpu_us": sum(e["dur"] for e in gpu), "kernels": len(gpu), "ops": dict(ops)}


def _ratio(a: float, b: float) -> str:
    return f"{a / b:6.2f}" if b > 0 else "     -"


def main(argv: list[str]) -> int:
    if not argv or "--inside" in argv and (len(argv) != 4 or argv[2] != "--inside"):
        print(__doc__)
        return 2
    if "--inside" in argv:
        op = argv[-1]
        a, b = inside(argv[0], op), inside(argv[1], op)
        print(f"{'inside ' + op:58} {'us/call 1':>9} {'us/call 2':>9} {'ratio':>6}")
        for k in sorted(set(a) & set(b), key=lambda k: -a[k])[:12]:
            print(f"{k[:58]:58} {a[k]:9.1f} {b[k]:9.1f} {_ratio(a[k], b[k])}")
        return 0
    sums = [summary(p) for p in argv]
    for path, s in zip(argv, sums, strict=True):
        n, total = sum(c for c, _ in s["ops"].values()), sum(t for _, t in s["ops"].values())
        print(f"{path}: span {s['span_us'] / 1e3:.1f} ms, GPU busy without NCCL {s['gpu_us'] / 1e3:.1f} ms ({s['kernels']} kernels / copies), "
              f"top-level CPU ops {n}, {total / 1e3:.1f} ms, {total / n:.1f} us each")   # n >= 1: _events checked
    if len(sums) == 2:
        a, b = sums
        shared = sorted(set(a["ops"]) & set(b["ops"]), key=lambda k: -a["ops"][k][1])[:16]
        print(f"\n{'operator (top-level)':58} {'us/call 1':>9} {'us/call 2':>9} {'ratio':>6}")
        for k in shared:
            ua, ub = a["ops"][k][1] / a["ops"][k][0], b["ops"][k][1] / b["ops"][k][0]
            print(f"{k[:58]:58} {ua:9.1f} {ub:9.1f} {_ratio(ua, ub)}")
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check(options=("--inside",), words=None, usage="TRACE [TRACE] [--inside OP]")
    sys.exit(main(sys.argv[1:]))
