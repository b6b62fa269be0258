"""Fit the NCCL-primitives model (collectives/primitives.py) to all_reduce logs of one machine.

  bus bandwidth B     slope of time over the two largest sizes (bytes on the wire per second)
  ll_base, ll rate,   robust (soft-L1) least squares on log(predicted / measured) over every size,
  simple_base         with B fixed and NCCL's tuner table (when given) deciding the protocol
  host_floor          with CUDA-graph logs to fit the GPU side: the median time of the sizes up to
                      64 KiB in the host-launched logs. With host-launched logs only, the launch cost
                      and the GPU latency cannot be told apart: the floor stays 0 and the LL base
                      latency absorbs the launch cost (collect with --nccl-graph to separate them)
Rounds of the same log are reduced to their median per size first (nccl_tests.median_trace).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from scipy.optimize import least_squares

from simcluster.collectives.primitives import PrimitiveParams, call_time
from simcluster.collectives.schedule import bus_factor
from simcluster.errors import CalibrationError
from simcluster.traces.nccl_tests import CollectiveTrace, median_trace

FLOOR_MAX_BYTES = 64 * 1024


def _bus_bandwidth(trace: CollectiveTrace) -> float:
    rows = sorted((r for r in trace.rows if r.time_s > 0), key=lambda r: r.size_bytes)
    if len(rows) < 8:
        raise CalibrationError(f"only {len(rows)} usable rows; the fit needs at least 8 sizes", where=trace.path,
                               hint="run nccl-tests with e.g. -b 8 -e 8G -f 2")
    a, b = rows[-2], rows[-1]
    factor = bus_factor(trace.op, trace.nranks)
    if b.time_s <= a.time_s:
        return b.size_bytes * factor / b.time_s
    return (b.size_bytes - a.size_bytes) * factor / (b.time_s - a.time_s)


def fit(traces: list[CollectiveTrace], tuner: dict | None = None, channels: int = 0) -> tuple[PrimitiveParams, dict]:
    """traces: all_reduce logs of one node (CUDA-graph and/or host-launched, any number of rounds)."""
    if not traces or any(t.op != "all_reduce" for t in traces):
        raise CalibrationError("the NCCL-primitives model is fitted on all_reduce logs only",
                               hint="pass all_reduce logs; the other collectives are for validation")
    if len({t.nranks for t in traces}) != 1 or any(t.nodes != 1 for t in traces):
        raise CalibrationError("logs differ in rank count or span several nodes", hint="one node, one rank count")
    graph = [t for t in traces if t.cuda_graph_launches]
    hosted = [t for t in traces if not t.cuda_graph_launches]
    gpu = median_trace(graph or hosted)
    n = gpu.nranks
    bus = _bus_bandwidth(gpu)
    nch = channels or 24
    points = [(r.size_bytes, r.time_s) for r in gpu.rows if r.size_bytes > 0 and r.time_s > 0]

    def params_of(x):
        ll_base, ll_rate, simple_base = np.exp(x)
        return PrimitiveParams(float(ll_base), float(ll_rate), float(simple_base), bus, nch, 0.0, tuner or {})

    def residuals(x):
        p = params_of(x)
        return [np.log(call_time(p, "all_reduce", s, n)[0] / t) for s, t in points]

    small = min(t for _, t in points)
    x0 = [np.log(small * 0.7), np.log(5e9), np.log(small * 2)]
    best = min((least_squares(residuals, np.array(x0) + shift, loss="soft_l1", f_scale=0.05)
                for shift in (0.0, -0.5, 0.5)), key=lambda r: r.cost)
    params = params_of(best.x)
    if hosted and graph:
        host = median_trace(hosted)
        small_times = [r.time_s for r in host.rows if 0 < r.size_bytes <= FLOOR_MAX_BYTES and r.time_s > 0]
        params = replace(params, host_floor_s=float(np.median(small_times)) if small_times else 0.0)
    res = np.array(residuals(best.x))
    summary = {"method": "B from the two largest sizes; scipy least_squares (soft_l1) on log(time) for the rest",
               "points": len(points), "rounds": {"cuda_graph": len(graph), "host_launched": len(hosted)},
               "rms_log_error": float(np.sqrt(np.mean(res**2))),
               "residuals": [{"size_B": int(s), "measured_us": round(t * 1e6, 3), "error_pct": round(float(np.expm1(r) * 100), 2)}
                             for (s, t), r in zip(points, res, strict=True)]}
    return rounded(params), summary


def rounded(p: PrimitiveParams) -> PrimitiveParams:
    def r(x):
        return float(f"{x:.4g}")
    return replace(p, ll_base_s=r(p.ll_base_s), ll_channel_Bps=r(p.ll_channel_Bps), simple_base_s=r(p.simple_base_s),
                   link_bandwidth_Bps=r(p.link_bandwidth_Bps), host_floor_s=r(p.host_floor_s))
