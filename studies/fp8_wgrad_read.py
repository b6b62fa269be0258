"""Read studies/fp8_wgrad_device.py's document against the H200 card (session 59, mlperf59 diagnostic; development).

Per weight-gradient GEMM of GPT-3 175B at TP 4: measured times (us) and what the model prices -- the card's fp8 GEMM
(bf16 out) plus ops.grad_accumulate's separate pass (10 bytes a weight element at the HBM rate), i.e. the
fp8 weight gradient with its main_grad addition -- against the two brackets measured: the fp8 GEMM writing fp32
(the fused epilogue's write, no C read) and the unfused fp32 product added into main_grad. And the bf16 case the
model's term was measured on (torch.addmm, fp32 C accumulate) at these shapes.
    python studies/fp8_wgrad_read.py [DOCUMENT.json]   (default: the bundle calibration/h200x1-fp8wgrad59-2026-12-02)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.hardware.gpu import load_gpu  # noqa: E402
from simcluster.llm.framework import MEGATRON  # noqa: E402

DEFAULT = ROOT / "calibration" / "h200x1-fp8wgrad59-2026-12-02" / "runs" / "fp8-wgrad.json"
CARD = ROOT / "models" / "gpu" / "h200-sxm.yaml"
ACCUMULATE_BYTES = MEGATRON.grad_accumulate_bytes   # the main_grad pass the model prices (llm/ops.grad_accumulate)


def read(path: Path) -> dict:
    """The device document, or one line naming the file and what was expected (exit 2)."""
    try:
        doc = json.loads(path.read_text())
        if not isinstance(doc, dict) or not isinstance(doc.get("gemms"), list):
            raise SimclusterError("expected fp8_wgrad_device.py's JSON document (a 'gemms' list)")
        return doc
    except (OSError, json.JSONDecodeError, SimclusterError) as e:
        print(f"fp8_wgrad_read.py: {path}: {e}", file=sys.stderr)
        raise SystemExit(2) from None


def main(path: Path) -> None:
    doc = read(path)
    gpu = load_gpu(CARD)[0]
    print("fp8 fwd: the forward GEMM [tokens, N] = [tokens, K_in] [K_in, N], bf16 out, and the card's price; fp8 bf16 / f32 /"
          " f32+add: the weight gradient with a bf16 output, an fp32 output, an fp32 output added into main_grad; card: the"
          " card's fp8 weight-gradient GEMM; model: card + the 10-byte main_grad pass (what the model prices); bf16 / bf16"
          " acc: torch.mm and torch.addmm into an fp32 C")
    print(f"{doc['device'].get('name')}, torch {doc.get('torch')}, preheat {doc.get('preheat_s')} s; times in us")
    print(f"{'weight':9s} {'tok':>5s} {'M x N x K':>19s} | {'fp8 fwd':>8s} {'card':>7s} | {'fp8 bf16':>8s} {'fp8 f32':>8s} "
          f"{'f32+add':>8s} | {'card':>7s} {'model':>8s} | {'bf16':>7s} {'bf16 acc':>8s} {'acc/bf16':>8s}")
    for g in doc["gemms"]:
        m, n, k = g["m"], g["n"], g["k"]
        card_fwd = gpu.gemm_time_s(k, n, m, dtype="fp8")   # the forward GEMM [tokens, N] = [tokens, K_in] [K_in, N]
        card_wgrad = gpu.gemm_time_s(m, n, k, dtype="fp8")
        model = card_wgrad + gpu.memory_time_s(ACCUMULATE_BYTES * m * n)

        def us(key, g=g):
            v = g.get(key + "_s")
            return f"{v * 1e6:8.1f}" if v is not None else f"{'-':>8s}"
        ratio = (g["bf16_fp32_accumulate_s"] / g["bf16_out_s"]) if g.get("bf16_fp32_accumulate_s") else None
        print(f"{g['weight']:9s} {g['tokens']:5d} {m:>6d}x{n:>6d}x{k:>5d} | {us('fp8_forward_bf16_out')} {card_fwd * 1e6:7.1f} | "
              f"{us('fp8_bf16_out')} {us('fp8_fp32_out')} {us('fp8_fp32_out_then_add')} | {card_wgrad * 1e6:7.1f} {model * 1e6:8.1f} | "
              f"{us('bf16_out')[1:]} {us('bf16_fp32_accumulate')} {ratio if ratio is None else f'{ratio:8.2f}'}")


if __name__ == "__main__":
    import study_args  # an unknown argument refused before anything is read
    args = study_args.check(words=1)
    main(Path(args[0]) if args else DEFAULT)
