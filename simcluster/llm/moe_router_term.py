"""The measured MoE router / permutation term (session 49, moerouter; issue 44): OFF unless a table is given (enable).

What it adds where it is on (llm/op_price._op_time_s calls extra_s / permute_factor):
- router: the measured router of a layer (its GEMM, score function, group-limited top-k, normalisation, routing map,
  tokens per expert, aux loss; studies/moe_router_device.py) less the H200 card's price of its GEMM at the measured
  tokens, at least 0: added to the `router` op (forward) and to `router.dgrad` (the backward: fwd+bwd less fwd, less the
  card's dgrad + wgrad price). Scaled to an op by the router's elements, (M E) / (M0 E0) of the nearest measured layer
  (sum of |log| differences of M, E, h; M the product's router GEMM M), and to another card by the H200's HBM rate over
  the card's (named law: these kernels are memory- and launch-bound; the launch share does not scale, so a slower-memory
  card is overcharged and a faster one undercharged by that share).
- permutation: the `permute` op (forward) and `permute.bwd` times measured / priced of the nearest measured layer's
  permute op (by bytes), the H200 card's price of the product's own op's bytes as the denominator; at least 1 (the term
  never makes the product faster; the brief: where the product omits or underprices).
The token-count sync is NOT in the term (decided before the run): llm/moe_sync.py's per-call cost c is derived from a
profile's GPU idle, which holds the sync's drain; A2A-overlap rows show no idle (moe_sync.applies). It is measured and
printed (validation/moerouter.py), judging nothing.

Table rows: (m, e, h, router_f_s, router_b_s, permute_f_ratio, permute_b_ratio, permute_bytes), one per measured layer,
the router seconds already net of the H200 card's GEMM price (heldout/moerouter.table_of)."""

from __future__ import annotations

import math

_TABLE: tuple = ()       # empty = off
H200_HBM_BPS = 0.0       # the H200 card's hbm_bandwidth_Bps, set by enable


def enable(table, h200_hbm_Bps: float) -> None:
    """Turn the term on with `table`; the caller clears op_price's memo (op_price.forget) after enable / disable."""
    global _TABLE, H200_HBM_BPS
    if not table or h200_hbm_Bps <= 0:
        raise ValueError("moe_router_term.enable: expected a non-empty table and the H200's HBM rate > 0")
    _TABLE, H200_HBM_BPS = tuple(table), float(h200_hbm_Bps)


def disable() -> None:
    global _TABLE
    _TABLE = ()


def on() -> bool:
    return bool(_TABLE)


def _nearest(m: float, e: float, h: float) -> tuple:
    return min(_TABLE, key=lambda r: abs(math.log(m / r[0])) + abs(math.log(e / r[1])) + abs(math.log(h / r[2])))


def router_extra_s(gpu, m: int, e: int, h: int, backward: bool) -> float:
    """Seconds the term adds to a router GEMM op of shape (m, e, h) (0 while off)."""
    if not _TABLE:
        return 0.0
    r = _nearest(m, e, h)
    return (r[4] if backward else r[3]) * (m * e) / (r[0] * r[1]) * H200_HBM_BPS / gpu.hbm_bandwidth_Bps


def permute_factor(bytes_moved: float, backward: bool) -> float:
    """The factor on a permute op of `bytes_moved` (1.0 while off): the nearest measured layer's by bytes."""
    if not _TABLE:
        return 1.0
    r = min(_TABLE, key=lambda r: abs(math.log(bytes_moved / r[7])))
    return r[6] if backward else r[5]


def adjust(gpu, op, t: float) -> float:
    """An op's priced seconds t (one op, before its count) with the term: router, router.dgrad, permute, permute.bwd."""
    if not _TABLE:
        return t
    name = op.name.removeprefix("recompute.")
    if name == "router":
        m, e, h, _ = op.shape
        return t + router_extra_s(gpu, m, e, h, False)
    if name == "router.dgrad":
        m, h, e, _ = op.shape
        return t + router_extra_s(gpu, m, e, h, True)
    if name in ("permute", "permute.bwd"):
        return t * permute_factor(op.bytes, name.endswith(".bwd"))
    return t
