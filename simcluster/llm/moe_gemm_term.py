"""The measured expert-GEMM term (session 48, moegemm): a MoE layer's expert GEMMs (op_price.GROUPED_GEMMS) priced as the
card prices them times a factor measured on one H200: a grouped group's measured time over `experts` times the H200
card's price of one of its GEMMs. OFF unless a table is given (enable); with none every factor is 1.0.

The table (heldout/moegemm.table_of reads it from calibration/h200x4-moegemm-2026-11-30/runs/): rows
(m, n, k, dtype, ratio), one per measured group of one (m, n, k) GEMM over a layer's local experts, run as Transformer
Engine's GroupedLinear issues them (mode `streams`: cuBLAS GEMMs spread over 4 streams). An op takes the ratio of the
nearest measured shape of its dtype (distance: the sum of |log| differences of m, n, k); the grid holds every published
MoE row's own expert GEMM shapes (forward, data and weight gradient), so a published row reads its own shapes.

Assumption (named): the ratio measured / card-priced is a property of the GEMM shape and of cuBLAS's Hopper kernels, the
same on an H100 (the same SM architecture and kernels; the card already scales the peak) and carried unchanged to the
A800 (Ampere: an extrapolation, no A800 measured) and the B200 (likewise)."""

from __future__ import annotations

import math

_TABLE: tuple = ()        # ((m, n, k, dtype, ratio), ...): empty = off


def enable(rows) -> None:
    """Turn the term on with `rows` (m, n, k, dtype, ratio); an empty table is refused. The caller clears op_price's
    memo after enable / disable (op_price.forget: the hot path's key does not look at the table), or switches it with
    op_price.expert_gemm_term, which does both and restores the table before."""
    rows = tuple((int(m), int(n), int(k), str(d), float(r)) for m, n, k, d, r in rows)
    if not rows or any(not (r > 0 and math.isfinite(r)) for *_, r in rows):
        raise ValueError("the expert-GEMM term needs at least one row, each with a positive finite ratio")
    global _TABLE
    _TABLE = rows


def disable() -> None:
    global _TABLE
    _TABLE = ()


def is_on() -> bool:
    return bool(_TABLE)


def table() -> tuple:
    """The rows the term is on with (() when off): what op_price.expert_gemm_term restores."""
    return _TABLE


def factor(m: int, n: int, k: int, dtype: str) -> float:
    """The measured ratio of the nearest shape of `dtype` (1.0 when off, or when no row has that dtype)."""
    same = [row for row in _TABLE if row[3] == dtype]
    if not same:
        return 1.0
    def distance(row) -> float:
        return abs(math.log(row[0] / m)) + abs(math.log(row[1] / n)) + abs(math.log(row[2] / k))
    return min(same, key=distance)[4]
