"""GPU component model: time of the op classes a transformer step is made of, from a GPU card.

GEMM C[m,n] = A[m,k] B[k,n] (times `batch`), element size e bytes, on a GPU of S SMs:

    tiles   = ceil(m / tile_m) * ceil(n / tile_n) * batch            (output tiles, one per SM at a time)
    waves   = tiles / S + wave_weight * (ceil(tiles / S) - tiles / S)  (0: no wave quantisation, 1: full)
    compute = waves * 2 * tile_m * tile_n * (k + k_ramp) / (peak[dtype] / S * eff[dtype])
    memory  = (m*k + k*n + m*n) * batch * e / hbm_bandwidth
    time    = launch + max(compute, memory)

so a tile's main loop streams k plus a fixed prologue/epilogue worth k_ramp iterations (the ramp for
a small k), partially filled tiles (tile quantisation) and partially filled waves over the SMs
(wave quantisation) cost full work, and eff is the fraction of the datasheet peak a full, long tile
sustains. cuBLAS chooses among several tile shapes, so quantisation is softened by wave_weight.

Attention (flash / SDPA), b batch, h query heads, g kv heads, head size d:

    flops_fwd = 4 * b * h * sq * skv * d * (0.5 if causal else 1);  flops_bwd = 2.5 * flops_fwd
    eff(s, d) = eff_max[fwd|bwd] * s / (s + seq_half) * d / (d + head_dim_half),  s = skv
    bytes     = b * (2*h*sq*d + 2*g*skv*d) * e   (fwd: q, o, k, v once);  bwd moves 2x that
    time      = launch + max(flops / (peak[dtype] * eff), bytes / hbm_bandwidth)

Memory-bound ops (norm, activation, optimizer update, copy), bytes read + written:

    time = launch + (bytes + ramp_bytes) / hbm_bandwidth

i.e. an effective bandwidth hbm_bandwidth * bytes / (bytes + ramp_bytes) that ramps up with size.
hbm_bandwidth is the achievable (measured copy) rate, not the datasheet figure, which the card keeps
as hbm_peak for reference. SI units inside (s, bytes, bytes/s, FLOP/s); see docs/models/gpu.md.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from simcluster.cards import _get, load_card
from simcluster.errors import ModelCardError, UnitError
from simcluster.units import format_bandwidth, format_size, format_time, parse_bandwidth, parse_size, parse_time

DTYPES = ("bf16", "fp16", "fp8", "fp32")
ELEMENT_BYTES = {"bf16": 2, "fp16": 2, "fp8": 1, "fp32": 4}


@dataclass(frozen=True)
class GpuParams:
    name: str
    peak_flops: dict[str, float]        # dense matrix FLOP/s per precision (fp32 = tf32 dense)
    hbm_bandwidth_Bps: float            # achievable device-memory bandwidth (bytes/s)
    hbm_capacity_bytes: float           # device memory
    launch_s: float                     # fixed cost per kernel (s)
    sm_count: int = 132
    tile_m: int = 128
    tile_n: int = 128
    gemm_efficiency: dict[str, float] = field(default_factory=lambda: {"bf16": 0.75, "fp16": 0.75, "fp8": 0.6, "fp32": 0.75})
    gemm_k_ramp: float = 64.0           # fixed per-tile cost, in k iterations
    wave_weight: float = 1.0            # 0 = no wave quantisation, 1 = full
    attn_efficiency_fwd: float = 0.6
    attn_efficiency_bwd: float = 0.45
    attn_seq_half: float = 256.0        # sequence length at which attention runs at half its efficiency
    attn_head_dim_half: float = 16.0
    memory_ramp_bytes: float = 2.0**20  # bytes of bandwidth lost per memory-bound kernel
    hbm_peak_Bps: float = 0.0           # datasheet figure, reference only

    def __post_init__(self):
        if not self.peak_flops or any(v <= 0 for v in self.peak_flops.values()):
            raise ValueError("peak_flops must name at least one precision, every value > 0")
        if self.hbm_bandwidth_Bps <= 0 or self.hbm_capacity_bytes <= 0 or self.launch_s < 0:
            raise ValueError("hbm_bandwidth and hbm_capacity must be > 0, launch >= 0")
        if self.sm_count < 1 or self.tile_m < 1 or self.tile_n < 1:
            raise ValueError("sm_count and tile sizes must be >= 1")
        if not 0.0 <= self.wave_weight <= 1.0:
            raise ValueError("wave_weight must be in [0, 1]")

    # --- helpers -------------------------------------------------------------------------------------
    def _peak(self, dtype: str) -> float:
        if dtype not in self.peak_flops:
            raise ValueError(f"{self.name}: no peak for precision {dtype!r} (card has {', '.join(self.peak_flops)})")
        return self.peak_flops[dtype]

    def _gemm_eff(self, dtype: str) -> float:
        return self.gemm_efficiency.get(dtype, self.gemm_efficiency.get("bf16", 0.75))

    def gemm_waves(self, m: int, n: int, batch: int = 1) -> float:
        tiles = math.ceil(m / self.tile_m) * math.ceil(n / self.tile_n) * batch
        exact = tiles / self.sm_count
        return exact + self.wave_weight * (math.ceil(exact) - exact)

    # --- op classes ----------------------------------------------------------------------------------
    def gemm_compute_s(self, m: int, n: int, k: int, dtype: str = "bf16", batch: int = 1) -> float:
        per_sm = self._peak(dtype) / self.sm_count * self._gemm_eff(dtype)
        return self.gemm_waves(m, n, batch) * 2.0 * self.tile_m * self.tile_n * (k + self.gemm_k_ramp) / per_sm

    def gemm_memory_s(self, m: int, n: int, k: int, dtype: str = "bf16", batch: int = 1) -> float:
        return (m * k + k * n + m * n) * batch * ELEMENT_BYTES[dtype] / self.hbm_bandwidth_Bps

    def gemm_time_s(self, m: int, n: int, k: int, dtype: str = "bf16", batch: int = 1) -> float:
        """One (batched) matrix multiply C[m,n] = A[m,k] B[k,n]: launch + max(compute, memory)."""
        if min(m, n, k, batch) < 1:
            raise ValueError(f"gemm dimensions must be >= 1, got m={m} n={n} k={k} batch={batch}")
        return self.launch_s + max(self.gemm_compute_s(m, n, k, dtype, batch), self.gemm_memory_s(m, n, k, dtype, batch))

    @staticmethod
    def attention_flops(batch: int, heads: int, seq_q: int, seq_kv: int, head_dim: int,
                        causal: bool = True, backward: bool = False) -> float:
        flops = 4.0 * batch * heads * seq_q * seq_kv * head_dim * (0.5 if causal else 1.0)
        return flops * 2.5 if backward else flops

    def attention_efficiency(self, seq_kv: int, head_dim: int, backward: bool = False) -> float:
        top = self.attn_efficiency_bwd if backward else self.attn_efficiency_fwd
        return top * seq_kv / (seq_kv + self.attn_seq_half) * head_dim / (head_dim + self.attn_head_dim_half)

    def attention_time_s(self, batch: int, heads: int, kv_heads: int, seq_q: int, seq_kv: int, head_dim: int,
                         causal: bool = True, backward: bool = False, dtype: str = "bf16") -> float:
        """Fused attention forward (backward=False) or its backward pass alone (backward=True)."""
        if min(batch, heads, kv_heads, seq_q, seq_kv, head_dim) < 1 or heads % kv_heads:
            raise ValueError("attention sizes must be >= 1 and heads a multiple of kv_heads")
        flops = self.attention_flops(batch, heads, seq_q, seq_kv, head_dim, causal, backward)
        compute = flops / (self._peak(dtype) * self.attention_efficiency(seq_kv, head_dim, backward))
        nbytes = batch * (2 * heads * seq_q + 2 * kv_heads * seq_kv) * head_dim * ELEMENT_BYTES[dtype]
        memory = nbytes * (2.0 if backward else 1.0) / self.hbm_bandwidth_Bps
        return self.launch_s + max(compute, memory)

    def memory_time_s(self, bytes_moved: float) -> float:
        """A memory-bound kernel moving bytes_moved (read + written)."""
        if bytes_moved < 0:
            raise ValueError(f"bytes_moved must be >= 0, got {bytes_moved}")
        return self.launch_s + (bytes_moved + self.memory_ramp_bytes) / self.hbm_bandwidth_Bps


# --- card edges ------------------------------------------------------------------------------------------
_FLOPS_UNITS = {"": 1.0, "G": 1e9, "T": 1e12, "P": 1e15}


def parse_flops(text) -> float:
    """'989.4TFLOP/s' -> 9.894e14 FLOP/s; a bare number is FLOP/s."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text)
    match = re.fullmatch(r"\s*([0-9.]+(?:[eE][-+]?\d+)?)\s*([GTP]?)FLOP/s\s*", str(text))
    if not match:
        raise UnitError(f"{text!r} is not a FLOP rate", hint='write e.g. "989.4TFLOP/s"')
    return float(match.group(1)) * _FLOPS_UNITS[match.group(2)]


def format_flops(flops: float) -> str:
    for unit, scale in (("PFLOP/s", 1e15), ("TFLOP/s", 1e12), ("GFLOP/s", 1e9)):
        if flops >= scale:
            return f"{flops / scale:.5g}{unit}"
    return f"{flops:.5g}FLOP/s"


def gpu_params_yaml(params: GpuParams) -> dict:
    """Card params with unit strings (the inverse of gpu_params)."""
    return {
        "peak_flops": {k: format_flops(v) for k, v in params.peak_flops.items()},
        "hbm_bandwidth": format_bandwidth(params.hbm_bandwidth_Bps),
        "hbm_peak": format_bandwidth(params.hbm_peak_Bps or params.hbm_bandwidth_Bps),
        "hbm_capacity": format_size(params.hbm_capacity_bytes),
        "launch": format_time(params.launch_s),
        "sm_count": params.sm_count,
        "gemm": {"tile_m": params.tile_m, "tile_n": params.tile_n,
                 "efficiency": {k: round(v, 4) for k, v in params.gemm_efficiency.items()},
                 "k_ramp": round(params.gemm_k_ramp, 2), "wave_weight": round(params.wave_weight, 4)},
        "attention": {"efficiency_fwd": round(params.attn_efficiency_fwd, 4), "efficiency_bwd": round(params.attn_efficiency_bwd, 4),
                      "seq_half": round(params.attn_seq_half, 2), "head_dim_half": round(params.attn_head_dim_half, 2)},
        "memory": {"ramp": format_size(params.memory_ramp_bytes)},
    }


def _section(p: dict, key: str, where: str) -> dict:
    sec = _get(p, key, where)
    if not isinstance(sec, dict):
        raise ModelCardError(f"'{key}': expected a mapping", where=where)
    return sec


def _number(doc: dict, key: str, where: str, low: float = 0.0, high: float = math.inf) -> float:
    value = _get(doc, key, where)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise ModelCardError(f"key '{key}': {value!r} is not a number in [{low}, {high}]", where=where)
    return float(value)


def gpu_params(card: dict, where: str) -> GpuParams:
    """Strictly read a gpu card's params (unknown keys, unknown precisions and bad units are one-line errors)."""
    p = _section(card, "params", where)
    key = f"{where}: params"
    known = {"peak_flops", "hbm_bandwidth", "hbm_peak", "hbm_capacity", "launch", "sm_count", "gemm", "attention", "memory"}
    unknown = set(p) - known
    if unknown:
        raise ModelCardError(f"unknown key 'params.{sorted(unknown)[0]}'", where=where, hint=f"known: {', '.join(sorted(known))}")
    peaks = _section(p, "peak_flops", key)
    bad = set(peaks) - set(DTYPES)
    if bad or not peaks:
        raise ModelCardError(f"params.peak_flops: unknown precision {sorted(bad)[0]!r}" if bad else "params.peak_flops is empty",
                             where=where, hint=f"precisions: {', '.join(DTYPES)}")
    peak_flops = {k: _get(peaks, k, f"{key}.peak_flops", parse_flops) for k in peaks}
    gemm, attn, mem = _section(p, "gemm", key), _section(p, "attention", key), _section(p, "memory", key)
    eff = _section(gemm, "efficiency", f"{key}.gemm")
    if set(eff) - set(DTYPES):
        raise ModelCardError(f"params.gemm.efficiency: unknown precision {sorted(set(eff) - set(DTYPES))[0]!r}", where=where)
    gemm_eff = {k: _number(eff, k, f"{key}.gemm.efficiency", 1e-3, 1.0) for k in eff}
    bw = _get(p, "hbm_bandwidth", key, parse_bandwidth)
    try:
        return GpuParams(
            name=str(_get(card, "name", where)), peak_flops=peak_flops, hbm_bandwidth_Bps=bw,
            hbm_capacity_bytes=_get(p, "hbm_capacity", key, parse_size), launch_s=_get(p, "launch", key, parse_time),
            sm_count=int(_number(p, "sm_count", key, 1)), tile_m=int(_number(gemm, "tile_m", f"{key}.gemm", 1)),
            tile_n=int(_number(gemm, "tile_n", f"{key}.gemm", 1)), gemm_efficiency=gemm_eff,
            gemm_k_ramp=_number(gemm, "k_ramp", f"{key}.gemm"), wave_weight=_number(gemm, "wave_weight", f"{key}.gemm", 0, 1),
            attn_efficiency_fwd=_number(attn, "efficiency_fwd", f"{key}.attention", 1e-3, 1.0),
            attn_efficiency_bwd=_number(attn, "efficiency_bwd", f"{key}.attention", 1e-3, 1.0),
            attn_seq_half=_number(attn, "seq_half", f"{key}.attention"),
            attn_head_dim_half=_number(attn, "head_dim_half", f"{key}.attention"),
            memory_ramp_bytes=_get(mem, "ramp", f"{key}.memory", parse_size),
            hbm_peak_Bps=_get({"hbm_peak": p.get("hbm_peak", p["hbm_bandwidth"])}, "hbm_peak", key, parse_bandwidth))
    except ValueError as exc:
        raise ModelCardError(f"params: {exc}", where=where) from None


def load_gpu(path) -> tuple[GpuParams, dict]:
    """Read a `kind: gpu` card: (GpuParams, the card as a dict)."""
    card = load_card(path, kind="gpu")
    return gpu_params(card, str(path)), card
