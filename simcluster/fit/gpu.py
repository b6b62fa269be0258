"""Fit a GPU card from a gpu-micro trace (scipy least squares on log time), and validate it on held-out shapes.

The card's datasheet part (peak FLOP/s per precision, HBM capacity and peak, SM count) comes from DATASHEETS
by the device name gpu-micro recorded; everything else is fitted, each op class on its own:

  launch        the median back-to-back time of a one-element kernel (measured, not fitted)
  memory        hbm_bandwidth, ramp_bytes: copy kernels of every size (add and scale are held out)
  gemm (bf16)   efficiency, k_ramp, wave_weight, gemm_launch (and call_time on an interleaved GEMM trace, whose curve
                has the epilogue write: hardware/gpu.py), for each tile shape of TILES (the best fit wins):
                the square, projection (N = K = h) and MLP up (N = ffn, K = h) GEMMs; MLP down (K = ffn) and
                weight-gradient GEMMs (K = tokens) are held out
  gemm (fp8)    efficiency only (the bf16 shape parameters carried), on the fp8 layer GEMMs
                (gpu-micro's fp8-layers section, from the bundle's FP8_KEY trace where it names one): every layer shape
                except those of hidden FP8_HELD_HIDDEN or tokens FP8_HELD_TOKENS, which are held out with the fp8 squares
                and MLP-up shapes; a trace without layer records (the first bundles) fits the efficiency on its squares
  gemm (tf32)   efficiency only: squares (no held-out set)
  attention     per pass (forward; backward = forward+backward - forward): top efficiency per head_dim and
                seq_half, and the backward's GQA bytes, fitted on every head configuration at seq 512, 2048,
                8192; seq 1024 and 4096 held out (the GQA term needs MHA and GQA in the fit to be identified)

`fit_gpu` returns the params fitted on the fit set only, so the held-out error in fit/gpu_validate.py's
`validate` is a real prediction error; fit/gpu_card.py's `gpu_card` and `bundle_cards` write the fitted card with that error.
`python -m simcluster.fit.gpu_validate validate TRACE [--card CARD]` prints the table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from scipy.optimize import least_squares

from simcluster.errors import CalibrationError
from simcluster.hardware.gpu import GpuParams
from simcluster.traces.gpu_micro import AttentionSample, GemmSample, GpuMicroTrace, MemorySample

TILES = ((128, 128), (128, 256), (256, 128))
GEMM_FIT_ROLES = {"bf16": ("square", "proj", "mlp_up"), "fp8": ("square",), "fp32": ("square-tf32",)}
FP8_HELD_HIDDEN = (4096,)    # fp8 layer GEMMs held out: every shape of the Llama-8B layer (new N, K pairs) ...
FP8_HELD_TOKENS = (4096,)    # ... and every layer at 4096 tokens (a new M, or K for the weight gradients)
ATTN_FIT_SEQS = (512, 2048, 8192)
MEMORY_FIT_OPS = ("copy",)
BASE_KEY = "gpu_micro_base"   # a bundle manifest key: the gpu-micro trace whose attention, memory and launch the card takes
FP8_KEY = "gpu_micro_fp8"     # a bundle manifest key: the gpu-micro trace whose fp8 layer GEMMs give the card's fp8 curve


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
def gemm_in_fit(s: GemmSample, fp8_layers: bool = True) -> bool:
    """Whether a GEMM sample is in the fit set; fp8: the layer GEMMs (bar the held-out hidden and tokens) where the
    samples have them (`fp8_layers`: has_fp8_layers), else the squares (the first bundles)."""
    if s.dtype == "fp8" and fp8_layers:
        return s.role.startswith("layer-") and s.hidden not in FP8_HELD_HIDDEN and s.tokens not in FP8_HELD_TOKENS
    return s.role in GEMM_FIT_ROLES.get(s.dtype, ())


def has_fp8_layers(samples: list[GemmSample]) -> bool:
    return any(s.dtype == "fp8" and s.role.startswith("layer-") for s in samples)


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


def fit_gemm(p: GpuParams, samples: list[GemmSample], call_time: bool = False) -> GpuParams:
    """bf16 shape parameters (best tile shape of TILES; with `call_time`, a fixed time per call too), then the efficiency
    of every other precision."""
    bf16 = [s for s in samples if s.dtype == "bf16" and gemm_in_fit(s)]
    if len(bf16) < 5:
        raise CalibrationError(f"gemm: {len(bf16)} bf16 samples in the fit set, need >= 5")
    best = None
    call = 1 if call_time else 0
    for tm, tn in TILES:
        def with_x(x, tm=tm, tn=tn):
            return replace(p, tile_m=tm, tile_n=tn, gemm_efficiency={**p.gemm_efficiency, "bf16": x[0]}, gemm_k_ramp=x[1],
                           wave_weight=x[2], gemm_launch_s=x[3] * 1e-6, gemm_call_s=x[4] * 1e-6 if call else 0.0)
        resid = _gemm_residuals(p, bf16)
        x, cost = _solve(lambda x, w=with_x, r=resid: r(w(x)), [0.75, 64.0, 0.5, 10.0] + [2.0] * call,
                         [0.05, 0.0, 0.0, 0.5] + [0.0] * call, [1.0, 4096.0, 1.0, 200.0] + [50.0] * call,
                         f"gemm bf16 tile {tm}x{tn}")
        if best is None or cost < best[0]:
            best = (cost, with_x(x))
    p = best[1]
    for dtype in sorted({s.dtype for s in samples} - {"bf16"}):
        pts = [s for s in samples if s.dtype == dtype and gemm_in_fit(s, has_fp8_layers(samples))]
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


def gemm_samples(gemm_from: GpuMicroTrace, fp8_trace: GpuMicroTrace | None) -> list[GemmSample]:
    """The GEMM samples a card is fitted on: `gemm_from`'s of its condition, the fp8 ones from `fp8_trace` where given
    (its records of the same condition)."""
    cond = gemm_from.gemm_condition
    if fp8_trace is None:
        return [s for s in gemm_from.gemm if s.condition == cond]
    return [s for s in gemm_from.gemm if s.condition == cond and s.dtype != "fp8"] + \
        [s for s in fp8_trace.gemm if s.condition == cond and s.dtype == "fp8"]


def fit_gpu(trace: GpuMicroTrace, name: str | None = None, gemm_trace: GpuMicroTrace | None = None,
            fp8_trace: GpuMicroTrace | None = None) -> GpuParams:
    """A GPU card's params from one gpu-micro trace, fitted on the fit set only (module docstring); with
    `gemm_trace`, the GEMM curves from that trace instead (its interleaved condition: BASE_KEY); with `fp8_trace`,
    the fp8 curve from that trace's records of the same condition (FP8_KEY); `epilogue`: the GEMM curve with the
    output tiles' write at the HBM rate (hardware/gpu.py, gemm.epilogue: hbm), fitted with it."""
    gemm_from = gemm_trace or trace
    for t in (gemm_from, trace, fp8_trace):
        if t is not None and t.quick:
            raise CalibrationError("a --quick gpu-micro trace has toy sizes only; calibrate from a full run", where=t.path)
    if trace.launch_s <= 0:
        raise CalibrationError("the trace has no launch measurement", where=trace.path)
    sheet = datasheet_for(trace.device_name)
    sm = int(trace.device.get("sm_count") or sheet.sm_count)
    capacity = float(trace.device.get("memory_bytes") or sheet.hbm_capacity_bytes)   # what the driver reports, not the label
    interleaved = gemm_from.gemm_condition == "interleaved"
    p = GpuParams(name or sheet.name, dict(sheet.peak_flops), sheet.hbm_peak_Bps * 0.9, capacity, trace.launch_s,
                  sm_count=sm, hbm_peak_Bps=sheet.hbm_peak_Bps, gemm_epilogue=interleaved)
    try:
        p = fit_memory(p, trace.memory)
        p = fit_attention(p, trace.attention)
    except CalibrationError as exc:
        raise CalibrationError(exc.message, where=trace.path, hint=exc.hint) from None
    try:
        return fit_gemm(p, gemm_samples(gemm_from, fp8_trace), call_time=interleaved)
    except CalibrationError as exc:
        raise CalibrationError(exc.message, where=gemm_from.path, hint=exc.hint) from None


def carry(measured: GpuParams, sheet: Datasheet) -> GpuParams:
    """A datasheet GPU with a measured card's curves: peaks, SM count, capacity and HBM peak from the datasheet;
    achievable HBM bandwidth = datasheet peak x the measured card's achievable / peak; GEMM, attention and
    memory curves (fractions of peak, ramps, tile shape, launch floors) as measured. Precisions the measured card
    has no efficiency for take its bf16 efficiency. The clock block, the attention dropout rates and the compute / NCCL
    interference (comm_overlap) are not carried (another GPU's power, clocks, random-number rate and SM sharing with NCCL
    were never measured here): the carried curves keep the measured card's fitted condition, and neither dropout inside
    attention nor interference is priced on the carried card."""
    eff = {d: measured.gemm_efficiency.get(d, measured.gemm_efficiency["bf16"]) for d in sheet.peak_flops}
    ratio = measured.hbm_bandwidth_Bps / (measured.hbm_peak_Bps or measured.hbm_bandwidth_Bps)
    return replace(measured, name=sheet.name, peak_flops=dict(sheet.peak_flops), hbm_bandwidth_Bps=sheet.hbm_peak_Bps * ratio,
                   hbm_capacity_bytes=sheet.hbm_capacity_bytes, sm_count=sheet.sm_count, gemm_efficiency=eff,
                   hbm_peak_Bps=sheet.hbm_peak_Bps, clock=None,   # no clock model: nothing measured on that GPU
                   attn_dropout_rate_fwd=0.0, attn_dropout_rate_bwd=0.0, overlap_compute_slowdown=0.0, overlap_comm_rate=1.0)


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
