"""Issue 44 (session 36, the lead): do gpu-micro's CUDA-event times of a GEMM read longer than the kernel's own
duration? (device study, registered in calibration/h200x1-gemm-timing-2026-11-29/README.md before any run; not a test)

The H200 interleaved card is fitted on gpu-micro's event-timed calls (runner/gpu_timing.Timer: a batch of back-to-back
calls between two CUDA events; Timer.interleaved: events around each call, bf16 copies between calls); session 35's L2
probe found single profiled kernels (torch.profiler) of the same shapes 12-19% under the card at 1,950-1,980 MHz, while
gpu-micro's interleaved records of those shapes ran at 1,807-1,980 MHz (the clock does not span the gap at 2048 tokens).
Here each shape runs gpu-micro's two timers exactly (torch.matmul(a, b), its Timer with warmup 3, repeats 10, min batch
1 ms; the interleaved condition with its Interleaver and SETTLE_S), each measured twice: plain (the event time gpu-micro
records) and again under torch.profiler (the event time then, and every GEMM kernel's duration); nvidia-smi's SM clock
over each measurement (gpu_timing.ClockSampler).
    python studies/gemm_timing_probe.py OUT.json          # on the device (torch only)
    python studies/gemm_timing_probe.py --read OUT.json   # here: event vs kernel, the card, the registered hypotheses
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "studies"))

from gemm_l2_probe import CARD, SHAPES, _gemm_durations, device_or_read  # noqa: E402  (the L2 probe's shapes, filter, CLI)

CONDITIONS = ("back-to-back", "interleaved")


def measure(out_path: str) -> int:
    import torch

    from simcluster.runner.gpu_timing import SETTLE_S, ClockSampler, Interleaver, Timer

    dev = torch.device("cuda")
    timer = Timer(torch, dev, 3, 10, 1e-3)          # gpu-micro's defaults (runner/gpu_micro.py)
    inter = Interleaver(torch, dev, timer, 2**27)   # gpu-micro's 256 MiB buffers
    clock = ClockSampler().start()
    records = []
    for label, m, n, k, _ in SHAPES:
        a = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
        b = torch.randn(k, n, device=dev, dtype=torch.bfloat16)
        fn = lambda a=a, b=b: torch.matmul(a, b)   # noqa: E731  (gpu-micro's call)
        b2b = timer(fn)["time_s"]
        runs = {"back-to-back": lambda fn=fn: timer(fn),
                "interleaved": lambda fn=fn, b2b=b2b: timer.interleaved(fn, inter.between(b2b), SETTLE_S)}
        for cond in CONDITIONS:
            t0 = time.perf_counter()
            plain = runs[cond]()["time_s"]
            clk = clock.window(t0, time.perf_counter())
            torch.cuda.synchronize()
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                profiled = runs[cond]()["time_s"]
                torch.cuda.synchronize()
            kernels = _gemm_durations(prof)
            records.append({"shape": label, "mnk": [m, n, k], "condition": cond, "event_s": plain,
                            "event_profiled_s": profiled, "kernel_median_s": statistics.median(kernels) if kernels else None,
                            "kernels": len(kernels), **clk})
            print(json.dumps(records[-1]), flush=True)
    clock.stop()
    Path(out_path).write_text(json.dumps({"records": records, "torch": torch.__version__}, indent=1) + "\n")
    return 0


def read(path: str) -> int:
    from simcluster.errors import SimclusterError
    from simcluster.hardware.gpu import load_gpu

    try:
        doc = json.loads(Path(path).read_text())
        recs = {(r["shape"], r["condition"]): r for r in doc["records"]}
        for r in recs.values():
            r["event_s"], r["event_profiled_s"], r["kernel_median_s"]   # noqa: B018  (the keys the read-out needs)
    except (OSError, ValueError) as exc:
        print(f"gemm_timing_probe: {path}: cannot read the records ({exc})", file=sys.stderr)
        return 2
    except (KeyError, TypeError) as exc:
        print(f"gemm_timing_probe: {path}: expected records with shape, condition, event_s, event_profiled_s, "
              f"kernel_median_s (missing {exc})", file=sys.stderr)
        return 2
    try:
        gpu = load_gpu(CARD)[0]
    except SimclusterError as exc:
        print(f"gemm_timing_probe: {exc}", file=sys.stderr)
        return 2
    gaps: dict[str, list[float]] = {c: [] for c in CONDITIONS}
    card_vs_event = []
    print("shape        condition      event us  event(prof) us  kernel us  card us  event/kernel-1  card/event-1   SM MHz")
    for label, m, n, k, _ in SHAPES:
        card = gpu.gemm_time_s(m, n, k)
        for cond in CONDITIONS:
            r = recs.get((label, cond))
            if not r or not r["kernel_median_s"] or not r["event_s"]:
                print(f"{label:12s} {cond:13s} no reading")
                continue
            gap = r["event_profiled_s"] / r["kernel_median_s"] - 1
            gaps[cond].append(gap)
            if cond == "interleaved":
                card_vs_event.append(card / r["event_s"] - 1)
            print(f"{label:12s} {cond:13s} {r['event_s'] * 1e6:9.1f} {r['event_profiled_s'] * 1e6:15.1f} "
                  f"{r['kernel_median_s'] * 1e6:10.1f} {card * 1e6:8.1f} {100 * gap:+14.1f}% "
                  f"{100 * (card / r['event_s'] - 1):+12.1f}%  {r.get('sm_MHz', '-')}")
    for cond in CONDITIONS:
        if len(gaps[cond]) < 4:
            print(f"H-event ({cond}): no reading (fewer than 4 shapes)")
            continue
        med = statistics.median(gaps[cond])
        verdict = "supported" if med >= 0.08 else "ruled out" if abs(med) < 0.03 else "undecided"
        print(f"H-event ({cond}): median(event / kernel - 1) = {100 * med:+.1f}% over {len(gaps[cond])} shapes: {verdict} "
              "(registered: >= +8% supported: the card's event-timed data carry time the kernels do not; |median| < 3% ruled out)")
    if len(card_vs_event) >= 4:
        med = statistics.median(card_vs_event)
        print(f"H-card: median(card / interleaved event time - 1) = {100 * med:+.1f}%: "
              f"{'met' if abs(med) <= 0.05 else 'not met'} (registered: within 5%: this lease's gpu-micro timing reproduces the card)")
    return 0


def main(argv: list[str]) -> int:
    return device_or_read(argv, "gemm_timing_probe", measure, read)


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check(options=("--read",), words=1, usage="OUT.json | --read OUT.json")
    sys.exit(main(sys.argv[1:]))
