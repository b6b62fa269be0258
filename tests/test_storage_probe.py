"""The device probe's model side (studies/storage_pattern_probe.py): the registered ratios come from simcluster's drive,
and the pairing of phases into ratios is by setting."""

from __future__ import annotations

import json

from conftest import ROOT, load_script

probe = load_script("studies/storage_pattern_probe.py")
SET = ROOT / "calibration" / "h200x1-storage-pattern-2026-11-29"


def test_model_gives_both_patterns_the_card_when_the_link_binds():
    card = ROOT / "models" / "nvme" / "micron-9550-pro-7.68tb.yaml"
    large = probe.model_rate(card, "large", 64, 2**20)
    small = probe.model_rate(card, "small", 64, 2**20)
    assert abs(large / 10e9 - 1) < 0.02          # the card's 10 GB/s link
    assert abs(small / large - 1) < 0.01


def test_one_reader_is_latency_bound_in_the_model():
    """A check that the simulated pattern can fall below the card: one reader with 2 x 256 KiB in flight."""
    card = ROOT / "models" / "nvme" / "micron-9550-pro-7.68tb.yaml"
    assert probe.model_rate(card, "large", 1, 256 * 1024) < 0.5 * 10e9


def test_ratios_pair_phases_by_setting():
    rows = [{"kind": "large", "ranks": 8, "threads": 8, "transfer_B": 2**20, "mode": "buffered", "GBps": 10.0},
            {"kind": "small", "ranks": 8, "threads": 8, "transfer_B": 2**20, "mode": "buffered", "GBps": 7.0},
            {"kind": "small", "ranks": 8, "threads": 8, "transfer_B": 2**20, "mode": "direct", "GBps": 9.0},
            {"kind": "large", "ranks": 16, "threads": 8, "transfer_B": 2**20, "mode": "buffered", "skipped": "budget"}]
    assert probe.ratios(rows) == {"8x8 1024 KiB buffered": 0.7}


def test_registration_holds_the_model_ratios_for_every_pair_of_the_plan():
    reg = json.loads((SET / "registered.json").read_text())
    pairs = {k for k in probe.ratios([{"kind": k, "ranks": r, "threads": t, "transfer_B": x, "mode": d, "GBps": 1.0}
                                      for k, r, t, x, d in probe.PLAN])}
    assert set(reg["predicted_ratio"]) == pairs
    assert all(abs(v - 1) < 0.01 for v in reg["predicted_ratio"].values())
