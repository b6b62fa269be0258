"""The attention kernel a framework runs, against the one the GPU card was measured with (issue 44).

The GPU cards' attention curves are gpu-micro's `attention` section: torch's default scaled_dot_product_attention,
which on Hopper (torch 2.11) is cuDNN's fused attention (the H200 bundle below: default within 0-8% of the cudnn
backend at every shape). Frameworks that run FlashAttention 2 (flash-attn 2.x; torch's `flash` SDPA backend, the same
kernels) run the Ampere code path on Hopper at about half that rate. A framework's `attention_kernel` 'fa2' prices each
attention pass at the card's time x (default / flash) of the same pass, the median over 2K-128K tokens per head size,
measured on one H200 (calibration/h200x1-attention-backends-2026-11-28, gpu-micro attention-backends; backward = the
forward + backward call less the forward). Both kernels were timed on the same GPU in the same process, so the ratio
carries to the H100 (same SM architecture, sm90) on the assumption that the clock and power limit scale both alike.

  attention time (fa2) = card's attention time (compute part) / ratio[head_dim][pass]

'fa2-full' is the same kernel computing every score block of a causal pass (no causal block skipping): the causal
pass is priced as the non-causal one (2x the FLOPs). It stands for what the llm-foundry MPT tables imply (session 27,
docs/models/llm-findings.md): their attention cost is the full s x s at FA2's rate, or equivalently an older kernel
at half FA2's rate with skipping; which of the two is not established.

Valid: causal, bf16, MHA, head size 64 / 128 (other head sizes take the nearer one); the FA2 ratio on measured
Hopper cards only (hopper_measured; other cards are unchanged); the cudnn / default kernel ('card') needs no change. Not modelled:
FlashAttention 3 (close to cuDNN on Hopper by its paper; not measured here).
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, fields, replace
from functools import cache
from pathlib import Path

from simcluster.hardware.gpu import GpuParams

KERNELS = ("card", "fa2", "fa2-full")
BUNDLE = Path(__file__).resolve().parents[2] / "calibration" / "h200x1-attention-backends-2026-11-28"
MIN_SEQ = 2048     # below it both kernels are launch- and ramp-bound: the card's own seq_half curve prices that


def backend_rows(bundle: Path = BUNDLE) -> list[dict]:
    """The gpu-micro document's attention_backends records (ValueError naming the file when it has none)."""
    path = bundle / "gpu-micro" / "gpu-micro" / "stdout.txt"
    text = path.read_text()
    rows = json.loads(text[text.find("{"):]).get("attention_backends") or []
    if not rows:
        raise ValueError(f"{path}: no attention_backends records (gpu-micro --sections attention-backends)")
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


def hopper_measured(gpu) -> bool:
    """A card measured on a Hopper GPU (H100 / H200, not derived from another card): the only ones whose attention
    curve is cuDNN's. The derived A100 / B200 cards take the H100's curves x published best-kernel ratios (docs/models/
    gpu.md), so a kernel ratio measured on Hopper does not carry to them: they are left as they are."""
    return str(gpu.name).lower().startswith(("h100", "h200")) and not getattr(gpu, "derived_from", "")


@cache
def fa2_ratios() -> dict[str, dict[int, float]]:
    return fit_ratios(backend_rows())


def for_kernel(gpu, kernel: str):
    """The GPU card as seen by a framework running `kernel` ('card': unchanged; 'fa2': on a measured Hopper card the
    attention efficiencies x the measured FlashAttention-2 / card ratio per head size and pass, other cards unchanged;
    'fa2-full': that card with causal passes priced as full ones)."""
    if kernel not in KERNELS:
        raise ValueError(f"attention kernel {kernel!r}: expected one of {', '.join(KERNELS)}")
    if kernel == "card":
        return gpu
    fa2 = gpu
    if hopper_measured(gpu):   # other cards: FA2 is taken as what their curve already is (A100: its native kernel)
        ratios = fa2_ratios()

        def scaled(table: dict[int, float], by: dict[int, float]) -> dict[int, float]:
            return {d: e * by[min(by, key=lambda m: abs(m - d))] for d, e in table.items()}
        fa2 = replace(gpu, attn_efficiency_fwd=scaled(gpu.attn_efficiency_fwd, ratios["fwd"]),
                      attn_efficiency_bwd=scaled(gpu.attn_efficiency_bwd, ratios["bwd"]))
    if kernel == "fa2-full":
        return NoCausalSkip(**{f.name: getattr(fa2, f.name) for f in fields(fa2)})
    return fa2


@dataclass(frozen=True)
class NoCausalSkip(GpuParams):
    """A card whose fused attention computes every score block of a causal pass (the mask applied, no block skipped)."""

    @staticmethod
    def attention_flops(batch: int, heads: int, seq_q: int, seq_kv: int, head_dim: int,
                        causal: bool = True, backward: bool = False) -> float:
        return GpuParams.attention_flops(batch, heads, seq_q, seq_kv, head_dim, False, backward)
