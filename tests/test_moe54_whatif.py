"""Session 54 moe54b's what-if study (studies/moe54_whatif.py): Part A as the committed output prints it, and its
figures recomputed here from the set's own files (registered.yaml, runs/moe54.json) without the study's code."""

from __future__ import annotations

import json
import subprocess
import sys

import yaml
from conftest import ROOT, load_script

BUNDLE = ROOT / "calibration" / "h200x1-moe54-2026-12-01"
OUT = ROOT / "studies" / "moe54_whatif.txt"


def part_a_lines(text: str) -> list[str]:
    lines = text.splitlines()
    return lines[: next((i for i, s in enumerate(lines) if s.startswith("# Part B")), len(lines))]


def test_part_a_prints_the_committed_lines(capsys):
    load_script("studies/moe54_whatif.py").main(aws_only=True)
    assert part_a_lines(capsys.readouterr().out) == part_a_lines(OUT.read_text())


def test_the_what_if_steps_follow_from_the_set_files():
    reg = yaml.safe_load((BUNDLE / "registered.yaml").read_text())
    recs = {(r["cell"], r["pass"], r["clock"]): r for r in json.loads((BUNDLE / "runs" / "moe54.json").read_text())["records"]}
    printed = {int(c[0]): c for c in map(str.split, part_a_lines(OUT.read_text())) if len(c) == 9 and c[0].isdigit() and c[2] == "s"}
    assert set(printed) == set(range(6))
    for r in reg["rows"]:
        ev = recs[(r["cell"], r["pass"], "events")]["time_s"]
        step = r["aws_predicted_step_s"] + (ev - r["p_s"]) * r["micro_batches"] * r["layers_a_stage"]
        cols = printed[r["row"]]
        assert float(cols[6]) == round(step, 2)
        assert float(cols[8].rstrip("%")) == round(100 * (r["aws_measured_step_s"] / step - 1), 1)


def test_the_serial_call_cost_is_events_over_the_calls():
    """c' = (events - R) / N: row 1's printed figures reproduce its printed c'."""
    line = next(s.split() for s in part_a_lines(OUT.read_text()) if s.split()[:2] == ["1", "recompute"])
    events, n, r_ms, cprime = float(line[2]), int(line[11]), float(line[12]), float(line[13])
    assert abs((events - r_ms) / n * 1e3 - cprime) < 0.2


def test_an_unknown_argument_is_one_line():
    run = subprocess.run([sys.executable, str(ROOT / "studies" / "moe54_whatif.py"), "--nope"], capture_output=True, text=True)
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1 and "--nope" in run.stderr
