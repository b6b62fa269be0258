"""Fit the collective cost model (collectives/model.py) to nccl-tests logs of one machine.

Fitted: each protocol's base latency, the link bandwidth B, the LL and LL128 bandwidth
fractions, and each protocol's chunk size. Fixed (documented hardware facts, not identifiable from one collective
at one rank count): the per-chunk step latencies, NCCL's own tuning constants for NVLink.
Objective: robust (soft-L1) least squares on log(predicted / measured time) over every row,
from several deterministic starting points; the best is kept.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
from scipy.optimize import least_squares

from simcluster.collectives.chunked_ring import ChunkedRingParams
from simcluster.collectives.model import predict
from simcluster.collectives.protocol import NCCL_NVLINK_STEP_LATENCY_S, ProtocolParams
from simcluster.collectives.schedule import bus_factor
from simcluster.errors import CalibrationError
from simcluster.traces.nccl_tests import CollectiveTrace

_LOWER = np.log([1e-7, 1e-7, 1e-7, 1e8, 0.05, 0.3, 1024.0, 1024.0, 1024.0])
_UPPER = np.log([1e-3, 1e-3, 1e-3, 1e13, 0.5, 0.95, 64 * 2.0**20, 64 * 2.0**20, 64 * 2.0**20])


def params_from_vector(x: np.ndarray) -> ChunkedRingParams:
    base_ll, base_ll128, base_simple, bw, f_ll, f_ll128, c_ll, c_ll128, c_simple = map(float, np.exp(x))
    lat = NCCL_NVLINK_STEP_LATENCY_S
    return ChunkedRingParams(bw, {
        "LL": ProtocolParams("LL", base_ll, lat["LL"], f_ll, c_ll),
        "LL128": ProtocolParams("LL128", base_ll128, lat["LL128"], f_ll128, c_ll128),
        "Simple": ProtocolParams("Simple", base_simple, lat["Simple"], 1.0, c_simple),
    })


def _points(traces: list[CollectiveTrace]) -> list[tuple[str, int, int, float]]:
    points = [(t.op, r.size_bytes, t.nranks, r.time_s) for t in traces for r in t.rows
              if r.size_bytes > 0 and r.time_s > 0]
    if len(points) < 8:
        raise CalibrationError(f"only {len(points)} usable rows; the fit needs at least 8 sizes",
                               hint="run nccl-tests with e.g. -b 8 -e 8G -f 2")
    return points


def log_residuals(params: ChunkedRingParams, points) -> np.ndarray:
    return np.array([np.log(predict(params, op, size, n).time_s / t) for op, size, n, t in points])


def fit(traces: list[CollectiveTrace]) -> tuple[ChunkedRingParams, dict]:
    """Fitted params and a summary of the fit (residuals per point, rms of log error)."""
    points = _points(traces)
    nodes = {t.nodes for t in traces}
    if nodes != {1}:
        raise CalibrationError("the collective card models one node's NVLink domain; these logs span "
                               f"{max(nodes)} nodes", hint="calibrate from single-node logs")
    sizes = np.array([p[1] for p in points], dtype=float)
    times = np.array([p[3] for p in points])
    small = times[sizes <= np.percentile(sizes, 20)].min()
    big = np.argmax(sizes)
    op, size, n, t = points[big]
    bw0 = size * bus_factor(op, n) / t
    best = None
    # the fit has many local minima (the protocols' chunk sizes and fractions trade off): 12 starts over the LL
    # fraction, Simple's chunk and the link bandwidth; with 3, scipy 1.17 / numpy 2.4 ended 50% above the best cost
    for f_ll, c_simple, bw_x in itertools.product((0.2, 0.45), (2.0**20, 4 * 2.0**20), (1.0, 1.5, 2.5)):
        x0 = np.log([small * 0.9, small, small * 1.5, bw0 * bw_x, f_ll, 0.8, 64 * 1024.0, 512 * 1024.0, c_simple])
        x0 = np.clip(x0, _LOWER + 1e-9, _UPPER - 1e-9)
        result = least_squares(lambda x: log_residuals(params_from_vector(x), points), x0,
                               bounds=(_LOWER, _UPPER), loss="soft_l1", f_scale=0.05, x_scale=1.0)
        if best is None or result.cost < best.cost:
            best = result
    params = params_from_vector(best.x)
    residuals = log_residuals(params, points)
    summary = {
        "method": "scipy.optimize.least_squares, soft_l1 loss on log(time), 12 starts",
        "points": len(points),
        "rms_log_error": float(np.sqrt(np.mean(residuals**2))),
        "residuals": [{"op": op, "size_B": int(size), "ranks": n, "measured_us": round(t * 1e6, 3),
                       "error_pct": round(float(np.expm1(r) * 100), 2)} for (op, size, n, t), r in zip(points, residuals, strict=False)],
    }
    return params, summary


def rounded(params: ChunkedRingParams) -> ChunkedRingParams:
    """The params as a card stores them (4 significant digits), so predictions match the card."""
    def r(x):
        return float(f"{x:.4g}")
    return ChunkedRingParams(r(params.link_bandwidth_Bps), {
        k: replace(p, base_latency_s=r(p.base_latency_s), step_latency_s=r(p.step_latency_s), bandwidth_fraction=round(p.bandwidth_fraction, 4),
                   chunk_bytes=r(p.chunk_bytes)) for k, p in params.protocols.items()})


def fit_card(traces: list[CollectiveTrace], tunings: list | None = None, model: str | None = None):
    """The one entry for a collective card: all_reduce rounds (+ NcclTuning logs, one per rank count)
    -> (params, summary). With NCCL's tuning logs, or model "nccl-primitives": the NCCL-primitives model
    (fit/primitives.py; without a log NCCL's decision model, collectives/nccl_tuner.py, picks each size's
    protocol); otherwise the chunked ring model (the one the chunk DES runs). Both fit the median of each set
    of rounds."""
    from simcluster.errors import CalibrationError
    from simcluster.fit import primitives as fit_primitives
    from simcluster.traces.nccl_tests import median_of_rounds

    if model not in (None, "chunked-ring", "nccl-primitives"):
        raise CalibrationError(f"unknown collective model {model!r}", hint="chunked-ring or nccl-primitives")
    if tunings and model == "chunked-ring":
        raise CalibrationError("NCCL's tuning logs are read by the nccl-primitives model only",
                               hint="drop --nccl-log, or --model nccl-primitives")
    if tunings:
        return fit_primitives.fit(traces, {t.ranks: t.ring_table() for t in tunings}, tunings[0].channels,
                                  tunings[0].p2p_channels)
    if model == "nccl-primitives":
        return fit_primitives.fit(traces, None)
    params, summary = fit(list(median_of_rounds(traces).values()))
    return rounded(params), summary
