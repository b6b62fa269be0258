"""Datasheet GPU cards whose efficiency curves come from published kernel benchmarks, not from another GPU's.

A measured card (H100) has GEMM and attention curves by shape; a GPU that was never measured here (A100, B200)
gets the datasheet's peaks (fit.gpu.carry) and those curves scaled by what published benchmarks reached on the
two GPUs (calibration/published/gpu-efficiency-published.yaml):

  gemm efficiency[dtype]   x  published_target[dtype] / published_reference[dtype]   (best-shape matmul, MAMF)
                         or x  published_rate[dtype] / card_rate(m, n, k)   (a figure measured at one shape: the
                               datasheet card with the measured card's curves reproduces it there exactly)
  attention efficiency     x  published_target_attn[pass] / published_reference_attn[pass]   (flash / SDPA, d 128)

so the shape dependence (tiles, waves, k ramp, seq ramp) stays the measured card's, and the level follows the
published ratio. A precision the target has no figure for keeps the bf16 ratio; fp8 is compared with the
reference's fp8 (or, where the source measured another Hopper part on the same stack, with that part's).
Attention is compared pass by pass where both GPUs have a backward figure (else the forward ratio serves both),
and with `attention_reference` when the target's attention figure was measured beside another Hopper part's
(one benchmark, one kernel family) rather than the GEMM reference's.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from simcluster.card_document import load_yaml
from simcluster.errors import CalibrationError
from simcluster.fit.gpu import DATASHEETS, carry
from simcluster.hardware.gpu import GpuParams, gpu_params_yaml

MAX_EFFICIENCY = 0.98


@dataclass(frozen=True)
class PublishedEfficiency:
    gpu: str
    gemm: dict[str, float]            # dtype -> achieved / datasheet peak, best shape
    attention_fwd: float | None       # forward flash / SDPA attention at head dim 128, fraction of peak
    sources: dict[str, str]           # what each figure is -> citation
    attention_bwd: float | None = None   # the backward pass of the same benchmark, fraction of peak
    gemm_shape: dict[str, tuple[int, int, int]] = field(default_factory=dict)   # dtype -> (m, n, k) a figure was measured at


def _fraction(entry: dict, where: str) -> float:
    if "fraction" in entry:
        value = float(entry["fraction"])
    elif "tflops" in entry and "peak_tflops" in entry:
        value = float(entry["tflops"]) / float(entry["peak_tflops"])
    else:
        raise CalibrationError("needs fraction, or tflops and peak_tflops", where=where)
    if not 0 < value <= 1:
        raise CalibrationError(f"efficiency {value:.3f} is not in (0, 1]", where=where)
    return value


def load_published(path) -> dict[str, PublishedEfficiency]:
    doc = load_yaml(path)
    if doc.get("kind") != "published-gpu-efficiency":
        raise CalibrationError("expected kind: published-gpu-efficiency", where=str(path))
    cites = doc.get("sources") or {}
    out = {}
    for gpu, entry in (doc.get("gpus") or {}).items():
        used = {}
        gemm, shapes = {}, {}
        for dtype, e in (entry.get("gemm") or {}).items():
            gemm[dtype] = _fraction(e, f"{path}: gpus.{gpu}.gemm.{dtype}")
            used[f"gemm {dtype}"] = _cite(cites, e, f"{path}: gpus.{gpu}.gemm.{dtype}")
            if "shape" in e:
                shapes[dtype] = _shape(e["shape"], f"{path}: gpus.{gpu}.gemm.{dtype}.shape")
        attn = {}
        for key, name in (("attention_fwd_d128", "attention"), ("attention_bwd_d128", "attention bwd")):
            e = entry.get(key)
            if e is not None:
                attn[key] = _fraction(e, f"{path}: gpus.{gpu}.{key}")
                used[name] = _cite(cites, e, f"{path}: gpus.{gpu}.{key}")
        if "attention_bwd_d128" in attn and "attention_fwd_d128" not in attn:
            raise CalibrationError("attention_bwd_d128 needs attention_fwd_d128 beside it", where=f"{path}: gpus.{gpu}")
        out[gpu] = PublishedEfficiency(gpu, gemm, attn.get("attention_fwd_d128"), used, attn.get("attention_bwd_d128"), shapes)
    return out


def _shape(value, where: str) -> tuple[int, int, int]:
    if not (isinstance(value, list) and len(value) == 3 and all(isinstance(x, int) and x >= 1 for x in value)):
        raise CalibrationError(f"expected [m, n, k], three integers >= 1, got {str(value)[:40]}", where=where)
    return value[0], value[1], value[2]


def fraction_at(card: GpuParams, dtype: str, shape: tuple[int, int, int]) -> float:
    """The card's GEMM rate at one compute-bound shape as a fraction of its datasheet peak."""
    m, n, k = shape
    t = card.gemm_time_s(m, n, k, dtype)
    if t > card.gemm_compute_s(m, n, k, dtype) * (1 + 1e-9):
        raise CalibrationError(f"{m}x{n}x{k} {dtype} is not compute-bound on {card.name}: its rate does not set the efficiency")
    return 2.0 * m * n * k / t / card.peak_flops[dtype]


def _cite(cites: dict, entry: dict, where: str) -> str:
    key = entry.get("source")
    if key not in cites:
        raise CalibrationError(f"source {key!r} is not among the file's sources", where=where)
    c = cites[key]
    return f"{c.get('title')} ({c.get('where')}; {c.get('url')})"


def _attention_factors(target: PublishedEfficiency, reference: PublishedEfficiency) -> tuple[float, float]:
    """(forward, backward) ratios of the two GPUs' attention figures; 1.0 without figures; the backward takes the
    forward's ratio unless both GPUs have a backward figure."""
    if not (target.attention_fwd and reference.attention_fwd):
        return 1.0, 1.0
    fwd = target.attention_fwd / reference.attention_fwd
    bwd = target.attention_bwd / reference.attention_bwd if target.attention_bwd and reference.attention_bwd else fwd
    return fwd, bwd


def scaled(measured: GpuParams, reference: PublishedEfficiency, target: PublishedEfficiency,
           fp8_reference: PublishedEfficiency | None = None,
           attention_reference: PublishedEfficiency | None = None) -> tuple[GpuParams, dict[str, float]]:
    """The target's datasheet card with the measured card's curves scaled by target / reference; and the factors."""
    if target.gpu not in DATASHEETS:
        raise CalibrationError(f"no datasheet for {target.gpu!r}", hint=f"known: {', '.join(DATASHEETS)}")
    base = carry(measured, DATASHEETS[target.gpu])
    factors = {}
    for dtype in base.gemm_efficiency:
        ref = (fp8_reference or reference) if dtype == "fp8" else reference
        key = dtype if dtype in target.gemm and (dtype in ref.gemm or dtype in target.gemm_shape) else "bf16"
        if key in target.gemm_shape:    # measured at one shape: the carried card (target peaks, SMs) reproduces it there
            factors[f"gemm {dtype}"] = target.gemm[key] / fraction_at(base, key, target.gemm_shape[key])
        else:
            factors[f"gemm {dtype}"] = target.gemm[key] / ref.gemm[key]
    eff = {d: min(MAX_EFFICIENCY, e * factors[f"gemm {d}"]) for d, e in base.gemm_efficiency.items()}
    a_fwd, a_bwd = _attention_factors(target, attention_reference or reference)
    factors["attention fwd"], factors["attention bwd"] = a_fwd, a_bwd
    fwd = {d: min(MAX_EFFICIENCY, e * a_fwd) for d, e in base.attn_efficiency_fwd.items()}
    bwd = {d: min(MAX_EFFICIENCY, e * a_bwd) for d, e in base.attn_efficiency_bwd.items()}
    return replace(base, gemm_efficiency=eff, attn_efficiency_fwd=fwd, attn_efficiency_bwd=bwd), factors


def published_card(measured: GpuParams, measured_path: str, published_path, target: str, reference: str = "h100-sxm",
                   fp8_reference: str | None = None, attention_reference: str | None = None) -> dict:
    table = load_published(published_path)
    for name in (target, reference, fp8_reference, attention_reference):
        if name and name not in table:
            raise CalibrationError(f"{name!r} is not in the published table", where=str(published_path))
    tgt, ref = table[target], table[reference]
    fp8_ref = table[fp8_reference] if fp8_reference else None
    attn_ref = table[attention_reference] if attention_reference else ref
    p, factors = scaled(measured, ref, tgt, fp8_ref, attn_ref)
    reference_sources = {k: v for k, v in ref.sources.items() if not k.startswith("attention")}
    reference_sources |= {f"gemm {d}": f"{measured_path} (its rate at {'x'.join(map(str, s))}, target datasheet peak and SMs)"
                          for d, s in tgt.gemm_shape.items()}
    reference_sources |= {k: v for k, v in attn_ref.sources.items() if k.startswith("attention")}
    sheet = DATASHEETS[target]
    said = "; ".join(f"{k} x{v:.3f}" for k, v in factors.items())
    if tgt.gemm_shape:
        said += "; gemm " + ", ".join(f"{d} at {'x'.join(map(str, s))}" for d, s in tgt.gemm_shape.items()) + \
            " against the measured card's own rate there"
    against = f"; attention against {attention_reference}" if attention_reference else ""
    return {"kind": "gpu", "name": p.name,
            "description": f"{target} FROM ITS DATASHEET AND PUBLISHED KERNEL BENCHMARKS, NOT MEASURED HERE: peaks, HBM and SM count "
                           f"from {sheet.source}. GEMM and attention curves: the shape dependence of the measured card "
                           f"{measured_path}, scaled by published {target} / {reference} efficiency ({said}{against}; "
                           f"{Path(published_path).as_posix()}, simcluster.fit.gpu_published). Memory-bound curves and launch "
                           f"floors carried from {measured_path} unchanged.",
            "params": gpu_params_yaml(p),
            "provenance": {"datasheet": sheet.source, "curves_from": measured_path,
                           "published_efficiency": {"file": Path(published_path).as_posix(), "reference": reference,
                                                    "fp8_reference": fp8_reference or reference,
                                                    "attention_reference": attention_reference or reference,
                                                    "factors": {k: round(v, 4) for k, v in factors.items()},
                                                    "target_sources": tgt.sources, "reference_sources": reference_sources}}}
