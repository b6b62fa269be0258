"""fp8lease61 (issue 44, session 61; development, not adopted): would an fp8 GEMM curve with its own k ramp read the fp8
traces better than today's (the bf16 fit's k ramp and tile shape, one fp8 efficiency; fit/gpu.fit_gemm)? For the H100 and
H200 cards (back-to-back condition): today's fp8 efficiency and a free (efficiency, k ramp) pair, both fitted on the
card's fp8 fit set (fit/gpu.gemm_in_fit), each read on the fit set, the held-out layer GEMMs, the squares and MLP-up
shapes, and (H200) the GPT-3 175B TP 4 layer's 12 GEMMs timed steady in calibration/h200x1-fp8lease61-2026-12-02/runs_b.
Prints mean |error| and mean error per set. The GEMM time is the card's own (GpuParams.gemm_time_s); only fp8 samples are
read, so moving the shared k ramp moves nothing else here.
    python studies/fp8_ramp_probe.py
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from scipy.optimize import least_squares  # noqa: E402

from simcluster.fit.gpu import gemm_in_fit  # noqa: E402
from simcluster.hardware.gpu import load_gpu  # noqa: E402
from simcluster.script_args import ArgumentParser  # noqa: E402
from simcluster.traces import gpu_micro  # noqa: E402
from simcluster.traces.gpu_micro import GemmSample  # noqa: E402

CAL = ROOT / "calibration"
CARDS = {"h100-sxm": CAL / "h100x1-gpu-fp8-2026-11-23", "h200-sxm": CAL / "h200x1-gpu-fp8-2026-11-23"}
GPT3 = CAL / "h200x1-fp8lease61-2026-12-02" / "runs_b" / "shapes-cool.json"


def with_curve(card, eff: float, ramp: float):
    return replace(card, gemm_efficiency={**card.gemm_efficiency, "fp8": eff}, gemm_k_ramp=ramp)


def errors(card, samples) -> list[float]:
    return [card.gemm_time_s(s.m, s.n, s.k, "fp8", s.batch) / s.time_s - 1 for s in samples]


def fit(card, samples, free_ramp: bool):
    def resid(x):
        return [math.log(1 + e) for e in errors(with_curve(card, x[0], x[1] if free_ramp else card.gemm_k_ramp), samples)]
    x0, lo, hi = ([0.6, card.gemm_k_ramp], [0.05, 0.0], [1.0, 8192.0]) if free_ramp else ([0.6], [0.05], [1.0])
    x = least_squares(resid, x0, bounds=(lo, hi)).x
    return with_curve(card, x[0], x[1] if free_ramp else card.gemm_k_ramp)


def gpt3_samples() -> list[GemmSample]:
    doc = json.loads(GPT3.read_text())
    return [GemmSample(r["m"], r["n"], r["k"], 1, "fp8", r["time_s"], r["role"], r["condition"]) for r in doc["gemm"]
            if r["dtype"] == "fp8" and r["condition"] == "back-to-back" and r["role"].startswith("gpt3-")]


def main() -> None:
    ArgumentParser(prog="fp8_ramp_probe.py", description=__doc__.splitlines()[0]).parse_args()
    for name, bundle in CARDS.items():
        card = load_gpu(ROOT / "models" / "gpu" / f"{name}.yaml")[0]
        trace = gpu_micro.parse(bundle / "gpu-micro" / "gpu-micro" / "stdout.txt")
        b2b = [s for s in trace.gemm if s.dtype == "fp8" and s.condition == "back-to-back"]
        sets = {"fit set": [s for s in b2b if gemm_in_fit(s)],
                "held-out layers": [s for s in b2b if s.role.startswith("layer-") and not gemm_in_fit(s)],
                "squares, MLP-up": [s for s in b2b if not s.role.startswith("layer-")]}
        if name == "h200-sxm":
            sets["GPT-3 layer (lease61b)"] = gpt3_samples()
        for label, free in (("today (shared k ramp)", False), ("own fp8 k ramp", True)):
            curve = fit(card, sets["fit set"], free)
            print(f"{name} {label}: fp8 efficiency {curve.gemm_efficiency['fp8']:.4f}, k ramp {curve.gemm_k_ramp:.1f}")
            for set_name, samples in sets.items():
                e = np.array(errors(curve, samples))
                print(f"    {set_name:24s} n {len(e):3d}  mean |error| {np.mean(np.abs(e)):5.1%}  mean {np.mean(e):+6.1%}")


if __name__ == "__main__":
    main()
