"""Cost and energy of a sweep point from a hardware catalogue (YAML, read strictly).

    kind: catalogue
    name: list-prices-2026
    currency: USD
    electricity: {price_per_kWh: 0.10, pue: 1.3}        # optional; omit the price where hourly prices include power
    gpus:  {h100-sxm: {power: 700W, price_per_hour: 2.99}, ...}      # keyed by the card's `name:`
    nics:  {roce-400g: {power: 25W, capital: 2500, amortisation: 4y}, ...}
    node:  {power: 1.5kW, price_per_hour: 0}             # per server, what is not a GPU or NIC (optional)
    switch: {power: 1.6kW, capital: 30000, amortisation: 4y}   # per switch (optional)

Each item is priced per hour (`price_per_hour`, currency per hour of one unit) or by capital cost straight-line
amortised (`capital` / `amortisation`, per hour of the amortisation period; no utilisation or interest). For a
point with G GPUs, N NICs, M servers and S switches that trains for t seconds:

    hourly  = G c_gpu + N c_nic + M c_node + S c_switch                      (currency / h)
    power   = (G P_gpu + N P_nic + M P_node + S P_switch) x PUE              (W, every part at its rated power)
    energy  = power x t                                                      (J; kWh = J / 3.6e6)
    cost    = hourly x t / 3600 + energy_kWh x price_per_kWh

Rated power (TDP) is an upper bound on draw; a GPU at 45% MFU typically draws less. Switch count (leaf-spine
and rail-optimized) is the fabric model's leaves plus spines x planes (no spine when one leaf holds every NIC).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from simcluster import documents, strict
from simcluster.errors import SimclusterError
from simcluster.units import parse_time

ITEM_KEYS = {"power", "price_per_hour", "capital", "amortisation", "source"}
_POWER = {"W": 1.0, "kW": 1e3, "MW": 1e6}
_LONG = {"d": 86400.0, "day": 86400.0, "days": 86400.0, "w": 7 * 86400.0, "y": 365.25 * 86400.0,
         "year": 365.25 * 86400.0, "years": 365.25 * 86400.0}


class CostError(SimclusterError):
    """A catalogue that cannot be read, or a point whose hardware the catalogue does not price."""


def parse_power(text) -> float:
    """'700W' / '1.5kW' -> watts."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)\s*(W|kW|MW)\s*", str(text))
    if not m or isinstance(text, bool):
        raise ValueError(f"{text!r} is not a power (write e.g. 700W or 1.5kW)")
    return float(m.group(1)) * _POWER[m.group(2)]


def parse_duration(text) -> float:
    """'30d', '4y', '2w', or anything units.parse_time reads ('12h', '90min') -> seconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*([a-z]+)\s*", str(text))
    if m and m.group(2) in _LONG:
        return float(m.group(1)) * _LONG[m.group(2)]
    return parse_time(text)


@dataclass(frozen=True)
class Item:
    power_W: float
    per_hour: float          # currency per hour of one unit (rented, or capital / amortisation hours)
    source: str = ""


@dataclass(frozen=True)
class Catalogue:
    path: str
    name: str
    currency: str
    gpus: dict
    nics: dict
    node: Item
    switch: Item
    price_per_kWh: float
    pue: float


def _item(doc, where: str) -> Item:
    strict.known_keys(doc, ITEM_KEYS, where, CostError)
    power = strict.field(doc, "power", where, parse_power, CostError)
    has_rent, has_capital = "price_per_hour" in doc, "capital" in doc
    if has_rent == has_capital:
        raise CostError("give either price_per_hour or capital (with amortisation)", where=where)
    if has_rent:
        per_hour = strict.field(doc, "price_per_hour", where, _nonnegative, CostError)
    else:
        capital = strict.field(doc, "capital", where, _nonnegative, CostError)
        years = strict.field(doc, "amortisation", where, parse_duration, CostError)
        if years <= 0:
            raise CostError("amortisation must be a positive duration (e.g. 4y)", where=where)
        per_hour = capital / (years / 3600.0)
    return Item(power, per_hour, str(doc.get("source", "")))


def _nonnegative(value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError("expected a number >= 0")
    return float(value)


def load_catalogue(path: str | Path) -> Catalogue:
    path = Path(path)
    doc = strict.load_yaml(path, CostError, what="hardware catalogue (YAML)", schema=documents.CATALOGUE)
    where = str(path)
    strict.known_keys(doc, {"kind", "name", "description", "currency", "electricity", "gpus", "nics", "node", "switch",
                            "sources"}, where, CostError)
    if doc.get("kind") != "catalogue":
        raise CostError(f"expected kind: catalogue, got {strict.short(doc.get('kind'))}", where=where)
    zero = Item(0.0, 0.0)
    groups = {}
    for group in ("gpus", "nics"):
        entries = doc.get(group, {}) or {}
        if not isinstance(entries, dict):
            raise CostError(f"{group}: expected a mapping of card name -> item", where=where)
        groups[group] = {str(k): _item(v, f"{where}: {group}.{k}") for k, v in entries.items()}
    elec = strict.known_keys(doc.get("electricity", {}) or {}, {"price_per_kWh", "pue", "source"}, f"{where}: electricity",
                             CostError)
    price = strict.field(elec, "price_per_kWh", f"{where}: electricity", _nonnegative, CostError) if "price_per_kWh" in elec else 0.0
    pue = strict.field(elec, "pue", f"{where}: electricity", _nonnegative, CostError) if "pue" in elec else 1.0
    if pue < 1.0:
        raise CostError("electricity.pue must be >= 1", where=where)
    return Catalogue(str(path), str(doc.get("name", path.stem)), str(doc.get("currency", "USD")), groups["gpus"],
                     groups["nics"], _item(doc["node"], f"{where}: node") if "node" in doc else zero,
                     _item(doc["switch"], f"{where}: switch") if "switch" in doc else zero, price, pue)


def switch_count(machine) -> int:
    """Leaves + the spines a leaf reaches x planes (network/builders.leaf_uplinks; 0 for one node; a lone leaf needs
    no spine)."""
    if machine.nodes <= 1 or machine.fabric is None or machine.nic is None:
        return 0
    return _switches(machine.nodes, machine.nic.per_node, machine.fabric)


@lru_cache(maxsize=1024)
def _switches(nodes: int, per_node: int, f) -> int:
    from simcluster.network.builders import FabricSpec, leaf_of_nic, leaf_uplinks

    spec = FabricSpec(nodes, per_node, 1.0, f.kind, f.down_ports, f.spines, f.oversubscription, f.planes)
    leaves = int(leaf_of_nic(spec).max()) + 1
    return leaves + (leaf_uplinks(spec) * f.planes if leaves > 1 else 0)   # spines past a leaf's uplinks carry nothing


@dataclass(frozen=True)
class PointCost:
    hourly: float            # currency per hour
    power_W: float           # facility power (x PUE)
    time_s: float | None
    cost: float | None
    energy_kWh: float | None


def point_cost(cat: Catalogue, gpus: int, gpu_card: str | None, nics: int, nic_card: str | None, nodes: int,
               switches: int, time_s: float | None) -> PointCost:
    gpu = _lookup(cat, "gpus", gpu_card) if gpus else Item(0.0, 0.0)
    nic = _lookup(cat, "nics", nic_card) if nics else Item(0.0, 0.0)
    hourly = gpus * gpu.per_hour + nics * nic.per_hour + nodes * cat.node.per_hour + switches * cat.switch.per_hour
    power = (gpus * gpu.power_W + nics * nic.power_W + nodes * cat.node.power_W + switches * cat.switch.power_W) * cat.pue
    if time_s is None or not math.isfinite(time_s):
        return PointCost(hourly, power, None, None, None)
    energy_kwh = power * time_s / 3.6e6
    return PointCost(hourly, power, time_s, hourly * time_s / 3600.0 + energy_kwh * cat.price_per_kWh, energy_kwh)


def _lookup(cat: Catalogue, group: str, name: str | None) -> Item:
    items = getattr(cat, group)
    if name not in items:
        raise CostError(f"{group}: no entry for card {name!r}", where=cat.path,
                        hint=f"the catalogue prices: {', '.join(sorted(items)) or 'nothing'}")
    return items[name]


def time_to_train_s(row: dict, tokens: float | None) -> float | None:
    """Seconds to train: `tokens` at the point's tokens/s (LLM; divided by the job's steady-state goodput, the closed
    form of llm/goodput.py, where it has a reliability: block), else the training job's own time to train."""
    tps = row.get("jobs[0].tokens_per_s")
    if tokens is not None and tps:
        return tokens / tps / (row.get("jobs[0].goodput_steady") or 1.0)
    ttt = row.get("jobs[0].time_to_train_s")
    return ttt if ttt else None


def annotate(rows: list[dict], cat: Catalogue, tokens: float | None) -> list[dict]:
    """Rows with cost.* columns (hourly, power, time to train, cost, energy); only ok rows are priced."""
    out = []
    for row in rows:
        row = dict(row)
        if row.get("status") == "ok":
            c = point_cost(cat, int(row.get("machine.gpus") or 0), row.get("machine.gpu_card"),
                           int(row.get("machine.nics") or 0), row.get("machine.nic_card"), int(row.get("machine.nodes") or 0),
                           int(row.get("machine.switches") or 0), time_to_train_s(row, tokens))
            row.update({"cost.per_hour": c.hourly, "cost.power_W": c.power_W, "cost.time_to_train_s": c.time_s,
                        "cost.total": c.cost, "cost.energy_kWh": c.energy_kWh, "cost.currency": cat.currency})
        out.append(row)
    return out
