"""How the planner reads each configuration's error band (trust/band.py, flattened into its results row): the slow
end of the band, and the time to train, cost and throughput judged there."""

from __future__ import annotations

VALIDATION = "jobs[0].validation."


def rho_high(row: dict) -> float:
    """The slow end of a row's 80% band, as measured / predicted time (trust/band.py); where the machine's rule marks the
    row (no band: trust/band.shape_unvalidated), the slow end of the band its regime would have had
    (`regime_band_not_applied`: the regime's own or the family's pooled), so that a marked row never ranks ahead of the
    same answer with a band (cold review A52 item 1); 1 where the row has neither."""
    import json

    key = "regime_band_not_applied" if row.get(VALIDATION + "unvalidated_why") else "measured_over_predicted_time"
    try:
        band = json.loads(row.get(VALIDATION + key) or "null")
        return max(1.0, float(band[1])) if band else 1.0
    except (ValueError, TypeError, IndexError):
        return 1.0


def pessimistic(row: dict) -> dict:
    """The row with its time to train, cost and throughput at the slow end of its band (`pessimistic.*`)."""
    rho = rho_high(row)
    out = dict(row, **{"pessimistic.rho": rho})
    if row.get("cost.time_to_train_s"):
        out["pessimistic.time_to_train_s"] = row["cost.time_to_train_s"] * rho
        out["pessimistic.cost"] = row["cost.total"] * rho       # time-priced: hours x the hourly price
    return out


def band_value(value):
    """A stored band ([low, high], a JSON string in the results' Parquet) as a list."""
    import json

    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return list(value) if isinstance(value, (list, tuple)) else value


def ranked_at(row: dict) -> str:
    """Where a machine-marked row (no band) is ranked: at the slow end of which band (rho_high), or at its predicted
    time where its regime had none to borrow; '' for an unmarked row."""
    if not row.get(VALIDATION + "unvalidated_why"):
        return ""
    which = row.get(VALIDATION + "regime_band_not_applied_from")
    if which and row.get(VALIDATION + "regime_band_not_applied"):
        return f"ranked at the slow end of {which}, not applied to its numbers"
    return "ranked at its predicted time (its regime has no band to rank by, nor has its family)"


def left_out(a: dict) -> str:
    """The unvalidated configurations a plan left out: those in unvalidated regimes, apart from those on a machine its
    rule marks whatever the regime (plan/search.answer)."""
    parts = []
    for key, what in (("excluded_unvalidated", "in unvalidated regimes"),
                      ("excluded_machine_unvalidated", "on a machine unvalidated whatever the regime (its rule: no band)")):
        if a.get(key):
            parts.append(f"{sum(a[key].values())} configurations {what} ("
                         + "; ".join(f"{k}: {v}" for k, v in sorted(a[key].items())) + ")")
    return "; ".join(parts)
