"""GPU component model: time of the op classes a transformer step is made of, from a GPU card.

Every op is one kernel (or, for attention's backward, the kernels of one autograd call) in a stream that
the host keeps fed in eager mode: a kernel shorter than the host's issue interval still costs one issue
interval, so each time is max(floor, work), with floor = launch (memory-bound, attention) or gemm_launch
(a cuBLAS call issues slower), measured back to back by gpu-micro.

GEMM C[m,n] = A[m,k] B[k,n] (times `batch`), element size e bytes, on a GPU of S SMs:

    tiles   = ceil(m / tile_m) * ceil(n / tile_n) * batch            (output tiles, one per SM at a time)
    waves   = tiles / S + wave_weight * (ceil(tiles / S) - tiles / S)  (0: no wave quantisation, 1: full)
    compute = waves * 2 * tile_m * tile_n * (k + k_ramp) / (peak[dtype] / S * eff[dtype])
            (+ waves * S * tile_m * tile_n * e_out / hbm_bandwidth    a card with gemm.epilogue: hbm)
            (+ call_time                                              a card with gemm.call_time)
    memory  = (m*k + k*n + m*n) * batch * e / hbm_bandwidth
    time    = max(gemm_launch, compute, memory)

so a tile's main loop streams k plus a fixed prologue/epilogue worth k_ramp iterations (the ramp for a
small k), partially filled tiles (tile quantisation) and partially filled waves over the SMs (wave
quantisation) cost full work, and eff is the fraction of the datasheet peak a full, long tile sustains.
cuBLAS chooses among several tile shapes, so quantisation is softened by wave_weight (fitted). The epilogue term
(issue 44, session 37): each tile writes its output after its k loop, and a wave of S tiles writes together at the
measured copy rate (e_out = 2 bytes for bf16 / fp16 / fp8 GEMMs, which write bf16; 4 for fp32); no fitted constant.
call_time: a fixed time per call, paid once, not per wave (a persistent kernel's pipeline fill and drain, and in
event-timed data the event-to-kernel time); fitted where a card has it.

Attention (flash / SDPA), b batch, h query heads, g kv heads, head size d, s = seq_kv:

    flops_fwd = 4 * b * h * sq * skv * d * (0.5 if causal else 1);  flops_bwd = 2.5 * flops_fwd
    eff(s, d) = eff_max[pass](d) * s / (s + seq_half[pass])   eff_max(d): the card's table by head_dim,
                                                              linear in log2(d) between entries, clamped
    bytes     = b * (2*h*sq + 2*g*skv) * d * e  (q, o, k, v once; backward 2x)
    time      = max(launch, flops / (peak[dtype] * eff), bytes / hbm_bandwidth)
              + (backward only) gqa_bytes * b * (h - g) * skv * d / hbm_bandwidth
              + (with dropout) b * h * sq * skv * (0.5 if causal else 1) / dropout_rate[pass]

the last term is GQA's backward: dK and dV are made per query head and summed over each group (fitted
bytes per element; fp32 dK and dV written and read back would be 16).

`backward=True` is the backward pass alone (gpu-micro measures forward and forward + backward; the
backward is their difference).

Memory-bound ops (norm, activation, optimizer update, copy), bytes read + written:

    time = max(launch, (bytes + ramp_bytes) / hbm_bandwidth)

i.e. an effective bandwidth hbm_bandwidth * bytes / (bytes + ramp_bytes) that ramps up with size.
hbm_bandwidth is the achievable (measured copy) rate, not the datasheet figure, which the card keeps
as hbm_peak for reference. SI units inside (s, bytes, bytes/s, FLOP/s); see docs/models/gpu.md.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from simcluster import card_document as cd
from simcluster import card_params as cp
from simcluster import strict
from simcluster.card_document import load_card
from simcluster.errors import ModelCardError, UnitError
from simcluster.hardware.gpu_clock import ClockParams, clock_params, clock_yaml
from simcluster.units import format_bandwidth, format_size, format_time

DTYPES = ("bf16", "fp16", "fp8", "fp32")
ELEMENT_BYTES = {"bf16": 2, "fp16": 2, "fp8": 1, "fp32": 4}
# Bytes (read + written) per second per SM of torch's unrolled bf16 -> fp32 copy: the five logits.float() copies of
# calibration/h200x1-llm-compile4-2026-11-29/traces (262-537 M elements, 6 B each) ran at 2.00-2.11 TB/s (mean 2.06) on
# 132 SMs where the same run's vectorized fp32 -> bf16 copies of the same size ran at 4.4 TB/s (issue 44, session 34,
# engineer eagerfix; docs/models/gpu.md); the H100 (same 132 SMs, less HBM) ran them at ~1.9 TB/s. The data show the
# kernel is not HBM-bound; that it scales with the SM count is an assumption (A100 / B200 values are extrapolations),
# and no size ramp is modelled (copies of 1-20 M elements spread widely around the large-copy rate).
UPCAST_BPS_PER_SM = 2.06e12 / 132
# split-K (GpuParams.gemm_split_k): each split at least one k block of the Hopper cuBLAS / nvjet kernels (the `64x4`,
# `64x5` in their names); partial outputs in fp32, the output written in bf16
SPLIT_K_MIN_DEPTH = 64
SPLIT_K_PARTIAL_BYTES = 4
ACT_OUT_BYTES = 2
OUT_BYTES = {"bf16": 2, "fp16": 2, "fp8": 2, "fp32": 4}   # the epilogue's output element (fp8 GEMMs here write bf16)


@dataclass(frozen=True)
class GpuParams:
    name: str
    peak_flops: dict[str, float]        # dense matrix FLOP/s per precision (fp32 = tf32 dense)
    hbm_bandwidth_Bps: float            # achievable device-memory bandwidth (bytes/s)
    hbm_capacity_bytes: float           # device memory
    launch_s: float                     # fixed cost per kernel (s): the back-to-back issue floor of a small kernel
    sm_count: int = 132
    tile_m: int = 128
    tile_n: int = 128
    gemm_efficiency: dict[str, float] = field(default_factory=lambda: {"bf16": 0.75, "fp16": 0.75, "fp8": 0.6, "fp32": 0.75})
    gemm_k_ramp: float = 64.0           # fixed per-tile cost, in k iterations
    wave_weight: float = 1.0            # 0 = no wave quantisation, 1 = full
    gemm_split_k: bool = False          # an output of few tiles splits K over the idle SMs (gemm_compute_s)
    gemm_epilogue: bool = False         # each wave's output tiles written at the HBM rate after the k loop (_tile_s)
    gemm_call_s: float = 0.0            # a fixed time per GEMM call (pipeline fill and drain, event-to-kernel), not per wave
    attn_efficiency_fwd: dict[int, float] = field(default_factory=lambda: {64: 0.45, 128: 0.65})   # by head_dim
    attn_efficiency_bwd: dict[int, float] = field(default_factory=lambda: {64: 0.4, 128: 0.55})
    attn_seq_half_fwd: float = 400.0    # sequence length at which the forward runs at half its top efficiency
    attn_seq_half_bwd: float = 1500.0
    memory_ramp_bytes: float = 2.0**20  # bytes of bandwidth lost per memory-bound kernel
    hbm_peak_Bps: float = 0.0           # datasheet figure, reference only
    gemm_launch_s: float = 0.0          # issue floor of one cuBLAS call (0: launch_s)
    attn_gqa_bytes: float = 0.0         # backward: bytes per element of the per-query-head dK/dV (h - g heads)
    attn_dropout_rate_fwd: float = 0.0  # score elements per second of in-kernel dropout, forward (0: not measured, not priced)
    attn_dropout_rate_bwd: float = 0.0  # and backward (the mask regenerated)
    clock: ClockParams | None = None    # the power-limited SM clock (hardware/gpu_clock.py); None: curves as fitted
    overlap_compute_slowdown: float = 0.0   # fraction of compute rate lost while NCCL kernels run beside it (0: not measured)
    overlap_comm_rate: float = 1.0          # NCCL's rate beside compute, as a fraction of its rate alone (overlap-micro)
    derived_from: str = ""              # a card not measured: the measured card its curves come from (provenance.curves_from)
    upcast_Bps_per_sm: float = UPCAST_BPS_PER_SM   # bf16 -> fp32 copies (upcast_time_s); not fitted per card

    def __post_init__(self):
        if not self.peak_flops or any(v <= 0 for v in self.peak_flops.values()):
            raise ValueError("peak_flops must name at least one precision, every value > 0")
        if self.hbm_bandwidth_Bps <= 0 or self.hbm_capacity_bytes <= 0 or self.launch_s < 0:
            raise ValueError("hbm_bandwidth and hbm_capacity must be > 0, launch >= 0")
        if self.sm_count < 1 or self.tile_m < 1 or self.tile_n < 1:
            raise ValueError("sm_count and tile sizes must be >= 1")
        if not 0.0 <= self.wave_weight <= 1.0:
            raise ValueError("wave_weight must be in [0, 1]")
        for table in (self.attn_efficiency_fwd, self.attn_efficiency_bwd):
            if not table or any(d < 1 or not 0 < e <= 1 for d, e in table.items()):
                raise ValueError("attention efficiency tables need head_dim >= 1 -> efficiency in (0, 1]")

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
    def _tile_s(self, k: float, per_sm: float, out_bytes: int) -> float:
        """One wave's time per tile: the k loop plus the k ramp at the SM's rate, and (gemm.epilogue: hbm) the wave's S
        output tiles written together at the HBM rate."""
        loop = 2.0 * self.tile_m * self.tile_n * (k + self.gemm_k_ramp) / per_sm
        if not self.gemm_epilogue:
            return loop
        return loop + self.sm_count * self.tile_m * self.tile_n * out_bytes / self.hbm_bandwidth_Bps

    def gemm_compute_s(self, m: int, n: int, k: int, dtype: str = "bf16", batch: int = 1) -> float:
        per_sm = self._peak(dtype) / self.sm_count * self._gemm_eff(dtype)
        whole = self.gemm_call_s + self.gemm_waves(m, n, batch) * self._tile_s(k, per_sm, OUT_BYTES[dtype])
        if not self.gemm_split_k:
            return whole
        tiles = math.ceil(m / self.tile_m) * math.ceil(n / self.tile_n) * batch
        if 2 * tiles > self.sm_count:
            return whole
        return min([whole, *(self._split_k_s(m, n, k, batch, s, per_sm)
                             for s in range(2, self.sm_count // tiles + 1) if k >= SPLIT_K_MIN_DEPTH * s)])

    def _split_k_s(self, m: int, n: int, k: int, batch: int, s: int, per_sm: float) -> float:
        """K split s ways (cuBLASLt's splitK kernels): the output's tiles s times over (gemm_waves of s batches), each of
        depth k / s paying the k ramp (and, with the epilogue term, writing its fp32 partial tile), then a reduce kernel
        reading the s fp32 partial outputs and writing the output (bytes at the HBM rate)."""
        reduce = (SPLIT_K_PARTIAL_BYTES * s + ACT_OUT_BYTES) * m * n * batch / self.hbm_bandwidth_Bps
        return self.gemm_call_s + self.gemm_waves(m, n, batch * s) * self._tile_s(k / s, per_sm, SPLIT_K_PARTIAL_BYTES) + reduce

    def gemm_memory_s(self, m: int, n: int, k: int, dtype: str = "bf16", batch: int = 1) -> float:
        return (m * k + k * n + m * n) * batch * ELEMENT_BYTES[dtype] / self.hbm_bandwidth_Bps

    def gemm_time_s(self, m: int, n: int, k: int, dtype: str = "bf16", batch: int = 1) -> float:
        """One (batched) matrix multiply C[m,n] = A[m,k] B[k,n]: max(issue floor, compute, memory)."""
        if min(m, n, k, batch) < 1:
            raise ValueError(f"gemm dimensions must be >= 1, got m={m} n={n} k={k} batch={batch}")
        return max(self.gemm_launch_s or self.launch_s, self.gemm_compute_s(m, n, k, dtype, batch),
                   self.gemm_memory_s(m, n, k, dtype, batch))

    @staticmethod
    def attention_flops(batch: int, heads: int, seq_q: int, seq_kv: int, head_dim: int,
                        causal: bool = True, backward: bool = False) -> float:
        flops = 4.0 * batch * heads * seq_q * seq_kv * head_dim * (0.5 if causal else 1.0)
        return flops * 2.5 if backward else flops

    def attention_efficiency(self, seq_kv: int, head_dim: int, backward: bool = False) -> float:
        table = self.attn_efficiency_bwd if backward else self.attn_efficiency_fwd
        half = self.attn_seq_half_bwd if backward else self.attn_seq_half_fwd
        return table_at(table, head_dim) * seq_kv / (seq_kv + half)

    def attention_time_s(self, batch: int, heads: int, kv_heads: int, seq_q: int, seq_kv: int, head_dim: int,
                         causal: bool = True, backward: bool = False, dtype: str = "bf16", dropout: bool = False) -> float:
        """Fused attention forward (backward=False) or its backward pass alone (backward=True); with dropout, the
        in-kernel mask's random numbers: one per score element the pass computes, at the card's measured rate."""
        if min(batch, heads, kv_heads, seq_q, seq_kv, head_dim) < 1 or heads % kv_heads:
            raise ValueError("attention sizes must be >= 1 and heads a multiple of kv_heads")
        flops = self.attention_flops(batch, heads, seq_q, seq_kv, head_dim, causal, backward)
        compute = flops / (self._peak(dtype) * self.attention_efficiency(seq_kv, head_dim, backward))
        nbytes = batch * (2 * heads * seq_q + 2 * kv_heads * seq_kv) * head_dim * ELEMENT_BYTES[dtype]
        memory = nbytes * (2.0 if backward else 1.0) / self.hbm_bandwidth_Bps
        gqa = self.attn_gqa_bytes * batch * (heads - kv_heads) * seq_kv * head_dim / self.hbm_bandwidth_Bps if backward else 0.0
        return max(self.launch_s, compute, memory) + gqa + (self.attention_dropout_s(batch, heads, seq_q, seq_kv, causal, backward)
                                                             if dropout else 0.0)

    def attention_dropout_s(self, batch: int, heads: int, seq_q: int, seq_kv: int, causal: bool = True,
                            backward: bool = False) -> float:
        """What dropout adds to a fused attention pass: b h s_q s_kv (/2 causal) score elements at the card's rate
        (0 where the card has none measured)."""
        rate = self.attn_dropout_rate_bwd if backward else self.attn_dropout_rate_fwd
        return batch * heads * seq_q * seq_kv * (0.5 if causal else 1.0) / rate if rate > 0 else 0.0

    def memory_time_s(self, bytes_moved: float) -> float:
        """A memory-bound kernel moving bytes_moved (read + written)."""
        if bytes_moved < 0:
            raise ValueError(f"bytes_moved must be >= 0, got {bytes_moved}")
        return max(self.launch_s, (bytes_moved + self.memory_ramp_bytes) / self.hbm_bandwidth_Bps)

    def upcast_time_s(self, bytes_moved: float) -> float:
        """A bf16 -> fp32 copy (torch's direct_copy_kernel_cuda: no vectorized path for a dtype-converting copy, so
        the unrolled kernel casts element by element): bound by the SMs at upcast_Bps_per_sm each, or by memory."""
        return max(self.memory_time_s(bytes_moved), bytes_moved / (self.upcast_Bps_per_sm * self.sm_count))


def table_at(table: dict[int, float], x: float) -> float:
    """A table's value at x: linear in log2(x) between its keys, the end values outside them."""
    keys = sorted(table)
    if x <= keys[0]:
        return table[keys[0]]
    if x >= keys[-1]:
        return table[keys[-1]]
    for lo, hi in zip(keys, keys[1:], strict=False):
        if lo <= x <= hi:
            w = (math.log2(x) - math.log2(lo)) / (math.log2(hi) - math.log2(lo))
            return table[lo] + w * (table[hi] - table[lo])
    return table[keys[-1]]


# --- card edges ------------------------------------------------------------------------------------------
_FLOPS_UNITS = {"": 1.0, "G": 1e9, "T": 1e12, "P": 1e15}


def parse_flops(text) -> float:
    """'989.4TFLOP/s' -> 9.894e14 FLOP/s; a bare number is FLOP/s."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    else:
        match = re.fullmatch(r"\s*([0-9.]+(?:[eE][-+]?\d+)?)\s*([GTP]?)FLOP/s\s*", str(text)[:100])
        if not match:
            raise UnitError(f"{str(text)[:40]!r} is not a FLOP rate", hint='write e.g. "989.4TFLOP/s"')
        value = float(match.group(1)) * _FLOPS_UNITS[match.group(2)]
    if not 1e9 <= value <= 1e18:   # a GFLOP/s to an EFLOP/s: NaN, inf, 0 and negatives refused
        raise UnitError(f"{str(text)[:40]!r} is not a GPU's FLOP rate (1 GFLOP/s to 1 EFLOP/s)")
    return value


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
        "gemm_launch": format_time(params.gemm_launch_s or params.launch_s),
        "sm_count": params.sm_count,
        "gemm": {"tile_m": params.tile_m, "tile_n": params.tile_n,
                 "efficiency": {k: round(v, 4) for k, v in params.gemm_efficiency.items()},
                 "k_ramp": round(params.gemm_k_ramp, 2), "wave_weight": round(params.wave_weight, 4)}
        | ({"split_k": "cublas"} if params.gemm_split_k else {}) | ({"epilogue": "hbm"} if params.gemm_epilogue else {})
        | ({"call_time": format_time(params.gemm_call_s)} if params.gemm_call_s else {}),
        "attention": {"efficiency_fwd": {int(d): round(e, 4) for d, e in sorted(params.attn_efficiency_fwd.items())},
                      "efficiency_bwd": {int(d): round(e, 4) for d, e in sorted(params.attn_efficiency_bwd.items())},
                      "seq_half_fwd": round(params.attn_seq_half_fwd, 1), "seq_half_bwd": round(params.attn_seq_half_bwd, 1),
                      "gqa_bwd_bytes_per_element": round(params.attn_gqa_bytes, 3)}
        | ({"dropout_elements_per_s_fwd": float(f"{params.attn_dropout_rate_fwd:.4g}"),
            "dropout_elements_per_s_bwd": float(f"{params.attn_dropout_rate_bwd:.4g}")} if params.attn_dropout_rate_fwd else {}),
        "memory": {"ramp": format_size(params.memory_ramp_bytes)},
    } | ({"clock": clock_yaml(params.clock)} if params.clock else {}) \
      | ({"comm_overlap": {"compute_slowdown": round(params.overlap_compute_slowdown, 4),
                           "comm_rate": round(params.overlap_comm_rate, 4)}} if params.overlap_compute_slowdown else {})


def gpu_params(card: dict, where: str) -> GpuParams:
    """A gpu card's params, read through their declaration (card_params.GPU: unknown keys, unknown precisions, bad
    units and out-of-range numbers are one line FILE:LINE: params.KEY)."""
    p = cd.declared_params(card, where, cp.GPU, dtype=DTYPES, flops=parse_flops, clock=clock_params)
    g, a = p.gemm, p.attention
    try:
        return GpuParams(
            name=str(strict.field(card, "name", where, None, ModelCardError)), peak_flops=dict(p.peak_flops),
            hbm_bandwidth_Bps=p.hbm_bandwidth, hbm_capacity_bytes=p.hbm_capacity, launch_s=p.launch, sm_count=p.sm_count,
            tile_m=g.tile_m, tile_n=g.tile_n, gemm_efficiency={k: float(v) for k, v in g.efficiency.items()},
            gemm_k_ramp=float(g.k_ramp), wave_weight=float(g.wave_weight), gemm_split_k=g.split_k == "cublas",
            gemm_epilogue=g.epilogue == "hbm", gemm_call_s=float(g.call_time or 0.0),
            attn_efficiency_fwd={d: float(e) for d, e in a.efficiency_fwd.items()},
            attn_efficiency_bwd={d: float(e) for d, e in a.efficiency_bwd.items()},
            attn_seq_half_fwd=float(a.seq_half_fwd), attn_seq_half_bwd=float(a.seq_half_bwd),
            attn_gqa_bytes=float(a.gqa_bwd_bytes_per_element), attn_dropout_rate_fwd=float(a.dropout_elements_per_s_fwd or 0.0),
            attn_dropout_rate_bwd=float(a.dropout_elements_per_s_bwd or 0.0),
            gemm_launch_s=p.launch if p.gemm_launch is None else p.gemm_launch, memory_ramp_bytes=p.memory.ramp,
            hbm_peak_Bps=p.hbm_bandwidth if p.hbm_peak is None else p.hbm_peak, clock=p.clock,
            overlap_compute_slowdown=float(p.comm_overlap.compute_slowdown) if p.comm_overlap else 0.0,
            overlap_comm_rate=float(p.comm_overlap.comm_rate) if p.comm_overlap else 1.0,
            derived_from=str((card.get("provenance") or {}).get("curves_from", "")) if isinstance(card.get("provenance"), dict) else "")
    except ValueError as exc:
        raise ModelCardError(f"params: {exc}", where=where) from None


def load_gpu(path) -> tuple[GpuParams, dict]:
    """Read a `kind: gpu` card: (GpuParams, the card as a dict)."""
    card = load_card(path, kind="gpu")
    return gpu_params(card, str(path)), card
