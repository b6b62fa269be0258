"""The cost of dropout inside fused causal attention on H100, fitted and held out (issue 22, session 19).

Data: calibration/h100x1-megatron-shaped-2026-11-23/attention_dropout.json (causal SDPA, dropout 0 and 0.1, forward
and forward + backward, 20 shapes, cuDNN and flash-attention 2 backends). Model (hardware/gpu.py): dropout draws one
random number per score element a pass computes, so it adds
    elements / rate_pass,    elements = batch * heads * seq_q * seq_kv (/ 2 causal)
to the attention forward and to its backward (which regenerates the mask), independent of the head size.
Fit (decided before looking at the errors): the seq 4096 rows of the cuDNN backend (the backend Transformer Engine
1.7-1.9 selects on sm90), least squares through the origin of the added time against elements. Held out: the seq 2048
and 8192 rows. Printed: the fitted rates, every held-out row's dropout-on time predicted as (its measured dropout-off
time + the term) against measured, the mean |error|, the same for flash-attention 2 as a note, the shipped H100 cards'
values, and the weight-gradient GEMMs with an fp32 main_grad output (bf16 out / fp32 out / fp32 accumulate / bf16 +
fp32 add).

    python studies/attention_dropout.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.fit.gpu_dropout import PASSES, elements, fit_rates, pass_times, sweep_rows  # noqa: E402
from simcluster.hardware.gpu import load_gpu  # noqa: E402

BUNDLE = ROOT / "calibration" / "h100x1-megatron-shaped-2026-11-23" / "attention_dropout.json"
CARDS = (ROOT / "models" / "gpu" / "h100-sxm.yaml", ROOT / "models" / "gpu" / "h100-sxm-interleaved.yaml")
FIT_SEQ = 4096


def held_out_errors(rows: list[dict], rates: dict[str, float]) -> list[tuple[dict, str, float, float]]:
    """(row, pass, predicted, measured) of the dropout-on time, predicted = measured dropout-off + elements / rate."""
    return [(r, p, pass_times(r)[p][0] + elements(r) / rates[p], pass_times(r)[p][1]) for r in rows for p in PASSES]


def split(backend: str) -> tuple[list[dict], list[dict]]:
    rows = sweep_rows(BUNDLE, backend)
    return [r for r in rows if r["seq"] == FIT_SEQ], [r for r in rows if r["seq"] != FIT_SEQ]


def report(backend: str) -> dict[str, float]:
    fit, held = split(backend)
    rates = fit_rates(fit)
    print(f"{backend}: fitted on {len(fit)} shapes (seq {FIT_SEQ}): forward {rates['fwd']:.4g} elements/s "
          f"({1e12 / rates['fwd']:.3f} ps each), backward {rates['bwd']:.4g} ({1e12 / rates['bwd']:.3f} ps)")
    errs = held_out_errors(held, rates)
    for r, p, pred, meas in errs:
        base = pass_times(r)[p][0]
        print(f"  held out b{r['batch']} a{r['heads']:>2} s{r['seq']:>5} d{r['head_dim']:>3} {p}: no dropout {1e6 * base:8.1f} us, "
              f"with: measured {1e6 * meas:8.1f}, predicted {1e6 * pred:8.1f} ({100 * (pred / meas - 1):+5.1f}%)")
    for p in ("fwd", "bwd"):
        e = [abs(pred / meas - 1) for _, q, pred, meas in errs if q == p]
        added = [abs((pred - pass_times(r)[q][0]) / (meas - pass_times(r)[q][0]) - 1) for r, q, pred, meas in errs
                 if q == p and meas - pass_times(r)[q][0] > 0.05 * meas]
        print(f"  {p}: held-out time with dropout {100 * sum(e) / len(e):.1f}% mean / {100 * max(e):.1f}% max |error| ({len(e)} shapes); "
              f"the added time alone {100 * sum(added) / max(1, len(added)):.0f}% mean ({len(added)} shapes where it is > 5% of the pass)")
    return rates


def main_grad_gemms(p) -> None:
    """The weight-gradient GEMMs writing an fp32 main_grad: measured, and the LLM model's price (ops.grad_accumulate:
    the card's bf16 GEMM + a 10-byte-per-element pass at the copy rate), never fitted on them."""
    print("\nWeight-gradient GEMMs (M, N, K) writing an fp32 main_grad, us: bf16 out | fp32 out | fp32 accumulate | bf16 + fp32 add"
          " | model: bf16 GEMM + 10 B per element at the copy rate (h100-sxm)")
    errors = []
    for g in json.loads(BUNDLE.read_text())["gemm"]:
        m, n, k = g["m"], g["n"], g["k"]
        model = p.gemm_time_s(m, n, k) + p.memory_time_s(10.0 * m * n)
        errors.append(model / g["fp32_accumulate_s"] - 1)
        times = " | ".join(f"{1e6 * g[key]:7.1f}" for key in ("bf16_out_s", "fp32_out_s", "fp32_accumulate_s", "bf16_then_fp32_add_s"))
        print(f"  {m:>5} x {n:>6} x {k:>5}: {times} | {1e6 * model:7.1f} ({100 * errors[-1]:+.1f}% against the fp32 accumulate;"
              f" accumulate / bf16 out {g['fp32_accumulate_s'] / g['bf16_out_s']:.2f})")
    print(f"  model against the fp32 accumulate: {100 * sum(map(abs, errors)) / len(errors):.1f}% mean, "
          f"{100 * max(map(abs, errors)):.1f}% max |error| over {len(errors)} shapes")


def main() -> int:
    rates = report("cudnn")
    print("(flash-attention 2, a note: not the backend Megatron-Core / NeMo run on H100)")
    report("flash")
    for card in CARDS:
        p = load_gpu(card)[0]
        print(f"{card.name}: dropout_elements_per_s fwd {p.attn_dropout_rate_fwd:.4g}, bwd {p.attn_dropout_rate_bwd:.4g}"
              f" (fit: {rates['fwd']:.4g}, {rates['bwd']:.4g})")
    main_grad_gemms(load_gpu(CARDS[0])[0])
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    sys.exit(main())
