"""Fit the DDP step parameters (host cost per gradient tensor, compute slowdown under overlap)
to measured multi-GPU step times, by least squares on relative error (scipy)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares

from simcluster.errors import CalibrationError
from simcluster.training.step import DdpParams, simulate_step
from simcluster.training.workload import Workload


@dataclass(frozen=True)
class Observation:
    label: str
    workload: Workload
    ranks: int
    comm_time: Callable[[int], float]
    measured_s: float
    rank_workloads: tuple[Workload, ...] = ()   # each rank's own 1-GPU workload (paired traces), else ()


def predict_all(obs: list[Observation], params: DdpParams) -> np.ndarray:
    return np.array([simulate_step(o.workload, o.ranks, o.comm_time, params, rank_workloads=o.rank_workloads).step_s
                     for o in obs])


def overlap_slowdown(profiles: list[tuple[float, float, float]]) -> float:
    """Compute slowdown under overlap from profiles: (1-GPU compute busy, N-GPU compute busy,
    N-GPU compute/comm overlap), all seconds. Median of extra compute time / overlap."""
    ratios = [(busy_n - busy_1) / overlap for busy_1, busy_n, overlap in profiles if overlap > 1e-4]
    return max(0.0, float(np.median(ratios))) if ratios else 0.0


def fit_ddp(obs: list[Observation], slowdown: float = 0.0) -> tuple[DdpParams, dict]:
    if len(obs) < 2:
        raise CalibrationError(f"fitting the DDP step needs at least 2 multi-GPU runs, got {len(obs)}")
    measured = np.array([o.measured_s for o in obs])

    def residuals(x):
        return predict_all(obs, DdpParams(x[0] * 1e-6, x[1] * 1e-6, slowdown)) / measured - 1

    best = min((least_squares(residuals, x0, bounds=([0, 0], [1e4, 1e4])) for x0 in ([10, 1], [50, 20])),
               key=lambda r: r.cost)
    params = DdpParams(float(best.x[0]) * 1e-6, float(best.x[1]) * 1e-6, slowdown)
    err = residuals(best.x) * 100
    return params, {"points": len(obs), "mean_abs_error_pct": round(float(np.mean(np.abs(err))), 2),
                    "max_abs_error_pct": round(float(np.max(np.abs(err))), 2),
                    "residuals_pct": {o.label: round(float(e), 2) for o, e in zip(obs, err, strict=True)}}
