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
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.errors import SimclusterError  # noqa: E402 (the repository on the path first)

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


def run(path: str, shapes=SHAPES, variants=VARIANTS) -> int:
    """Time every (shape, pass, variant) on the device into `path` (`shapes` / `variants`: another study's plan)."""
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
           "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "main_commit": os.environ.get("MAIN_COMMIT"),
           "clocks_before": clocks(), "records": []}
    for preset, tokens, lin, out, inp in shapes:
        for ps in PASSES:
            for variant in variants:
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


KEYS = ("preset", "linear", "pass", "variant")
BIG = 512          # H-layout's (and H-data's) filter: records with min(M, N) > 512 (24 of the plan's 30)


def _triple(value) -> tuple[int, int, int]:
    m, n, k = (int(x) for x in value)       # not three numbers: ValueError / TypeError, a one-line refusal (field)
    return m, n, k


def records_of(path: str) -> list[dict]:
    """The device records, each with the keys --read uses; a missing file or key is one line naming file and key."""
    from simcluster.strict import field, load_json, positive

    doc = load_json(Path(path), what="eager GEMM device records")
    recs = field(doc, "records", path)
    if not isinstance(recs, list):
        raise SimclusterError(f"key 'records': expected a list, got {type(recs).__name__}", where=path)
    for i, r in enumerate(recs):
        where = f"{path}: records[{i}]"
        for key in KEYS:
            field(r, key, where, str)
        field(r, "time_s", where, lambda v: positive(float(v), "time_s"))
        field(r, "mnk", where, _triple)
    return recs


def verdicts(rows: list[tuple[str, str, str, tuple[int, int, int], list[dict], float]]) -> list[str]:
    """Each declared hypothesis (README "Predictions ... declared before the run", H-small as amended there) as
    computed from the records: its median over its declared filter and its verdict by the declared thresholds.
    rows: (preset, linear, pass, mnk, [nn, step, step-data records], card seconds)."""
    import statistics

    big = [r for r in rows if min(r[3][0], r[3][1]) > BIG]
    out = [f"hypotheses over the {len(big)} records with min(M, N) > {BIG} (H-layout's declared filter; H-data's too)"]
    if not big:
        return out + ["  no record passes the filter: no verdict"]
    layout = 100 * statistics.median(r[4][1]["time_s"] / r[4][0]["time_s"] - 1 for r in big)
    verdict = "supported" if layout <= -5 else "ruled out" if abs(layout) < 3 else "undecided (between -5% and -3%/+3%)"
    out.append(f"H-layout: median(step / nn - 1) = {layout:+.1f}% -> {verdict} (<= -5% supported, |median| < 3% ruled out)")
    data = 100 * statistics.median(r[4][2]["time_s"] / r[4][1]["time_s"] - 1 for r in big)
    clock = statistics.median(r[4][2].get("sm_MHz", 0.0) - r[4][1].get("sm_MHz", 0.0) for r in big)
    verdict = "supported" if data <= -3 and clock > 0 else "ruled out" if abs(data) < 2 else "undecided"
    out.append(f"H-data: median(step-data / step - 1) = {data:+.1f}%, median SM clock step-data - step = {clock:+.0f} MHz"
               f" -> {verdict} (<= -3% with a higher clock supported, |median| < 2% ruled out)")
    small = [(r[0], 100 * (r[4][1]["time_s"] / r[5] - 1)) for r in rows if r[1] == "k" and r[2] == "wgrad"]
    met = bool(small) and all(abs(e) <= 15 for _, e in small)
    out.append("H-small (as amended before the run): k wgrad `step` vs the split-K card: "
               + ", ".join(f"{p} {e:+.1f}%" for p, e in small) + f" -> {'met' if met else 'not met'} (every one within 15%)")
    card = 100 * statistics.median(r[4][0]["time_s"] / r[5] - 1 for r in big)
    near = sum(abs(r[4][0]["time_s"] / r[5] - 1) <= 0.05 for r in big)
    last = layout > -5 and abs(layout) < 3 and abs(data) < 2 and abs(card) <= 5
    out.append(f"last reading (neither H-layout nor H-data, `nn` within 5% of the card): median(nn / card - 1) = {card:+.1f}%,"
               f" {near} of {len(big)} within 5% -> {'applies: the step itself, the card stays' if last else 'does not apply'}")
    return out


def read(path: str) -> int:
    from simcluster.hardware.gpu import load_gpu

    gpu = load_gpu(ROOT / "models/gpu/h200-sxm-interleaved.yaml")[0]
    by = {tuple(r[k] for k in KEYS): r for r in records_of(path)}
    print("interleaved time us (SM MHz) per variant; card; step / nn - 1; step-data / step - 1")
    rows = []
    for preset, tokens, lin, out, inp in SHAPES:
        for ps in PASSES:
            rs = [by.get((preset, lin, ps, v)) for v in VARIANTS]
            if None in rs:
                continue
            card = gpu.gemm_time_s(*mnk(tokens, out, inp, ps))
            rows.append((preset, lin, ps, tuple(rs[0]["mnk"]), rs, card))
            cells = "  ".join(f"{v} {1e6 * r['time_s']:7.1f} ({r.get('sm_MHz', 0):.0f})" for v, r in zip(VARIANTS, rs, strict=True))
            print(f"{preset:4s} {lin:4s} {ps:5s} {str(tuple(rs[0]['mnk'])):20s} {cells}  card {1e6 * card:7.1f}  "
                  f"{100 * (rs[1]['time_s'] / rs[0]['time_s'] - 1):+6.1f}%  {100 * (rs[2]['time_s'] / rs[1]['time_s'] - 1):+6.1f}%")
    print("\n".join(verdicts(rows)))
    return 0


def main(args: list[str]) -> int:
    try:
        if args[:1] == ["--read"] and len(args) == 2:
            return read(args[1])
        if len(args) == 1 and not args[0].startswith("-"):
            return run(args[0])
    except SimclusterError as exc:
        print(f"eager_gemm_device: {exc.one_line()}", file=sys.stderr)
        return 2
    print("eager_gemm_device: expected OUT.json or --read OUT.json", file=sys.stderr)
    return 2


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check(options=("--read",), words=1, usage="OUT.json | --read OUT.json")
    sys.exit(main(sys.argv[1:]))
