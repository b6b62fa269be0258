"""Cost and energy from a catalogue: the equations by hand, switch counts from the fabric, bad catalogues."""

from __future__ import annotations

import pytest
import yaml

from simcluster import cost, units
from simcluster.errors import UnitError
from simcluster.scenario_machine import FabricConfig, Machine, NicSpec

CATALOGUE = {"kind": "catalogue", "name": "t", "currency": "EUR", "electricity": {"price_per_kWh": 0.1, "pue": 1.5},
             "gpus": {"g": {"power": "700W", "price_per_hour": 2.0}},
             "nics": {"n": {"power": "20W", "capital": 8766, "amortisation": "1y"}},
             "node": {"power": "1kW", "price_per_hour": 0},
             "switch": {"power": "1kW", "price_per_hour": 0.5}}


def _catalogue(tmp_path, doc=CATALOGUE):
    path = tmp_path / "cat.yaml"
    path.write_text(yaml.safe_dump(doc))
    return cost.load_catalogue(path)


def test_point_cost_by_hand(tmp_path):
    cat = _catalogue(tmp_path)
    assert cat.nics["n"].per_hour == pytest.approx(1.0)      # 8766 over 365.25 days of 24 h
    c = cost.point_cost(cat, gpus=16, gpu_card="g", nics=16, nic_card="n", nodes=2, switches=3, time_s=7200.0)
    assert c.hourly == pytest.approx(16 * 2.0 + 16 * 1.0 + 3 * 0.5)                      # 49.5 EUR/h
    assert c.power_W == pytest.approx((16 * 700 + 16 * 20 + 2 * 1000 + 3 * 1000) * 1.5)  # 24,780 W
    assert c.energy_kWh == pytest.approx(24780 * 2 / 1000)
    assert c.cost == pytest.approx(49.5 * 2 + 49.56 * 0.1)
    assert cost.point_cost(cat, 16, "g", 16, "n", 2, 3, None).cost is None


def test_annotate_prices_ok_rows_with_their_time_to_train(tmp_path):
    cat = _catalogue(tmp_path)
    rows = [{"status": "ok", "machine.gpus": 8, "machine.gpu_card": "g", "machine.nics": 0, "machine.nodes": 1,
             "machine.switches": 0, "jobs[0].tokens_per_s": 1e6},
            {"status": "ok", "machine.gpus": 1, "machine.gpu_card": "g", "machine.nics": 0, "machine.nodes": 1,
             "machine.switches": 0, "jobs[0].time_to_train_s": 3600.0},
            {"status": "invalid"}]
    a, b, c = cost.annotate(rows, cat, tokens=3.6e9)
    assert a["cost.time_to_train_s"] == pytest.approx(3600.0) and a["cost.total"] == pytest.approx(16 + (8 * 0.7 + 1.0) * 1.5 * 0.1)
    assert b["cost.total"] == pytest.approx(2.0 + (0.7 + 1.0) * 1.5 * 0.1)
    assert "cost.total" not in c
    with pytest.raises(cost.CostError, match="no entry for card 'h100'"):
        cost.annotate([{**rows[0], "machine.gpu_card": "h100"}], cat, 1e9)


def test_switch_count_from_the_fabric():
    f = FabricConfig("leaf-spine", 32, 4, 1.0, 1, 0.0, 0.0, "cut-through")
    nic = NicSpec("n.yaml", 8, 1)
    assert cost.switch_count(Machine(None, 8, 8, nic, f)) == 2 + 4        # 64 NICs on 32-port leaves, 4 spines
    assert cost.switch_count(Machine(None, 8, 4, nic, f)) == 1            # one leaf holds every NIC: no spine
    assert cost.switch_count(Machine(None, 8, 1, nic, f)) == 0
    rail = FabricConfig("rail-optimized", 64, 32, 1.0, 1, 0.0, 0.0, "cut-through")
    assert cost.switch_count(Machine(None, 8, 16, nic, rail)) == 8 + 32   # one leaf per rail
    # 4:1 on 32-port leaves: 8 uplink ports per leaf, so only 8 of 32 spines are reached and priced (all 32 before)
    over = FabricConfig("leaf-spine", 32, 32, 4.0, 1, 0.0, 0.0, "cut-through")
    assert cost.switch_count(Machine(None, 8, 16, nic, over)) == 4 + 8


def test_units_at_the_edge():
    assert cost.parse_power("1.5kW") == 1500.0
    assert cost.parse_duration("30d") == 30 * 86400 and cost.parse_duration("12h") == 43200
    assert units.parse_count("15T") == 15e12 and units.parse_count(2e9) == 2e9
    for bad in ("700", "seven W"):
        with pytest.raises(ValueError):
            cost.parse_power(bad)
    with pytest.raises(UnitError):
        units.parse_count("-1T")


@pytest.mark.parametrize("change, message", [
    ({"kind": "gpu"}, "expected kind: catalogue"),
    ({"gpus": {"g": {"power": "700", "price_per_hour": 1}}}, "key 'power'"),
    ({"gpus": {"g": {"power": "700W"}}}, "either price_per_hour or capital"),
    ({"gpus": {"g": {"power": "700W", "price_per_hour": -1}}}, "key 'price_per_hour'"),
    ({"switch": {"power": "1kW", "capital": 1, "amortisation": "0y"}}, "amortisation must be a positive"),
    ({"colour": "red"}, "unknown key 'colour'"),
])
def test_bad_catalogues_are_one_line(tmp_path, change, message):
    with pytest.raises(cost.CostError, match=message) as info:
        _catalogue(tmp_path, {**CATALOGUE, **change})
    assert "cat.yaml" in str(info.value) and "\n" not in str(info.value)
