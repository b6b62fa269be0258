"""The attention kernel a framework runs, against the one the GPU card was measured with (issue 44).

The GPU cards' attention curves are gpu-micro's `attention` section: torch's default scaled_dot_product_attention,
which on Hopper (torch 2.11) is cuDNN's fused attention (the H200 bundle below: default within 0-8% of the cudnn
backend at every shape). Frameworks that run FlashAttention 2 (flash-attn 2.x; torch's `flash` SDPA backend, the same
kernels) run the Ampere code path on Hopper at about half that rate. A framework's `attention_kernel` 'fa2', on a
measured Hopper card (hopper_measured), prices each attention call with llm/flash_schedule.py's form (session 38,
adopted by the registered check calibration/h200x1-attention-wave-2026-11-29: 2.5% against the ratio's 10.6% mean
|error| over 124 held-out flash passes):

  attention time (fa2) = max(launch, makespan(CTAs of a + u tiles on SMs x slots) x R_ref / R_card
                                     + backward copies / the card's copy rate) (+ dropout as the card prices it)
  R(pass, d) = bf16 peak x the ratio card's top attention efficiency (the long-sequence rate)

R_ref is the H200 card's: an H200 card is its own reference (R_ref / R_card = 1 at its reference clock; a card moved
to another clock, llm/clock.py, scales by its own efficiencies). **H100 (extrapolated)**: the form was fitted on one
H200; an H100 card runs the same grid on the same 132 sm90 SMs with the same tiles and constants, its kernel time
scaled by the two cards' measured long-sequence cuDNN attention rates at the same pass and head size (H200 / H100:
forward x1.014 / x1.021, backward x0.961 / x0.966 at d 64 / 128) and its backward's copies at its own copy rate; no
flash-attn measurement on an H100 checks it.

Shapes the form refuses take the ratio card (ratio_card, the 'fa2' price before session 38): the card's time x
(default / flash) of the same pass, the median over 2K-128K tokens per head size, measured on one H200
(calibration/h200x1-attention-backends-2026-11-28, gpu-micro attention-backends; backward = the forward + backward
call less the forward):

  attention time (fa2, refused shapes) = card's attention time (compute part) / ratio[head_dim][pass]

refused: a forward of fewer than 0.8 x 2 x SMs CTAs of 64 query rows (flash's split-KV kernel), head sizes other than
64 / 128, causal calls with seq_q != seq_kv, fp8 / fp32.

'fa2-full' is the same kernel computing every score tile of a causal pass (no causal block skipping): in the form every
CTA does the full row (column) of tiles, i.e. the non-causal pass; on the ratio card the causal pass is priced as the
non-causal one (2x the FLOPs). It stands for what the llm-foundry MPT tables imply (session 27,
docs/models/llm-findings.md): their attention cost is the full s x s at FA2's rate, or equivalently an older kernel
at half FA2's rate with skipping; which of the two is not established. The non-causal form (fa2-full, torch's cp ring
steps in llm/torch_cp.py) uses the causal fit's u and a: checked on one H200 by
calibration/h200x1-attention-noncausal-2026-11-29 (3.7% mean |error| vs the ratio card's 10.9%, 34 passes, registered;
rule KEEP); on the H100 extrapolated.

Valid: bf16, head size 64 / 128, causal seq_q = seq_kv measured (2K-128K, 8-40 heads, batch 1-8, MHA and GQA) on one
H200; other measured Hopper cards as said above; derived cards (A100 / B200) are unchanged (their curve is taken as
their FA2 kernel). Not modelled: FlashAttention 3 (close to cuDNN on Hopper by its paper; not measured here).

The card's own kernel ('card': cuDNN, torch's default SDPA, Transformer Engine's fused attention) on a measured Hopper
card is priced the same way (CudnnCard, session 39): llm/cudnn_schedule.py's grid and constants on the same schedule,
R the card's own long-sequence rate (R_ref the H200 card's; an H100 card extrapolated as for flash; no answer
caveat: the published H100 Megatron tables check that class end to end); below 2K tokens, head sizes other than
64 / 128, causal calls with seq_q != seq_kv and fp8 / fp32 keep the card's curve. Registered check:
calibration/h200x1-attention-cudnn-2026-11-30 (its README's Result). Derived cards keep their curve.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field, fields, replace
from functools import cache
from pathlib import Path
from typing import ClassVar

from simcluster.errors import SimclusterError
from simcluster.hardware.gpu import GpuParams, load_gpu, table_at
from simcluster.llm import cudnn_schedule, flash_schedule

KERNELS = ("card", "fa2", "fa2-full")
BUNDLE = Path(__file__).resolve().parents[2] / "calibration" / "h200x1-attention-backends-2026-11-28"
FORM_REFERENCE = BUNDLE.parents[1] / "models" / "gpu" / "h200-sxm-interleaved.yaml"   # the H200 the form was fitted on
# the flash ratio fit's floor is the cuDNN form's measured floor (cudnn_schedule.FLOOR_SEQ, one number; a test or read-out
# that moves cudnn_schedule.MIN_SEQ to refuse the form leaves the fitted ratios alone, whichever module was imported
# first): below 2K tokens both kernels are launch- and ramp-bound and the card's own seq_half curve, measured there,
# prices the call
MIN_SEQ = cudnn_schedule.FLOOR_SEQ


def backend_rows(bundle: Path = BUNDLE) -> list[dict]:
    """The gpu-micro document's attention_backends records; a one-line SimclusterError naming the file when it is missing
    or unreadable, holds no JSON document, or has no such records (review B55 item 11: a missing calibration file was a
    traceback at prediction time)."""
    path = bundle / "gpu-micro" / "gpu-micro" / "stdout.txt"
    expected = "the attention-backends device run's gpu-micro JSON document (gpu-micro --sections attention-backends)"
    try:
        text = path.read_text()
        document = json.loads(text[text.find("{"):]) if "{" in text else None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SimclusterError(f"cannot read it ({type(exc).__name__}); expected {expected}", where=str(path)) from None
    rows = document.get("attention_backends") if isinstance(document, dict) else None
    if not rows or not isinstance(rows, list):
        raise SimclusterError(f"no attention_backends records; expected {expected}", where=str(path))
    return rows


def fit_ratios(rows: list[dict], kernel: str = "flash", reference: str = "default") -> dict[str, dict[int, float]]:
    """{'fwd': {head_dim: r}, 'bwd': {...}}: r = reference time / kernel time of the same pass (the kernel's rate as a
    fraction of the reference's), the median over sequences >= MIN_SEQ."""
    times: dict[tuple, float] = {}
    for r in rows:
        if r.get("time_s") and not r.get("error"):
            times[(r["backend"], r["mode"], r["head_dim"], r["seq_q"], r["batch"], r["heads"])] = r["time_s"]
    out: dict[str, dict[int, list[float]]] = {"fwd": {}, "bwd": {}}
    for (backend, mode, d, seq, b, h), t in times.items():
        if backend != kernel or mode != "fwd" or seq < MIN_SEQ:
            continue
        ref_f, ref_fb = times.get((reference, "fwd", d, seq, b, h)), times.get((reference, "fwd_bwd", d, seq, b, h))
        fb = times.get((kernel, "fwd_bwd", d, seq, b, h))
        if ref_f and ref_fb and fb and fb > t and ref_fb > ref_f:
            out["fwd"].setdefault(d, []).append(ref_f / t)
            out["bwd"].setdefault(d, []).append((ref_fb - ref_f) / (fb - t))
    return {p: {d: statistics.median(v) for d, v in sorted(by_d.items())} for p, by_d in out.items()}


GH100_SMS = 132                                            # the H100 / H200 die
HOPPER_CARDS = ("models/gpu/h100-sxm", "models/gpu/h200-sxm")   # measured cards a same-die card may carry curves from


def hopper_measured(gpu) -> bool:
    """A card whose attention curve is cuDNN's measured on a Hopper GPU: an H100 / H200 card measured here, or one
    derived from such a card on the same GH100 die (132 SMs) with its curves unchanged (models/gpu/h100-sxm5-94gb.yaml:
    only HBM and capacity differ; session 55 lseq55). The derived A100 / B200 cards take the H100's curves x published
    best-kernel ratios (docs/models/gpu.md), so a kernel ratio measured on Hopper does not carry to them: they are left
    as they are."""
    if not str(gpu.name).lower().startswith(("h100", "h200")):
        return False
    source = str(getattr(gpu, "derived_from", ""))
    return not source or (gpu.sm_count == GH100_SMS and source.startswith(HOPPER_CARDS))


@cache
def fa2_ratios() -> dict[str, dict[int, float]]:
    return fit_ratios(backend_rows())


def ratio_card(gpu):
    """The card with its attention efficiencies x the measured FlashAttention-2 / card ratio per head size and pass (the
    'fa2' price before the schedule form; still the price of the shapes the form refuses)."""
    ratios = fa2_ratios()

    def scaled(table: dict[int, float], by: dict[int, float]) -> dict[int, float]:
        return {d: e * by[min(by, key=lambda m: abs(m - d))] for d, e in table.items()}
    return replace(gpu, attn_efficiency_fwd=scaled(gpu.attn_efficiency_fwd, ratios["fwd"]),
                   attn_efficiency_bwd=scaled(gpu.attn_efficiency_bwd, ratios["bwd"]))


def for_kernel(gpu, kernel: str):
    """The GPU card as seen by a framework running `kernel` ('card': unchanged; 'fa2': on a measured Hopper card the
    flash schedule form (Fa2Card), the ratio card below it; other cards unchanged; 'fa2-full': the same with every
    score tile of a causal pass computed)."""
    if kernel not in KERNELS:
        raise ValueError(f"attention kernel {kernel!r}: expected one of {', '.join(KERNELS)}")
    if kernel == "card":   # on a measured Hopper card cuDNN's schedule form (CudnnCard); other cards their curve
        if not hopper_measured(gpu):
            return gpu
        return CudnnCard(**{f.name: getattr(gpu, f.name) for f in fields(gpu)}, form_rates=card_rates(gpu))
    if not hopper_measured(gpu):   # other cards: FA2 is taken as what their curve already is (A100: its native kernel)
        return gpu if kernel == "fa2" else NoCausalSkip(**{f.name: getattr(gpu, f.name) for f in fields(gpu)})
    fa2 = ratio_card(gpu)
    cls = Fa2FullCard if kernel == "fa2-full" else Fa2Card
    return cls(**{f.name: getattr(fa2, f.name) for f in fields(fa2)}, form_rates=form_rates(gpu))


def form_rates(gpu) -> dict[tuple[str, int], float]:
    """{(pass, head_dim): FLOP/s}: the long-sequence attention rate (bf16 peak x the ratio card's top efficiency) of
    the H200 the form was fitted on, against which a card's own rate scales the form's kernel time. An H200 card is its
    own reference (scale 1); an H100 card takes the H200 card's (FORM_REFERENCE): the assumption that the two run the
    same kernels on the same 132 sm90 SMs at speeds in the ratio of their measured cuDNN attention rates."""
    fa2 = ratio_card(_reference_for(gpu))
    return {(p, d): _rate(fa2, p, d) for p, d in flash_schedule.TILES}


def card_rates(gpu) -> dict[tuple[str, int], float]:
    """{(pass, head_dim): FLOP/s}: the long-sequence rate of the card's own (cuDNN) curve on the H200 the cuDNN form was
    fitted on (an H200 card: its own; an H100 card: the H200 card's), as form_rates for CudnnCard."""
    ref = _reference_for(gpu)
    return {(p, d): _rate(ref, p, d) for p, d in cudnn_schedule.TILES}


def scaled_from_reference(gpu) -> bool:
    """A measured Hopper card whose schedule forms are the reference H200's scaled by the two cards' rates (an H100):
    the forms' extrapolated case, which llm/caveats.py names."""
    return hopper_measured(gpu) and _reference_for(gpu) is not gpu


def _reference_for(gpu):
    """The card whose rates a form's kernel time is scaled against: an H200 card itself, any other (H100) the H200 card
    the forms were fitted on (FORM_REFERENCE)."""
    return gpu if str(gpu.name).lower().startswith("h200") else _reference_card()


@cache
def _reference_card():
    return load_gpu(FORM_REFERENCE)[0]


def _rate(gpu, pass_: str, head_dim: int) -> float:
    table = gpu.attn_efficiency_bwd if pass_ == "bwd" else gpu.attn_efficiency_fwd
    return gpu.peak_flops["bf16"] * table_at(table, head_dim)


@dataclass(frozen=True)
class FormCard(GpuParams):
    """A measured Hopper card whose fused attention is priced by a schedule form (llm/flash_schedule.py's schedule with
    the class's GRID and CONSTS): kernel time x the reference rate / this card's (form_rates: the rate of the card the
    form was fitted on), the backward's memory-bound kernels at this card's copy rate, the launch floor, dropout as the
    card prices it; shapes the form refuses (check_range, head sizes without tiles, causal with seq_q != seq_kv,
    fp8 / fp32, and the class's own refusals: refused()) take the card's curve (GpuParams)."""

    form_rates: dict = field(default_factory=dict)
    FULL: ClassVar[bool] = False     # every score tile computed, the causal mask applied in-tile ('fa2-full')
    GRID: ClassVar = flash_schedule.FA2
    CONSTS: ClassVar = None          # None: flash_schedule.CONSTS

    def refused(self, batch: int, heads: int, seq_q: int, seq_kv: int, head_dim: int) -> bool:
        return False

    def attention_time_s(self, batch: int, heads: int, kv_heads: int, seq_q: int, seq_kv: int, head_dim: int,
                         causal: bool = True, backward: bool = False, dtype: str = "bf16", dropout: bool = False) -> float:
        pass_ = "bwd" if backward else "fwd"
        if dtype in ("bf16", "fp16") and (pass_, head_dim) in self.form_rates \
                and not self.refused(batch, heads, seq_q, seq_kv, head_dim):
            try:
                flash_schedule.check_range(batch, heads, kv_heads, seq_q, head_dim, self.sm_count, self.GRID)
                kernel = flash_schedule.kernel_s(pass_, batch, heads, seq_q, seq_kv, head_dim, causal and not self.FULL,
                                                 self.sm_count, self.CONSTS, self.GRID)
            except flash_schedule.FormError:
                pass
            else:
                t = kernel * self.form_rates[(pass_, head_dim)] / _rate(self, pass_, head_dim)
                t += flash_schedule.side_bytes(pass_, batch, heads, kv_heads, seq_q, head_dim, seq_kv,
                                               self.GRID) / self.hbm_bandwidth_Bps
                return max(self.launch_s, t) + (self.attention_dropout_s(batch, heads, seq_q, seq_kv, causal, backward)
                                                if dropout else 0.0)
        return super().attention_time_s(batch, heads, kv_heads, seq_q, seq_kv, head_dim, causal, backward, dtype, dropout)


@dataclass(frozen=True)
class Fa2Card(FormCard):
    """A measured Hopper card running torch's flash SDPA kernels: attention priced by llm/flash_schedule.py's form
    (FormCard); refused shapes (too few CTAs: flash's split-KV kernel; head sizes other than 64 / 128; causal with
    seq_q != seq_kv; fp8 / fp32) take the ratio card's curve (its fields are the ratio card's).

    The split-KV refusal is flash's forward heuristic (flash_api.cpp), but it is applied to the call: both passes of
    such a call, the backward too, take the ratio card (the wave probe's registered predictions were made this way).
    Below 2K tokens the form is applied though neither pass was measured there (the fit's records are all >= 2K
    tokens): its schedule, the CTA constant a and the launch floor carry the price; unchecked."""


@dataclass(frozen=True)
class CudnnCard(FormCard):
    """A measured Hopper card's own fused attention (cuDNN: torch's default SDPA, Transformer Engine's fused
    attention) priced by llm/cudnn_schedule.py's form (FormCard); below cudnn_schedule.MIN_SEQ tokens, with fewer than
    MIN_WAVES forward waves of units, and where the form refuses (head sizes other than 64 / 128, causal with seq_q !=
    seq_kv, fp8 / fp32), the card's own curve."""

    GRID: ClassVar = cudnn_schedule.GRID
    CONSTS: ClassVar = cudnn_schedule.CONSTS

    def refused(self, batch: int, heads: int, seq_q: int, seq_kv: int, head_dim: int) -> bool:
        tiles = self.GRID.tiles.get(("fwd", head_dim))
        if min(seq_q, seq_kv) < cudnn_schedule.MIN_SEQ or tiles is None:
            return True
        units = batch * heads * -(-seq_q // tiles[0])
        return units < cudnn_schedule.MIN_WAVES * self.sm_count * tiles[2]


@dataclass(frozen=True)
class Fa2FullCard(Fa2Card):
    """Fa2Card computing every score tile of a causal pass ('fa2-full'); its ratio-card fallback prices the causal pass
    as the full one."""

    FULL: ClassVar[bool] = True

    @staticmethod
    def attention_flops(batch: int, heads: int, seq_q: int, seq_kv: int, head_dim: int,
                        causal: bool = True, backward: bool = False) -> float:
        return GpuParams.attention_flops(batch, heads, seq_q, seq_kv, head_dim, False, backward)


@dataclass(frozen=True)
class NoCausalSkip(GpuParams):
    """A card whose fused attention computes every score block of a causal pass (the mask applied, no block skipped)."""

    @staticmethod
    def attention_flops(batch: int, heads: int, seq_q: int, seq_kv: int, head_dim: int,
                        causal: bool = True, backward: bool = False) -> float:
        return GpuParams.attention_flops(batch, heads, seq_q, seq_kv, head_dim, False, backward)
