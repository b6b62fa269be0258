"""FlashAttention 2's time on a Hopper GPU from its CTA grid and the SMs' slots (issue 44, session 38: adopted by the
registered check calibration/h200x1-attention-wave-2026-11-29, 2.5% vs the old ratio's 10.6% mean |error| over 124
held-out flash passes). The model 'fa2' kernel's attention time on the measured Hopper cards (llm/attention_kernels.py).

  grid       forward: one CTA per (query block of BLOCK_M rows, batch, head), launched query block fastest, then batch,
             then head; backward (the dQ/dK/dV kernel): one CTA per (key block of BLOCK_N rows, batch, head), same order
  work       score tiles per CTA. Causal (seq_q = seq_kv): forward CTA i computes key blocks 0 .. ceil((i+1) BLOCK_M /
             BLOCK_N) - 1; backward CTA j the query blocks floor(j BLOCK_N / BLOCK_M) .. n_m - 1. Not causal (or
             'fa2-full', every score tile computed): every forward CTA ceil(seq_kv / BLOCK_N) tiles, every backward CTA
             ceil(seq_q / BLOCK_M)
  CTA time   a + u * tiles                 a: its fixed part (load Q or K/V, the masked diagonal, write the output)
  kernel     greedy list schedule of the CTAs, in launch order, on SMs x CTAs-per-SM slots: the makespan, so a last
             partial wave and the causal tail (the heaviest forward CTAs are launched last) cost what they cost;
             computed head after head on one head's CTAs (repeated_makespan), in closed form where all CTAs are alike
  backward   + its memory-bound kernels at the card's copy rate: dot(dO, O) with the fp32 dQ accumulator cleared and
             the accumulator converted to bf16 (14 bytes a q element), and with grouped K/V torch's sum of the
             per-query-head dK / dV (4 h + 4 g bytes a key row and head size)

Facts, not fitted (torch 2.11's vendored flash-attn 2.x launch templates and flash_api.cpp): TILES below; a forward of
b h ceil(seq_q / 64) < 0.8 x 2 x SMs CTAs takes the split-KV kernel instead (refused: FormError). CTAs per SM: 2
forward, 1 backward (the register file; an assumption, not a measured occupancy). Fitted (u, a per head size and pass,
CONSTS): least squares on log time over every flash record >= 2K tokens of calibration/h200x1-attention-backends-2026-11-28
and calibration/h200x1-attention-gqa-2026-11-29 (studies/fa2_wave.py fits them; the registered probe's registered.yaml
holds the same numbers). Valid: bf16, head size 64 / 128, one H200 (132 SMs); causal with seq_q = seq_kv measured,
non-causal / unequal lengths priced with the same constants: checked on one H200 by
calibration/h200x1-attention-noncausal-2026-11-29 (3.7% mean |error| vs the ratio card's 10.9%, 34 passes, registered;
rule KEEP); on the H100 extrapolated. Units: seconds, bytes/s.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from functools import lru_cache

PASSES = ("fwd", "bwd")
# (pass, head_dim) -> (BLOCK_M, BLOCK_N, CTAs per SM): the launch templates' tile sizes on sm90
TILES = {("fwd", 64): (128, 128, 2), ("fwd", 128): (128, 64, 2), ("bwd", 64): (128, 128, 1), ("bwd", 128): (64, 128, 1)}
BWD_BYTES_PER_Q_ELEMENT = 14.0   # dO, O read (2 + 2), dQ accumulator cleared and read (4 + 4), dQ written (2)
SPLIT_KV_FRACTION, SPLIT_KV_BLOCK = 0.8, 64   # flash_api.cpp's num_splits heuristic: below it the split-KV kernel runs
# (pass, head_dim) -> (u: seconds a score tile, a: seconds a CTA), fitted by studies/fa2_wave.py (development data above)
# and registered before the probe (calibration/h200x1-attention-wave-2026-11-29/registered.yaml `consts`)
CONSTS = {("fwd", 64): (3.43605e-06, 4.92677e-06), ("fwd", 128): (3.14452e-06, 9.43374e-06),
          ("bwd", 64): (4.78685e-06, 1.46225e-05), ("bwd", 128): (4.22606e-06, 2.00738e-05)}
FIT_SMS = 132                    # the H200 the constants were fitted on
FIT_HBM_BPS = 4.179e12           # its card's copy rate (models/gpu/h200-sxm-interleaved.yaml), bytes/s
ORDERS = ("launch", "lpt")


class FormError(ValueError):
    """A shape outside the form's range (one line)."""


@dataclass(frozen=True)
class Grid:
    """How a fused-attention kernel lays its score tiles out as the form sees it (FA2 below is flash's; the card's
    cuDNN kernel's is fitted by studies/cudnn_wave.py). tiles: (pass, head_dim) -> (BLOCK_M, BLOCK_N, CTAs per SM);
    order 'launch': the work units in launch order (block fastest, then batch, then head), taken in that order by
    whichever slot frees first (a one-CTA-a-tile grid, or a persistent grid with an in-order tile counter); 'lpt':
    heaviest unit first (a persistent grid with a longest-processing-time tile scheduler); bwd_bytes: the backward's
    memory-bound kernels' bytes a q element; gqa_sum: torch sums per-query-head dK / dV (grouped K/V expanded);
    split_kv: the forward's split-KV refusal (flash_api.cpp's heuristic)."""

    name: str
    tiles: dict = field(hash=False)
    order: str = "launch"
    bwd_bytes: float = 14.0
    gqa_sum: bool = True
    split_kv: bool = True


FA2 = Grid("fa2", TILES, bwd_bytes=BWD_BYTES_PER_Q_ELEMENT)


def cta_tiles(pass_: str, head_dim: int, batch: int, heads: int, seq_q: int, seq_kv: int | None = None,
              causal: bool = True, grid: Grid = FA2) -> list[int]:
    """Score tiles each CTA (work unit) computes, in launch order (block index fastest, then batch, then head)."""
    seq_kv = seq_q if seq_kv is None else seq_kv
    bm, bn, _ = _tiles(grid.tiles, pass_, head_dim, seq_q, seq_kv, causal)
    return list(_one_head(pass_, bm, bn, seq_q, seq_kv, causal)) * (batch * heads)


def _tiles(known: dict, pass_: str, head_dim: int, seq_q: int, seq_kv: int, causal: bool) -> tuple:
    """known[(pass, head_dim)] (a grid's tiles or a form's constants); FormError where the form has no such pass and head
    size, or for a causal call with unequal lengths."""
    if (pass_, head_dim) not in known:
        raise FormError(f"head size {head_dim} / pass {pass_!r}: the form knows {sorted({d for _, d in known})}")
    if causal and seq_q != seq_kv:
        raise FormError(f"causal with seq_q {seq_q} != seq_kv {seq_kv}: not in the form")
    return known[(pass_, head_dim)]


@lru_cache(maxsize=1024)
def _one_head(pass_: str, bm: int, bn: int, seq_q: int, seq_kv: int, causal: bool) -> tuple[int, ...]:
    n_m, n_n = math.ceil(seq_q / bm), math.ceil(seq_kv / bn)
    if pass_ == "fwd":
        return tuple(min(n_n, math.ceil((i + 1) * bm / bn)) if causal else n_n for i in range(n_m))
    return tuple(n_m - (j * bn) // bm if causal else n_m for j in range(n_n))


def makespan(durations: list[float], slots: int) -> float:
    """Greedy list schedule in order on `slots` identical slots: when the last CTA ends."""
    if len(durations) <= slots:
        return max(durations)
    heap = list(durations[:slots])
    heapq.heapify(heap)
    for d in durations[slots:]:
        heapq.heapreplace(heap, heap[0] + d)
    return max(heap)


def repeated_makespan(per_head: list[float], heads: int, slots: int, order: str = "launch") -> float:
    """makespan(per_head * heads, slots) ('lpt': of that list sorted heaviest first), bit for bit, without building
    the list: the slots start at 0.0 (0.0 + d is d, so after the first `slots` CTAs the heap holds the same values as
    makespan's; a greedy schedule's values depend on the heap's values, not on which of two equal slots is taken). One
    duration for every CTA (non-causal and 'fa2-full' calls): every slot takes the same additions wave after wave, so
    the makespan is that duration added ceil(CTAs / slots) times, summed in the same order."""
    if len(set(per_head)) == 1:
        total = 0.0
        for _ in range(math.ceil(len(per_head) * heads / slots)):
            total += per_head[0]
        return total
    heap, replace = [0.0] * slots, heapq.heapreplace
    if order == "lpt":   # every head's heaviest unit, then the next heaviest: the whole list sorted, heaviest first
        for d in sorted(per_head, reverse=True):
            for _ in range(heads):
                replace(heap, heap[0] + d)
        return max(heap)
    for _ in range(heads):
        for d in per_head:
            replace(heap, heap[0] + d)
    return max(heap)


def side_bytes(pass_: str, batch: int, heads: int, kv_heads: int, seq_q: int, head_dim: int,
               seq_kv: int | None = None, grid: Grid = FA2) -> float:
    """Bytes the backward's memory-bound kernels move (0 for the forward)."""
    if pass_ == "fwd":
        return 0.0
    seq_kv = seq_q if seq_kv is None else seq_kv
    gqa = (4.0 * heads + 4.0 * kv_heads) * batch * seq_kv * head_dim if kv_heads != heads and grid.gqa_sum else 0.0
    return grid.bwd_bytes * batch * heads * seq_q * head_dim + gqa


def check_range(batch: int, heads: int, kv_heads: int, seq: int, head_dim: int, sms: int, grid: Grid = FA2) -> None:
    """FormError where the shape is not the form's: bad sizes, or (flash) few enough CTAs for its split-KV kernel."""
    if min(batch, heads, kv_heads, seq) < 1 or heads % kv_heads:
        raise FormError(f"shape b {batch} h {heads}/{kv_heads} s {seq}: sizes must be >= 1 and heads a multiple of kv_heads")
    if grid.split_kv and batch * heads * math.ceil(seq / SPLIT_KV_BLOCK) < SPLIT_KV_FRACTION * 2 * sms:
        raise FormError(f"shape b {batch} h {heads} s {seq}: few enough CTAs that flash takes its split-KV kernel (not in the form)")


def kernel_s(pass_: str, batch: int, heads: int, seq_q: int, seq_kv: int, head_dim: int, causal: bool = True,
             sms: int = FIT_SMS, consts: dict | None = None, grid: Grid = FA2) -> float:
    """The kernel's makespan (seconds) on `sms` SMs, the memory-bound backward kernels not included; consts None:
    flash's fitted CONSTS (another grid passes its own)."""
    u_a = _tiles(CONSTS if consts is None else consts, pass_, head_dim, seq_q, seq_kv, causal)
    bm, bn, per_sm = _tiles(grid.tiles, pass_, head_dim, seq_q, seq_kv, causal)
    return _kernel(pass_, batch * heads, seq_q, seq_kv, bm, bn, causal, sms * per_sm, grid.order, *u_a)


@lru_cache(maxsize=4096)
def _kernel(pass_: str, bh: int, seq_q: int, seq_kv: int, bm: int, bn: int, causal: bool, slots: int, order: str,
            u: float, a: float) -> float:
    # the schedule depends on batch and heads only through their product (the per-head pattern repeats)
    per_head = [a + u * t for t in _one_head(pass_, bm, bn, seq_q, seq_kv, causal)]
    return repeated_makespan(per_head, bh, slots, order)


def form_time_s(consts: dict | None, pass_: str, batch: int, heads: int, kv_heads: int, seq: int, head_dim: int,
                sms: int = FIT_SMS, hbm_Bps: float = FIT_HBM_BPS, seq_kv: int | None = None, causal: bool = True,
                grid: Grid = FA2) -> float:
    """The form's time of one pass (backward: the backward alone), seconds; consts[(pass, d)] = (u_s, a_s) (None: flash's
    fitted CONSTS). `seq` is seq_q; seq_kv defaults to it."""
    seq_kv = seq if seq_kv is None else seq_kv
    check_range(batch, heads, kv_heads, seq, head_dim, sms, grid)
    kernel = kernel_s(pass_, batch, heads, seq, seq_kv, head_dim, causal, sms, consts, grid)
    return kernel + side_bytes(pass_, batch, heads, kv_heads, seq, head_dim, seq_kv, grid) / hbm_Bps


def fluid_time_s(consts: dict, pass_: str, batch: int, heads: int, kv_heads: int, seq: int, head_dim: int,
                 sms: int = FIT_SMS, hbm_Bps: float = FIT_HBM_BPS, grid: Grid = FA2) -> float:
    """A diagnostic: the same CTAs and constants with no waves and no tail (their total time spread evenly over the
    slots): what the schedule adds is form - fluid."""
    check_range(batch, heads, kv_heads, seq, head_dim, sms, grid)
    u, a = consts[(pass_, head_dim)]
    tiles = cta_tiles(pass_, head_dim, batch, heads, seq, grid=grid)
    fluid = (a * len(tiles) + u * sum(tiles)) / (sms * grid.tiles[(pass_, head_dim)][2])
    return fluid + side_bytes(pass_, batch, heads, kv_heads, seq, head_dim, grid=grid) / hbm_Bps
