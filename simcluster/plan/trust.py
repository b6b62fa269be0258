"""How the planner reads each configuration's error band (trust/band.py, flattened into its results row): the slow
end of the band, and the time to train, cost and throughput judged there."""

from __future__ import annotations

VALIDATION = "jobs[0].validation."


def rho_high(row: dict) -> float:
    """The slow end of a row's 80% band, as measured / predicted time (trust/band.py); 1 where the row has none."""
    import json

    try:
        band = json.loads(row.get(VALIDATION + "measured_over_predicted_time") or "null")
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
