"""The GPU card's attention dropout rates (GpuParams.attn_dropout_rate_fwd / _bwd) from a dropout sweep.

Input: the JSON the session-19 device script wrote (calibration/h100x1-megatron-shaped-2026-11-23/attention_dropout.json:
causal SDPA forward and forward + backward at dropout 0 and 0.1, per shape and backend). Dropout draws one random
number per score element a pass computes, so each pass gains  elements / rate,  elements = b h s_q s_kv / 2 (causal);
the backward pass is (forward + backward) - forward. Fitted by least squares through the origin of the added time
against elements, on one backend's rows at one sequence length (the rest are held out: studies/attention_dropout.py).
Added to a card by hand, like the clock block: `calibrate` does not write it.
"""

from __future__ import annotations

from pathlib import Path

from simcluster import strict
from simcluster.errors import CalibrationError

PASSES = ("fwd", "bwd")


def elements(row: dict) -> float:
    """Score elements of one causal attention pass."""
    return row["batch"] * row["heads"] * row["seq"] * row["seq"] / 2


def pass_times(row: dict) -> dict[str, tuple[float, float]]:
    """Per pass: (time without dropout, time with dropout 0.1)."""
    f0, f1 = row["fwd_s_p0.0"], row["fwd_s_p0.1"]
    return {"fwd": (f0, f1), "bwd": (row["fwdbwd_s_p0.0"] - f0, row["fwdbwd_s_p0.1"] - f1)}


def sweep_rows(path: Path, backend: str) -> list[dict]:
    try:
        rows = strict.load_json(path, CalibrationError, "attention dropout sweep")["attention"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CalibrationError(f"not an attention dropout sweep ({type(exc).__name__})", where=str(path)) from None
    return [r for r in rows if r.get("backend") == backend and "error" not in r]


def fit_rates(rows: list[dict]) -> dict[str, float]:
    """Elements per second per pass: added time = elements / rate, least squares through the origin."""
    if not rows:
        raise CalibrationError("no attention rows to fit the dropout rates on")
    out = {}
    for p in PASSES:
        num = sum(elements(r) ** 2 for r in rows)
        den = sum((pass_times(r)[p][1] - pass_times(r)[p][0]) * elements(r) for r in rows)
        if den <= 0:
            raise CalibrationError(f"dropout adds no time to the {p} pass in these rows: no rate to fit")
        out[p] = num / den
    return out


def fit_dropout_rates(path: Path, backend: str = "cudnn", fit_seq: int = 4096) -> dict[str, float]:
    """The card's rates: the backend's rows at sequence fit_seq (cuDNN: what Transformer Engine 1.7-1.9 runs on sm90)."""
    return fit_rates([r for r in sweep_rows(path, backend) if r["seq"] == fit_seq])
