"""Fit the NCCL-primitives model (collectives/primitives.py) to all_reduce logs of one machine.

  bus bandwidth B     slope of time over the two largest sizes (bytes on the wire per second); with logs at
                      several rank counts, the mean of their slopes
  L_LL, r_LL, L_S,    robust (soft-L1) least squares on log(predicted / measured) over every size, with B
  D, W (+ s_LL, s_S)  fixed and NCCL's tuner table of each rank count deciding the protocol (D, W: the ring
                      ramp, the extra time that builds up with the bytes a rank sends). The step
                      latencies s_LL and s_S are fitted only when all_reduce was measured at two or more rank
                      counts (one rank count cannot tell a base latency from k step latencies; NCCL's
                      documented values are kept then)
  host_floor          with CUDA-graph logs to fit the GPU side: the median time of the sizes up to
                      64 KiB in the host-launched logs. With host-launched logs only, the launch cost
                      and the GPU latency cannot be told apart: the floor stays 0 and the LL base
                      latency absorbs the launch cost (collect with --nccl-graph to separate them)
Rounds of the same log are reduced to their median per size first (nccl_tests.median_of_rounds).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from scipy.optimize import least_squares

from simcluster.collectives.primitives import STEP_LATENCY_S, PrimitiveParams, call_time, nccl_choice
from simcluster.collectives.schedule import bus_factor
from simcluster.errors import CalibrationError
from simcluster.traces.nccl_tests import CollectiveTrace, median_of_rounds

FLOOR_MAX_BYTES = 64 * 1024
RAMP_START_S, RAMP_START_BYTES = 100e-6, 1e9   # the fit's starting point for the ring ramp D, W
RAMP_MIN_BYTES, RAMP_LEVELS = 2**20, 8          # W's bounds: >= 1 MiB, <= largest wire bytes / 8


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


def _median_by_ranks(traces: list[CollectiveTrace]) -> dict[int, CollectiveTrace]:
    return {ranks: t for (_, ranks, _), t in median_of_rounds(traces).items()}


def fit(traces: list[CollectiveTrace], tuners: dict | None = None, channels: int = 0,
        p2p_channels: tuple[int, int] = (0, 0)) -> tuple[PrimitiveParams, dict]:
    """traces: all_reduce logs of one node (CUDA-graph and/or host-launched, any number of rounds, one or
    more rank counts). tuners: ranks -> NCCL's ring table at that rank count."""
    if not traces or any(t.op != "all_reduce" for t in traces):
        raise CalibrationError("the NCCL-primitives model is fitted on all_reduce logs only",
                               hint="pass all_reduce logs; the other collectives are for validation")
    if any(t.nodes != 1 for t in traces):
        raise CalibrationError("a log spans several nodes", hint="the NCCL-primitives model is one node's")
    graph = [t for t in traces if t.cuda_graph_launches]
    hosted = [t for t in traces if not t.cuda_graph_launches]
    gpu = _median_by_ranks(graph or hosted)
    bus = float(np.mean([_bus_bandwidth(t) for t in gpu.values()]))
    nch = channels or 24
    p2p = {"p2p_channels": p2p_channels[0], "p2p_channels_per_peer": p2p_channels[1]} if all(p2p_channels) else {}
    points = [(n, r.size_bytes, r.time_s) for n, t in gpu.items() for r in t.rows if r.size_bytes > 0 and r.time_s > 0]
    steps_free = len(gpu) >= 2

    ranks = sorted(gpu)
    probe = PrimitiveParams(1e-6, 1e9, 1e-6, bus, nch, 0.0, tuners or {})
    ll128_free = any(nccl_choice(probe, "all_reduce", s, n) == "LL128" for n, s, _ in points)
    # log L_LL, r_LL, L_S (+ s_LL, s_S) (+ L_LL128 where NCCL ran rows at LL128), then log D, W per rank count
    fixed = 3 + 2 * steps_free + ll128_free

    def params_of(x):
        v = np.exp(x)
        ll_step, simple_step = (v[3], v[4]) if steps_free else (STEP_LATENCY_S["LL"], STEP_LATENCY_S["Simple"])
        ramps = {n: (float(v[fixed + 2 * i]), float(v[fixed + 2 * i + 1])) for i, n in enumerate(ranks)}
        return PrimitiveParams(float(v[0]), float(v[1]), float(v[2]), bus, nch, 0.0, tuners or {},
                               float(ll_step), float(simple_step), **p2p, ring_ramps=ramps,
                               ll128_base_s=float(v[fixed - 1]) if ll128_free else 0.0)

    def residuals(x):
        p = params_of(x)
        return [np.log(call_time(p, "all_reduce", s, n)[0] / t) for n, s, t in points]

    small = min(t for _, _, t in points)
    x0 = [np.log(small * 0.7), np.log(5e9), np.log(small * 2)]
    if steps_free:
        x0 += [np.log(STEP_LATENCY_S["LL"]), np.log(STEP_LATENCY_S["Simple"])]
    if ll128_free:
        x0 += [np.log(small * 2)]
    lower, upper = [-np.inf] * fixed, [np.inf] * fixed
    for n in ranks:
        # B is the slope of the two largest sizes, so the ramp must have levelled off there: W <= the largest
        # wire bytes at this rank count / RAMP_LEVELS (then the ramp moves by < 2% of D between those two sizes).
        largest = max(s for m, s, _ in points if m == n)
        ramp_max = np.log(largest * bus_factor("all_reduce", n) / RAMP_LEVELS)
        if ramp_max <= np.log(RAMP_MIN_BYTES):
            need = int(np.ceil(RAMP_MIN_BYTES * RAMP_LEVELS / bus_factor("all_reduce", n) / 2**20))
            raise CalibrationError(f"the {n}-rank log stops at {largest} B: the NCCL-primitives fit needs sizes past "
                                   f"{need} MiB (its bandwidth comes from the largest sizes)",
                                   hint=f"run nccl-tests to -e 8G (at least past -e {need}M), or fit --model chunked-ring")
        x0 += [np.log(RAMP_START_S), min(np.log(RAMP_START_BYTES), ramp_max - 1)]
        lower += [-np.inf, np.log(RAMP_MIN_BYTES)]
        upper += [np.inf, ramp_max]
    lower, upper = np.array(lower), np.array(upper)
    best = min((least_squares(residuals, np.clip(np.array(x0) + shift, lower + 1e-9, upper - 1e-9),
                              bounds=(lower, upper), loss="soft_l1", f_scale=0.05)
                for shift in (0.0, -0.5, 0.5)), key=lambda r: r.cost)
    params = params_of(best.x)
    if hosted and graph:
        small_times = [r.time_s for t in _median_by_ranks(hosted).values() for r in t.rows
                       if 0 < r.size_bytes <= FLOOR_MAX_BYTES and r.time_s > 0]
        params = replace(params, host_floor_s=float(np.median(small_times)) if small_times else 0.0)
    res = np.array(residuals(best.x))
    summary = {"method": "B from the two largest sizes; scipy least_squares (soft_l1) on log(time) for the rest"
                         + ("; step latencies fitted across rank counts" if steps_free else "; NCCL's step latencies")
                         + ("; LL128's base latency fitted on the rows NCCL ran at LL128" if ll128_free else "")
                         + "; the ring ramp (D, W) per rank count fitted with them",
               "points": len(points), "ranks": sorted(gpu),
               "rounds": {"cuda_graph": len(graph), "host_launched": len(hosted)},
               "rms_log_error": float(np.sqrt(np.mean(res**2))),
               "residuals": [{"ranks": n, "size_B": int(s), "measured_us": round(t * 1e6, 3),
                              "error_pct": round(float(np.expm1(r) * 100), 2)}
                             for (n, s, t), r in zip(points, res, strict=True)]}
    return rounded(params), summary


def rounded(p: PrimitiveParams) -> PrimitiveParams:
    def r(x):
        return float(f"{x:.4g}")
    return replace(p, ll_base_s=r(p.ll_base_s), ll_channel_Bps=r(p.ll_channel_Bps), simple_base_s=r(p.simple_base_s),
                   link_bandwidth_Bps=r(p.link_bandwidth_Bps), host_floor_s=r(p.host_floor_s),
                   ll_step_s=r(p.ll_step_s), simple_step_s=r(p.simple_step_s), ll128_base_s=r(p.ll128_base_s),
                   ring_ramps={n: (r(d), r(w)) for n, (d, w) in p.ring_ramps.items()})
