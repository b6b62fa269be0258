"""Max-min fair bandwidth sharing by progressive filling, vectorised with numpy.

Given F flows, L links with capacities c (bytes/s), a flow-link incidence (flow f crosses link
l), and optional per-flow rate caps, the solver returns the max-min fair rate of every flow:
repeatedly find the most constrained resource (the link, or a flow's own cap, with the least
fair share left), fix the rates of the flows it constrains, and remove them.
Each round is O(nnz) numpy work; rounds <= number of distinct bottlenecks.
"""

from __future__ import annotations

import numpy as np


def max_min_rates(flow_idx: np.ndarray, link_idx: np.ndarray, capacity: np.ndarray,
                  nflows: int, caps: np.ndarray | None = None) -> np.ndarray:
    """Max-min fair rates (bytes/s) for `nflows` flows.

    flow_idx, link_idx: equal-length int arrays, one entry per (flow, link) crossing.
    capacity: bytes/s per link. caps: optional per-flow upper bound (inf for none).
    A flow that crosses no link and has no cap gets rate inf.
    """
    rates = np.full(nflows, np.inf)
    if nflows == 0:
        return rates
    caps = np.full(nflows, np.inf) if caps is None else np.asarray(caps, dtype=float)
    remaining = np.asarray(capacity, dtype=float).copy()
    active = np.ones(nflows, dtype=bool)
    flow_idx = np.asarray(flow_idx, dtype=np.int64)
    link_idx = np.asarray(link_idx, dtype=np.int64)
    nlinks = len(remaining)
    everyone = True   # every flow still active (the first round): no masks needed
    while everyone or active.any():
        live = None if everyone else active[flow_idx]
        counts = np.bincount(link_idx if everyone else link_idx[live], minlength=nlinks)
        share = np.divide(remaining, counts, out=np.full(nlinks, np.inf), where=counts > 0)
        link_best = share.min() if nlinks else np.inf
        cap_best = caps.min() if everyone else caps[active].min()
        level = min(link_best, cap_best)
        if not np.isfinite(level):
            break  # the remaining flows are unconstrained
        level = max(level, 0.0)
        # flows fixed this round: those on a bottleneck link, and those whose own cap binds
        fixed = active & (caps <= level * (1 + 1e-12))
        if link_best <= level * (1 + 1e-12):
            tight = (share <= level * (1 + 1e-12))[link_idx]
            fixed[flow_idx[tight if everyone else live & tight]] = True
        everyone = False
        rates[fixed] = level
        active &= ~fixed
        if not active.any():
            break  # every flow has its rate: nothing left to charge the links for
        # charge the fixed flows' rate to every link they cross
        crossing = fixed[flow_idx]
        remaining -= np.bincount(link_idx[crossing], weights=np.full(crossing.sum(), level), minlength=nlinks)
        np.maximum(remaining, 0.0, out=remaining)
    return rates
