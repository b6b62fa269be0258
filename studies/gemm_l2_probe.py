"""Issue 44 (session 35, the lead): do the eager step's GEMMs run 8-13% faster than the H200 card because their operands
are already in L2? (device study, registered in calibration/h200x1-gemm-l2-2026-11-29/README.md before any run; not a test)

The GEMM study (calibration/h200x1-eager-gemms-2026-11-29) ruled out call layout and operand data and found the isolated
calls near the card, while the same GEMMs inside the profiled eager step ran 8-13% faster. Here each forward GEMM of six
eager shapes is profiled (torch.profiler kernel durations, no host timing) under three conditions, 40 calls each:
  cold  - a 512 MiB buffer is written before every call (the H200's 50 MB L2 then holds none of the operands);
  warm  - the activation x is rewritten (a copy from another buffer) before every call, as the step's preceding kernel
          writes it: x and, where it fits beside x, the weight sit in L2;
  b2b   - calls back to back (the weight and x from the previous call).
    python studies/gemm_l2_probe.py OUT.json          # on the device (torch only)
    python studies/gemm_l2_probe.py --read OUT.json   # here: medians, the card, the registered hypotheses
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# (label, tokens M, out N, in K) forward GEMMs of the eager5 presets; trace_us: the profiled eager step's kernel
# (calibration/h200x1-eager-gemms-2026-11-29/README.md), None where that README gives none
SHAPES = [("1.1b q", 2048, 2048, 2048, 24.0), ("1.1b gate", 2048, 5632, 2048, 60.5), ("1.1b down", 2048, 2048, 5632, 60.1),
          ("0.5b q", 16384, 1536, 1536, 110.8), ("0.5b gate", 16384, 4096, 1536, 285.3), ("2b gate", 8192, 6912, 2560, None)]
CONDITIONS = ("cold", "warm", "b2b")
CALLS = 40
CARD = ROOT / "models/gpu/h200-sxm-interleaved.yaml"


def _gemm_durations(prof) -> list[float]:
    """Kernel durations (s) of the GEMM kernels the profiler saw, in order (not the copies / fills)."""
    out = []
    for e in prof.events():
        name = e.name.lower()
        if e.device_type.name == "CUDA" and any(t in name for t in ("gemm", "nvjet", "cutlass", "sm90")) \
                and "copy" not in name and "fill" not in name and "elementwise" not in name:
            out.append(e.device_time * 1e-6 if hasattr(e, "device_time") else e.cuda_time * 1e-6)
    return out


def measure(out_path: str) -> int:
    import subprocess

    import torch

    dev = torch.device("cuda")
    bf = torch.bfloat16
    flush = torch.empty(512 * 2**20, dtype=torch.uint8, device=dev)
    records = []
    for label, m, n, k, _ in SHAPES:
        x, x_src = torch.randn(m, k, device=dev, dtype=bf), torch.randn(m, k, device=dev, dtype=bf)
        w = torch.randn(n, k, device=dev, dtype=bf)
        gemm = lambda x=x, w=w: torch.nn.functional.linear(x, w)   # noqa: E731  (the step's forward call)
        pre = {"cold": lambda: flush.fill_(1), "warm": lambda x=x, s=x_src: x.copy_(s), "b2b": lambda: None}
        for _ in range(10):
            gemm()
        for cond in CONDITIONS:
            torch.cuda.synchronize()
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                for _ in range(CALLS):
                    pre[cond]()
                    gemm()
                torch.cuda.synchronize()
            durations = _gemm_durations(prof)
            clock = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm", "--format=csv,noheader,nounits"],
                                   capture_output=True, text=True).stdout.strip()
            records.append({"shape": label, "mnk": [m, n, k], "condition": cond, "calls": len(durations),
                            "median_s": statistics.median(durations) if durations else None, "sm_MHz_after": clock})
            print(json.dumps(records[-1]), flush=True)
    Path(out_path).write_text(json.dumps({"records": records, "torch": torch.__version__}, indent=1) + "\n")
    return 0


def read(path: str) -> int:
    from simcluster.errors import SimclusterError
    from simcluster.hardware.gpu import load_gpu

    try:
        doc = json.loads(Path(path).read_text())
        recs = {(r["shape"], r["condition"]): r["median_s"] for r in doc["records"]}
    except (OSError, ValueError) as exc:
        print(f"gemm_l2_probe: {path}: cannot read the records ({exc})", file=sys.stderr)
        return 2
    except (KeyError, TypeError) as exc:
        print(f"gemm_l2_probe: {path}: expected records with shape, condition, median_s (missing {exc})", file=sys.stderr)
        return 2
    try:
        gpu = load_gpu(CARD)[0]
    except SimclusterError as exc:
        print(f"gemm_l2_probe: {exc}", file=sys.stderr)
        return 2
    warm_cold, b2b_cold, warm_trace = [], [], []
    print("shape        m x n x k              cold us  warm us   b2b us  card us  warm/cold-1  b2b/cold-1  warm/trace-1")
    for label, m, n, k, trace_us in SHAPES:
        cold, warm, b2b = (recs.get((label, c)) for c in CONDITIONS)
        if not (cold and warm and b2b):
            print(f"{label:12s} no reading (a condition has no GEMM kernel)")
            continue
        card = gpu.gemm_time_s(m, n, k) * 1e6
        wc, bc = warm / cold - 1, b2b / cold - 1
        wt = (warm * 1e6 / trace_us - 1) if trace_us else None
        warm_cold.append(wc)
        b2b_cold.append(bc)
        if wt is not None:
            warm_trace.append(wt)
        print(f"{label:12s} {m:5d} x {n:5d} x {k:5d}  {cold * 1e6:8.1f} {warm * 1e6:8.1f} {b2b * 1e6:8.1f} {card:8.1f}"
              f"  {100 * wc:+10.1f}% {100 * bc:+10.1f}%  " + (f"{100 * wt:+10.1f}%" if wt is not None else "         -"))
    if len(warm_cold) < 4:
        print("H-L2: no reading (fewer than 4 shapes measured in every condition)")
        return 0
    med = statistics.median(warm_cold)
    verdict = "supported" if med <= -0.05 else "ruled out" if abs(med) < 0.03 else "undecided"
    print(f"H-L2: median(warm / cold - 1) = {100 * med:+.1f}% over {len(warm_cold)} shapes: {verdict} "
          "(registered: <= -5% supported, |median| < 3% ruled out)")
    if warm_trace:
        mt = statistics.median(warm_trace)
        print(f"H-trace: median(warm / the step's traced kernel - 1) = {100 * mt:+.1f}% over {len(warm_trace)} shapes: "
              f"{'met' if abs(mt) <= 0.05 else 'not met'} (registered: within 5%: L2 residency reproduces the step)")
    print(f"b2b / cold - 1, median {100 * statistics.median(b2b_cold):+.1f}% (reported, not judged)")
    return 0


def device_or_read(argv: list[str], name: str, measure_fn, read_fn) -> int:
    """A device probe's command line (this one's and gemm_timing_probe.py's): OUT.json measures, --read OUT.json reads."""
    if argv[:1] == ["--read"] and len(argv) == 2:
        return read_fn(argv[1])
    if len(argv) == 1 and not argv[0].startswith("-"):
        return measure_fn(argv[0])
    print(f"{name}: expected OUT.json (device) or --read OUT.json", file=sys.stderr)
    return 2


def main(argv: list[str]) -> int:
    return device_or_read(argv, "gemm_l2_probe", measure, read)


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check(options=("--read",), words=1, usage="OUT.json | --read OUT.json")
    sys.exit(main(sys.argv[1:]))
