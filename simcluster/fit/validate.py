"""Predicted versus measured, row by row, for an nccl-tests log and a collective card."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simcluster.collectives.model import CollectiveParams, predict
from simcluster.traces.nccl_tests import CollectiveTrace

MIN_SCORED_BYTES = 1024  # the headline error is over sizes >= 1 KiB (below: launch noise only)


@dataclass(frozen=True)
class ValidationRow:
    size_bytes: int
    measured_s: float
    predicted_s: float
    protocol: str
    measured_busbw_Bps: float
    predicted_busbw_Bps: float

    @property
    def error(self) -> float:
        """Signed relative error of the predicted time."""
        return self.predicted_s / self.measured_s - 1.0


def validate(params: CollectiveParams, trace: CollectiveTrace) -> list[ValidationRow]:
    """Each measured row with its prediction; a log timed without CUDA graphs is predicted with the
    card's host launch floor (when it has one)."""
    rows = []
    for row in trace.rows:
        if row.size_bytes <= 0 or row.time_s <= 0:
            continue
        pred = predict(params, trace.op, row.size_bytes, trace.nranks, host_launch=not trace.cuda_graph_launches)
        rows.append(ValidationRow(row.size_bytes, row.time_s, pred.time_s, pred.protocol,
                                  row.busbw_Bps, pred.busbw_Bps))
    return rows


def summary(rows: list[ValidationRow], min_bytes: int = MIN_SCORED_BYTES) -> dict:
    def stats(selected):
        errors = np.abs([r.error for r in selected]) * 100
        if len(errors) == 0:
            return {"sizes": 0, "mean_abs_error_pct": None, "max_abs_error_pct": None}
        return {"sizes": len(errors), "mean_abs_error_pct": round(float(errors.mean()), 2),
                "max_abs_error_pct": round(float(errors.max()), 2)}
    return {"all_sizes": stats(rows), f"sizes_ge_{min_bytes}B": stats([r for r in rows if r.size_bytes >= min_bytes])}
