"""A multi-node collective answer names its NVLink card, and says so when the card was fitted on another GPU than the
machine's (cold read A46 item 4: Snellius's 4 x H100 nodes answered on the 4 x H200 card, unsaid)."""

from __future__ import annotations

import json
from pathlib import Path

from simcluster.cli import main

ROOT = Path(__file__).resolve().parent.parent


def _answer(capsys, scenario: str) -> dict:
    assert main(["predict", "collective", "--scenario", str(ROOT / "scenarios/published" / scenario), "--op", "all_reduce",
                 "-b", "64M", "-e", "64M", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_an_h100_machine_on_the_h200_card_says_its_card_is_borrowed(capsys):
    doc = _answer(capsys, "snellius-h100-ib-4x200g-x2-odissei.yaml")
    assert "NVLink card h200x4-nvlink.yaml" in doc["description"]
    assert any("fitted on H200, not on this machine's H100" in n for n in doc["notes"]), doc["notes"]


def test_a_machine_on_its_own_gpus_card_gets_no_such_note(capsys):
    doc = _answer(capsys, "gcp-a3ultra-h200-x2.yaml")
    assert "NVLink card " in doc["description"] and not any("fitted on" in n for n in doc["notes"]), doc
