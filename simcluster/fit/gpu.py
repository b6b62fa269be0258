"""Fit a GPU card from a gpu-micro trace (scipy least squares on log time), and validate it on held-out shapes.

The card's datasheet part (peak FLOP/s per precision, HBM capacity and peak, SM count) comes from DATASHEETS
by the device name gpu-micro recorded; everything else is fitted, each op class on its own:

  launch        the median back-to-back time of a one-element kernel (measured, not fitted)
  memory        hbm_bandwidth, ramp_bytes: copy kernels of every size (add and scale are held out)
  gemm (bf16)   efficiency, k_ramp, wave_weight, gemm_launch, for each tile shape of TILES (the best fit wins):
                the square, projection (N = K = h) and MLP up (N = ffn, K = h) GEMMs; MLP down (K = ffn) and
                weight-gradient GEMMs (K = tokens) are held out
  gemm (fp8)    efficiency only (the bf16 shape parameters carried): squares; the MLP-up fp8 GEMMs held out
  gemm (tf32)   efficiency only: squares (no held-out set)
  attention     per pass (forward; backward = forward+backward - forward): top efficiency per head_dim and
                seq_half, and the backward's GQA bytes, fitted on every head configuration at seq 512, 2048,
                8192; seq 1024 and 4096 held out (the GQA term needs MHA and GQA in the fit to be identified)

`fit_gpu` returns the params fitted on the fit set only, so the held-out error in `validate` is a real
prediction error. `python -m simcluster.fit.gpu validate TRACE [--card CARD]` prints that table; with a card,
the rows it was fitted on are decided by the card's provenance (`card_saw_trace`: the sha256 of every trace it
was fitted on), never by a flag.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
from dataclasses import dataclass, replace

import numpy as np
from scipy.optimize import least_squares

from simcluster.errors import CalibrationError, SimclusterError
from simcluster.hardware.gpu import GpuParams
from simcluster.traces.gpu_micro import AttentionSample, GemmSample, GpuMicroTrace, MemorySample

TILES = ((128, 128), (128, 256), (256, 128))
GEMM_FIT_ROLES = {"bf16": ("square", "proj", "mlp_up"), "fp8": ("square",), "fp32": ("square-tf32",)}
ATTN_FIT_SEQS = (512, 2048, 8192)
MEMORY_FIT_OPS = ("copy",)
BASE_KEY = "gpu_micro_base"   # a bundle manifest key: the gpu-micro trace whose attention, memory and launch the card takes


@dataclass(frozen=True)
class Datasheet:
    name: str
    peak_flops: dict[str, float]
    hbm_peak_Bps: float
    hbm_capacity_bytes: float
    sm_count: int
    source: str


DATASHEETS = {
    "h100-sxm": Datasheet("h100-sxm", {"bf16": 989.4e12, "fp16": 989.4e12, "fp8": 1978.9e12, "fp32": 494.7e12}, 3.35e12, 80e9, 132,
                          "NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column (dense = half the sparsity figures): "
                          "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet"),
    "h200-sxm": Datasheet("h200-sxm", {"bf16": 989.4e12, "fp16": 989.4e12, "fp8": 1978.9e12, "fp32": 494.7e12}, 4.8e12, 141e9, 132,
                          "NVIDIA H200 Tensor Core GPU product page / datasheet, H200 SXM column (dense = half the sparsity "
                          "figures): https://www.nvidia.com/en-us/data-center/h200/"),
    "a100-sxm-80gb": Datasheet("a100-sxm-80gb", {"bf16": 312e12, "fp16": 312e12, "fp32": 156e12}, 2.039e12, 80e9, 108,
                               "NVIDIA A100 Tensor Core GPU datasheet, A100 80GB SXM column (dense figures; no FP8): "
                               "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
                               "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf"),
    "b200": Datasheet("b200", {"bf16": 2.25e15, "fp16": 2.25e15, "fp8": 4.5e15, "fp32": 1.125e15}, 8.0e12, 180e9, 148,
                      "NVIDIA HGX B200 specifications (8 GPUs: FP8 72 PFLOPS, BF16 36 PFLOPS, TF32 18 PFLOPS with "
                      "sparsity, 64 TB/s HBM3e, 1.4 TB): per GPU dense = total / 8 / 2; https://www.nvidia.com/en-us/data-center/hgx/"),
}


def datasheet_for(device_name: str) -> Datasheet:
    """The datasheet of a device name as torch reports it ('NVIDIA H100 80GB HBM3', 'NVIDIA H200')."""
    name = device_name.lower()
    if not any(form in name for form in ("pcie", "nvl", "40gb", "h800", "a800")):   # other parts share the family name
        for key, sheet in (("h200", "h200-sxm"), ("h100", "h100-sxm"), ("a100", "a100-sxm-80gb"), ("b200", "b200")):
            if key in name:
                return DATASHEETS[sheet]
    raise CalibrationError(f"no datasheet for device {device_name!r}", hint=f"known: {', '.join(DATASHEETS)} (SXM parts)")


# --- the fit / held-out split ------------------------------------------------------------------------------
def gemm_in_fit(s: GemmSample) -> bool:
    return s.role in GEMM_FIT_ROLES.get(s.dtype, ())


def attention_in_fit(s: AttentionSample) -> bool:
    return s.seq_kv in ATTN_FIT_SEQS


def memory_in_fit(s: MemorySample) -> bool:
    return s.op in MEMORY_FIT_OPS


@dataclass(frozen=True)
class AttentionPass:
    """One attention measurement as the model sees it: forward, or backward alone (fwd_bwd - fwd)."""
    sample: AttentionSample
    backward: bool
    time_s: float


def attention_passes(samples: list[AttentionSample]) -> list[AttentionPass]:
    fwd = {_attn_key(s): s for s in samples if s.mode == "fwd"}
    out = [AttentionPass(s, False, s.time_s) for s in fwd.values()]
    for s in samples:
        f = fwd.get(_attn_key(s))
        if s.mode == "fwd_bwd" and f is not None and s.time_s > f.time_s:
            out.append(AttentionPass(s, True, s.time_s - f.time_s))
    return out


def _attn_key(s: AttentionSample) -> tuple:
    return (s.batch, s.heads, s.kv_heads, s.seq_q, s.seq_kv, s.head_dim, s.causal, s.dtype)


# --- fits --------------------------------------------------------------------------------------------------
def _solve(residuals, x0, lower, upper, what: str):
    res = least_squares(residuals, np.asarray(x0, float), bounds=(np.asarray(lower, float), np.asarray(upper, float)),
                        method="trf", x_scale="jac", max_nfev=5000)
    if not res.success:
        raise CalibrationError(f"{what}: the least-squares fit did not converge ({res.message})")
    return [float(v) for v in res.x], float(res.cost)


def fit_memory(p: GpuParams, samples: list[MemorySample]) -> GpuParams:
    pts = [s for s in samples if not s.reference_only and memory_in_fit(s)]
    if len(pts) < 3:
        raise CalibrationError(f"memory: {len(pts)} copy samples, need >= 3")
    b = np.array([s.bytes_moved for s in pts])
    t = np.array([s.time_s for s in pts])

    def model(x):
        bw, ramp = math.exp(x[0]), math.exp(x[1])
        return np.maximum(p.launch_s, (b + ramp) / bw)

    big = max(pts, key=lambda s: s.bytes_moved)
    x, _ = _solve(lambda x: np.log(model(x) / t), [math.log(big.bytes_moved / big.time_s), math.log(2**20)],
                  [math.log(1e9), math.log(1.0)], [math.log(1e14), math.log(2**34)], "memory")
    return replace(p, hbm_bandwidth_Bps=math.exp(x[0]), memory_ramp_bytes=math.exp(x[1]))


def _gemm_residuals(p: GpuParams, pts: list[GemmSample]):
    t = np.array([s.time_s for s in pts])
    return lambda q: np.log(np.array([q.gemm_time_s(s.m, s.n, s.k, s.dtype, s.batch) for s in pts]) / t)


def fit_gemm(p: GpuParams, samples: list[GemmSample]) -> GpuParams:
    """bf16 shape parameters (best tile shape of TILES), then the efficiency of every other precision."""
    bf16 = [s for s in samples if s.dtype == "bf16" and gemm_in_fit(s)]
    if len(bf16) < 5:
        raise CalibrationError(f"gemm: {len(bf16)} bf16 samples in the fit set, need >= 5")
    best = None
    for tm, tn in TILES:
        def with_x(x, tm=tm, tn=tn):
            return replace(p, tile_m=tm, tile_n=tn, gemm_efficiency={**p.gemm_efficiency, "bf16": x[0]}, gemm_k_ramp=x[1],
                           wave_weight=x[2], gemm_launch_s=x[3] * 1e-6)
        resid = _gemm_residuals(p, bf16)
        x, cost = _solve(lambda x, w=with_x, r=resid: r(w(x)), [0.75, 64.0, 0.5, 10.0], [0.05, 0.0, 0.0, 0.5],
                         [1.0, 4096.0, 1.0, 200.0], f"gemm bf16 tile {tm}x{tn}")
        if best is None or cost < best[0]:
            best = (cost, with_x(x))
    p = best[1]
    for dtype in sorted({s.dtype for s in samples} - {"bf16"}):
        pts = [s for s in samples if s.dtype == dtype and gemm_in_fit(s)]
        if not pts or dtype not in p.peak_flops:
            continue
        resid = _gemm_residuals(p, pts)

        def with_eff(x, dtype=dtype, p=p):
            return replace(p, gemm_efficiency={**p.gemm_efficiency, dtype: x[0]})
        x, _ = _solve(lambda x, w=with_eff, r=resid: r(w(x)), [0.7], [0.05], [1.0], f"gemm {dtype}")
        p = with_eff(x)
    if "fp16" in p.peak_flops and "fp16" not in {s.dtype for s in samples}:
        p = replace(p, gemm_efficiency={**p.gemm_efficiency, "fp16": p.gemm_efficiency["bf16"]})
    return p


def fit_attention(p: GpuParams, samples: list[AttentionSample]) -> GpuParams:
    passes = [a for a in attention_passes(samples) if attention_in_fit(a.sample)]
    for backward in (False, True):
        pts = [a for a in passes if a.backward == backward]
        dims = sorted({a.sample.head_dim for a in pts})
        if len(pts) < len(dims) + 1:
            raise CalibrationError(f"attention {'backward' if backward else 'forward'}: {len(pts)} samples in the fit set")
        t = np.array([a.time_s for a in pts])

        def with_x(x, dims=dims, backward=backward, p=p):
            table = dict(zip(dims, (float(v) for v in x[1:1 + len(dims)]), strict=True))
            if backward:
                return replace(p, attn_efficiency_bwd=table, attn_seq_half_bwd=float(x[0]), attn_gqa_bytes=float(x[-1]))
            return replace(p, attn_efficiency_fwd=table, attn_seq_half_fwd=float(x[0]))

        def resid(x, pts=pts, t=t, with_x=with_x):
            q = with_x(x)
            return np.log(np.array([q.attention_time_s(a.sample.batch, a.sample.heads, a.sample.kv_heads, a.sample.seq_q,
                                                       a.sample.seq_kv, a.sample.head_dim, a.sample.causal, a.backward,
                                                       a.sample.dtype) for a in pts]) / t)
        gqa = [4.0] if backward else []          # bytes per element of the backward's per-query-head dK/dV
        x, _ = _solve(resid, [500.0] + [0.6] * len(dims) + gqa, [0.0] + [0.01] * len(dims) + [0.0] * len(gqa),
                      [1e5] + [1.0] * len(dims) + [64.0] * len(gqa), f"attention {'backward' if backward else 'forward'}")
        p = with_x(x)
    return p


def fit_gpu(trace: GpuMicroTrace, name: str | None = None, gemm_trace: GpuMicroTrace | None = None) -> GpuParams:
    """A GPU card's params from one gpu-micro trace, fitted on the fit set only (module docstring); with
    `gemm_trace`, the GEMM curves from that trace instead (its interleaved condition: BASE_KEY)."""
    gemm_from = gemm_trace or trace
    if gemm_from.quick:
        raise CalibrationError("a --quick gpu-micro trace has toy sizes only; calibrate from a full run", where=gemm_from.path)
    if trace.quick:
        raise CalibrationError("a --quick gpu-micro trace has toy sizes only; calibrate from a full run", where=trace.path)
    if trace.launch_s <= 0:
        raise CalibrationError("the trace has no launch measurement", where=trace.path)
    sheet = datasheet_for(trace.device_name)
    sm = int(trace.device.get("sm_count") or sheet.sm_count)
    capacity = float(trace.device.get("memory_bytes") or sheet.hbm_capacity_bytes)   # what the driver reports, not the label
    p = GpuParams(name or sheet.name, dict(sheet.peak_flops), sheet.hbm_peak_Bps * 0.9, capacity, trace.launch_s,
                  sm_count=sm, hbm_peak_Bps=sheet.hbm_peak_Bps)
    try:
        p = fit_memory(p, trace.memory)
        p = fit_attention(p, trace.attention)
    except CalibrationError as exc:
        raise CalibrationError(exc.message, where=trace.path, hint=exc.hint) from None
    try:
        return fit_gemm(p, [s for s in gemm_from.gemm if s.condition == gemm_from.gemm_condition])
    except CalibrationError as exc:
        raise CalibrationError(exc.message, where=gemm_from.path, hint=exc.hint) from None


def carry(measured: GpuParams, sheet: Datasheet) -> GpuParams:
    """A datasheet GPU with a measured card's curves: peaks, SM count, capacity and HBM peak from the datasheet;
    achievable HBM bandwidth = datasheet peak x the measured card's achievable / peak; GEMM, attention and
    memory curves (fractions of peak, ramps, tile shape, launch floors) as measured. Precisions the measured card
    has no efficiency for take its bf16 efficiency."""
    eff = {d: measured.gemm_efficiency.get(d, measured.gemm_efficiency["bf16"]) for d in sheet.peak_flops}
    ratio = measured.hbm_bandwidth_Bps / (measured.hbm_peak_Bps or measured.hbm_bandwidth_Bps)
    return replace(measured, name=sheet.name, peak_flops=dict(sheet.peak_flops), hbm_bandwidth_Bps=sheet.hbm_peak_Bps * ratio,
                   hbm_capacity_bytes=sheet.hbm_capacity_bytes, sm_count=sheet.sm_count, gemm_efficiency=eff,
                   hbm_peak_Bps=sheet.hbm_peak_Bps)


def carried_card(measured: GpuParams, measured_path: str, sheet: Datasheet, carry_error: str = "") -> dict:
    from simcluster.hardware.gpu import gpu_params_yaml

    p = carry(measured, sheet)
    return {"kind": "gpu", "name": p.name,
            "description": f"{sheet.name} FROM ITS DATASHEET, NOT MEASURED: peak FLOP/s, HBM peak and capacity, SM count from "
                           f"{sheet.source}. Efficiency curves (GEMM, attention, memory-bound), the achievable / peak HBM ratio "
                           f"and the launch floors are carried from the measured Hopper card {measured_path} "
                           f"(simcluster.fit.gpu.carry). {carry_error}".strip(),
            "params": gpu_params_yaml(p),
            "provenance": {"datasheet": sheet.source, "curves_from": measured_path}}


# --- validation --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Row:
    op: str             # gemm-bf16, gemm-fp8, gemm-fp32, attention-fwd, attention-bwd, memory-<op>
    shape: str
    measured_s: float
    predicted_s: float
    in_fit: bool

    @property
    def error(self) -> float:
        return self.predicted_s / self.measured_s - 1.0


def validate(p: GpuParams, trace: GpuMicroTrace, split: bool = True, sections: tuple[str, ...] = ("gemm", "attention", "memory")) -> list[Row]:
    """Predicted vs measured for every sample of `sections`; `in_fit` marks the fit set (False everywhere with
    split=False: a trace the card never saw)."""
    rows: list[Row] = []
    for s in trace.gemm if "gemm" in sections else []:
        if s.dtype in p.peak_flops:   # the other condition's rows: never fitted, named apart
            fitted = s.condition == trace.gemm_condition
            rows.append(Row(f"gemm-{s.dtype}" + ("" if fitted else f" {s.condition}"), f"{s.role} {s.m}x{s.n}x{s.k}", s.time_s,
                            p.gemm_time_s(s.m, s.n, s.k, s.dtype, s.batch), split and fitted and gemm_in_fit(s)))
    for a in attention_passes(trace.attention) if "attention" in sections else []:
        s = a.sample
        rows.append(Row("attention-bwd" if a.backward else "attention-fwd", f"h{s.heads}/kv{s.kv_heads} d{s.head_dim} s{s.seq_kv} b{s.batch}",
                        a.time_s, p.attention_time_s(s.batch, s.heads, s.kv_heads, s.seq_q, s.seq_kv, s.head_dim, s.causal, a.backward, s.dtype),
                        split and attention_in_fit(s)))
    for s in trace.memory if "memory" in sections else []:
        rows.append(Row(f"memory-{s.op}", f"{s.bytes_moved / 2**20:.4g}MiB", s.time_s, p.memory_time_s(s.bytes_moved),
                        split and memory_in_fit(s) and not s.reference_only))
    return rows


LONG_S = 50e-6   # ops measured at >= 50 us are past the host's issue floor: the device model alone


def summary(rows: list[Row]) -> list[dict]:
    """Mean and max |error| per op class, fit set and held out apart, and the held-out ops of >= 50 us alone."""
    out = []
    for op in sorted({r.op for r in rows}):
        for label, keep in (("fit", lambda r: r.in_fit), ("held out", lambda r: not r.in_fit),
                            ("held out >= 50us", lambda r: not r.in_fit and r.measured_s >= LONG_S)):
            errs = [abs(r.error) for r in rows if r.op == op and keep(r)]
            if errs:
                out.append({"op": op, "set": label, "n": len(errs),
                            "mean_abs_error": round(statistics.fmean(errs), 4), "max_abs_error": round(max(errs), 4)})
    return out


def summary_table(rows: list[Row]) -> str:
    lines = ["| op | set | n | mean abs error | max abs error |", "| --- | --- | --- | --- | --- |"]
    lines += [f"| {s['op']} | {s['set']} | {s['n']} | {100 * s['mean_abs_error']:.1f}% | {100 * s['max_abs_error']:.1f}% |"
              for s in summary(rows)]
    return "\n".join(lines) + "\n"


def same_gpu(card_name: str, device_name: str) -> bool:
    """Whether a card's name ('h100-sxm', 'h200-sxm-interleaved') names the trace's GPU ('NVIDIA H100 80GB HBM3')."""
    import re

    model = re.match(r"[a-z]+\d+", card_name.lower())
    return bool(model) and model.group(0) in device_name.lower().replace(" ", "")


def card_saw_trace(card: dict, card_path, trace_sha256: str, _depth: int = 0) -> bool:
    """Whether a GPU card was fitted on the trace with this sha256, from the card's provenance alone: its
    `traces` (path + sha256 of every gpu-micro log it was fitted on) or, for a carried card, those of the card
    its curves came from (`curves_from`, a path relative to the repository or to the card). A card without
    provenance is an error: held out cannot be decided."""
    from pathlib import Path

    from simcluster.hardware.gpu import load_gpu

    prov = card.get("provenance") or {}
    if "traces" in prov:
        return any(t.get("sha256") == trace_sha256 for t in prov["traces"] or [])
    source = prov.get("curves_from")
    if source and _depth < 4:
        here = Path(card_path).resolve().parent
        candidates = [Path(source), *(parent / source for parent in here.parents), here / Path(source).name]
        found = next((c for c in candidates if c.is_file()), None)
        if found is None:
            raise SimclusterError(f"provenance.curves_from: {source} not found", where=str(card_path))
        return card_saw_trace(load_gpu(found)[1], found, trace_sha256, _depth + 1)
    raise SimclusterError("provenance: neither traces nor curves_from; cannot tell which traces the card was fitted on",
                          where=str(card_path))


def main(argv: list[str] | None = None) -> int:
    from simcluster.cards import dump_card
    from simcluster.hardware.gpu import load_gpu
    from simcluster.traces import gpu_micro

    ap = argparse.ArgumentParser(prog="python -m simcluster.fit.gpu", description="GPU cards: held-out error, datasheet cards")
    sub = ap.add_subparsers(dest="command", required=True)
    v = sub.add_parser("validate", help="error of a card (or of a fit on the trace's fit set) on a gpu-micro trace")
    v.add_argument("trace", help="a gpu-micro stdout.txt")
    v.add_argument("--card", help="a gpu card; without it the card is fitted on the trace's fit set")
    v.add_argument("--rows", action="store_true", help="print every shape, not only the summary")
    c = sub.add_parser("carry", help="a datasheet GPU's card with a measured card's curves")
    c.add_argument("card", help="the measured gpu card")
    c.add_argument("datasheet", choices=sorted(DATASHEETS), help="the target GPU")
    c.add_argument("--note", default="", help="a sentence on how well carrying did (appended to the description)")
    c.add_argument("--published", help="scale the curves by published target / reference efficiency (fit/gpu_published.py)")
    c.add_argument("--fp8-reference", help="the published GPU whose fp8 figure the target's is compared with")
    args = ap.parse_args(argv)
    try:
        if args.command == "carry":
            measured = load_gpu(args.card)[0]
            if args.published:
                from simcluster.fit.gpu_published import published_card
                card = published_card(measured, args.card, args.published, args.datasheet, measured.name, args.fp8_reference)
            else:
                card = carried_card(measured, args.card, DATASHEETS[args.datasheet], args.note)
            sys.stdout.write(dump_card(card))
            return 0
        trace = gpu_micro.parse(args.trace)
        if args.card:
            params, card = load_gpu(args.card)
            saw = card_saw_trace(card, args.card, trace.sha256)
        else:
            params, saw = fit_gpu(trace), True
    except SimclusterError as exc:
        print(f"error: {exc.one_line()}", file=sys.stderr)
        return 2
    said = "the card was fitted on this trace: its fit-set rows are marked fit" if saw else \
        "the card never saw this trace (its provenance): every row is held out"
    print(f"# {said}")
    if args.card and not same_gpu(str(card.get("name", "")), trace.device_name):
        print(f"# warning: the card is for {card.get('name')}, the trace ran on {trace.device_name}: "
              "this is a cross-GPU prediction, not the card's error", file=sys.stderr)
    rows = validate(params, trace, split=saw)
    if args.rows:
        for r in rows:
            print(f"{r.op:>14} {r.shape:<34} measured {r.measured_s * 1e6:10.1f}us predicted {r.predicted_s * 1e6:10.1f}us "
                  f"{100 * r.error:+6.1f}% {'fit' if r.in_fit else 'held out'}")
    sys.stdout.write(summary_table(rows))
    return 0



# --- cards -------------------------------------------------------------------------------------------------
def gpu_card(params: GpuParams, trace: GpuMicroTrace, provenance: dict, gemm_trace: GpuMicroTrace | None = None) -> dict:
    """A `kind: gpu` card fitted from one gpu-micro trace (GEMMs from `gemm_trace` where given), with its
    held-out error summary."""
    from simcluster.hardware.gpu import gpu_params_yaml

    sheet = datasheet_for(trace.device_name)
    if gemm_trace is None:
        rows = validate(params, trace, split=True)
    else:
        rows = validate(params, trace, True, ("attention", "memory")) + validate(params, gemm_trace, True, ("gemm",))
    gemm_from = gemm_trace or trace
    return {
        "kind": "gpu", "name": params.name,
        "description": f"{trace.device_name} measured with gpu-micro (torch {trace.torch}, CUDA {trace.cuda}): GEMM, attention, "
                       f"memory-bound and launch curves fitted by simcluster.fit.gpu on its fit set (GEMMs {gemm_from.gemm_condition}"
                       f"{', from ' + gemm_from.path if gemm_trace else ''}); peak FLOP/s, HBM peak "
                       f"and capacity from the datasheet ({sheet.source}).",
        "params": gpu_params_yaml(params),
        "valid_range": {"gemm": "bf16 M, N, K 256..28672 (tokens 512..16384); fp8 1024..28672; tf32 2048..8192",
                        "attention": "causal SDPA (flash), seq 512..8192, head_dim 64..128, MHA and GQA, bf16",
                        "memory": "256KiB..8GiB moved per kernel; single-kernel elementwise ops",
                        "launch": "eager-mode issue floor of this host and driver (the GPU's own launch cost is lower)"},
        "fit": {"method": "scipy least_squares on log(time), one op class at a time (simcluster/fit/gpu.py)",
                "fit_set": {"gemm": {k: list(v) for k, v in GEMM_FIT_ROLES.items()},
                            "attention": f"every head configuration at seq {list(ATTN_FIT_SEQS)}", "memory": list(MEMORY_FIT_OPS)},
                "held_out": "every other sample of the trace (gemm mlp_down, wgrad, fp8 mlp_up; attention at seq 1024, "
                            "4096; memory add, scale; rms_norm for reference)",
                "error": summary(rows)},
        "provenance": {**provenance, "device": trace.device, "torch": trace.torch, "cuda": trace.cuda, "clocks": trace.clocks,
                       "datasheet": sheet.source},
    }


def bundle_cards(bundle, runs: list[dict], manifest: dict) -> dict[str, dict]:
    """`gpu-<card name>.yaml` for the gpu-micro run(s) of a bundle (`simcluster calibrate BUNDLE`)."""
    import datetime as _dt
    from pathlib import Path

    from simcluster import __version__
    from simcluster.traces import gpu_micro

    cards = {}
    for run in runs:
        if run.get("tool") != "gpu-micro":
            continue
        path = Path(bundle) / run["path"] / "stdout.txt"
        trace, gemm_trace = gpu_micro.parse(path), None
        if manifest.get(BASE_KEY):   # this bundle's GEMMs; attention, memory and launch from the base bundle's trace
            gemm_trace, base = trace, Path(manifest[BASE_KEY])
            trace = gpu_micro.parse(base if base.is_file() else Path(os.path.normpath(Path(bundle) / base)))
        sheet = datasheet_for(trace.device_name)
        params = fit_gpu(trace, f"{sheet.name}-{gemm_trace.gemm_condition}" if gemm_trace else None, gemm_trace)
        used = [trace] + ([gemm_trace] if gemm_trace else [])
        provenance = {"simcluster_version": __version__, "fitted_at": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                      "bundle": str(bundle), "host": {k: manifest.get("host", {}).get(k) for k in ("hostname", "cpu_model", "cores")},
                      "traces": [{"path": t.path, "sha256": t.sha256} for t in used],
                      "gemm_condition": (gemm_trace or trace).gemm_condition}
        cards[f"gpu-{params.name}.yaml"] = gpu_card(params, trace, provenance, gemm_trace)
    return cards


if __name__ == "__main__":
    sys.exit(main())
