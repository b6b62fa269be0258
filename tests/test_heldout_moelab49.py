"""Issue 44 (wire49b): session 49's moelab49 / moelab49b sets (calibration/h200x2-moelab49-2026-12-01, -moelab49b-) as
held-out rows of the `llm local spec` family (simcluster/heldout/moe_lab.read_launched): one row per configuration, its
measured step the mean of the launches the read-out counts, against the registered OFF step (the product prices the local
spec with the router term off)."""

from __future__ import annotations

import json
import re

import pytest
from conftest import ROOT, load_script
from test_moelab49 import _bundle, _doc

from simcluster.heldout import moe_lab
from simcluster.llm import moe_router_term
from simcluster.strict import load_yaml
from simcluster.trust.build import moe_lab_residuals

SETS = {"h200x2-moelab49-2026-12-01": load_script("validation/moelab49.py"),
        "h200x2-moelab49b-2026-12-01": load_script("validation/moelab49b.py")}
KEY = "llm | Megatron local spec | MoE | bf16"


def test_the_launched_sets_are_the_two_session_49_bundles_and_the_product_prices_their_framework_with_the_term_off():
    assert [f.rpartition("/")[2] for f in moe_lab.LAUNCHED] == list(SETS)
    assert not set(moe_lab.LAUNCHED) & set(moe_lab.REGISTERED)
    assert moe_lab.FRAMEWORK not in moe_router_term.ADOPTED     # so the held-out prediction is the OFF column


def test_each_configuration_is_one_row_at_its_registered_off_step_and_the_read_outs_measured_step():
    for name, script in SETS.items():
        folder = ROOT / "calibration" / name
        rows, skipped = moe_lab.read_launched(folder)
        registered = load_yaml(folder / "registered.yaml")["runs"]
        read = {x["name"]: x for x in script.read_out(folder)["rows"]}
        assert [r["run"] for r in rows] == list(registered) == list(read)       # 4 configurations, each measured
        for r in rows:
            assert r["predicted_s"] == registered[r["run"]]["predicted_step_s"] != registered[r["run"]]["predicted_on_s"]
            assert r["measured_s"] == read[r["run"]]["measured_s"] and r["launches"] == len(read[r["run"]]["launches"])
            assert (r["source"], r["gpus"], r["arm"], r["tp"], r["pp"]) == (name, 2, "B", 1, 1)
            assert r["ep"] == int(registered[r["run"]]["flags"].split("--ep ")[1].split()[0])
        # the read-once read-out as committed: measured ms and the OFF column's error per configuration
        printed = {m[1]: (float(m[2]), float(m[3])) for m in re.finditer(r"^(\S+) .*? ([\d.]+)ms \|\s+[\d.]+\s+([+-][\d.]+)%",
                                                                         (folder / "readout.txt").read_text(), re.M)}
        assert set(printed) == set(registered)
        for r in rows:
            assert abs(1e3 * r["measured_s"] - printed[r["run"]][0]) < 0.006
            assert abs(100 * (r["predicted_s"] / r["measured_s"] - 1) - printed[r["run"]][1]) < 0.06
        missing = [] if name.endswith("moelab49-2026-12-01") else \
            ["runs/launch2/megatron-moe-h200-x2-e32-top2-ffn1024-kv8-mb2-ep2-armB.json"]
        assert [s.file for s in skipped] == missing and all(s.why == "no run file" for s in skipped)
    assert sum(r["launches"] for f in moe_lab.LAUNCHED for r in moe_lab.read_launched(ROOT / f)[0]) == 15


def test_the_family_takes_the_eight_rows_each_set_a_source():
    rows = moe_lab.held_out_rows()
    launched = [r for r in rows if r["source"] in SETS]
    assert len(launched) == 8 and {r["source"] for r in launched} == set(SETS)
    assert moe_lab.held_out_rows(moe_lab.LAUNCHED) == launched
    residuals = moe_lab_residuals(launched)
    assert {(r.family, r.regime, r.scale) for r in residuals} == {("llm local spec", KEY, 2.0)}
    assert len({r.row for r in residuals}) == 8 and all(r.registered_at for r in residuals)
    assert all(-0.15 < 1 / r.rho - 1 < -0.03 for r in residuals)      # the Results: OFF -3.4 .. -14.6%, every one fast


def test_a_set_not_run_gives_nothing_and_launches_that_do_not_count_are_left_out_with_why(tmp_path):
    bundle = ROOT / "calibration" / "h200x2-moelab49-2026-12-01"
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "registered.yaml").write_text((bundle / "registered.yaml").read_text())
    assert moe_lab.read_launched(tmp_path / "x") == ([], [])                 # registered, no runs/: not run yet
    folder = _bundle(tmp_path / "b", lambda r: r["predicted_step_s"], launch2=False)
    names = list(load_yaml(bundle / "registered.yaml")["runs"])
    (folder / "runs" / f"megatron-moe-h200-x2-{names[0]}-armB.json").write_text(json.dumps(_doc(names[0], 0.1, pinned=False)))
    (folder / "runs" / "launch2" / f"megatron-moe-h200-x2-{names[1]}-armB.json").write_text(json.dumps(_doc(names[1], 0.2)))
    rows, skipped = moe_lab.read_launched(folder)
    assert [r["run"] for r in rows] == names[1:]
    by = {r["run"]: r for r in rows}
    assert by[names[1]]["launches"] == 2 and by[names[1]]["measured_s"] == pytest.approx((0.99 * by[names[1]]["predicted_s"] + 0.2) / 2, rel=1e-12)
    assert by[names[2]]["launches"] == 1 and by[names[2]]["measured_s"] == 0.99 * by[names[2]]["predicted_s"]
    why = {s.file: s.why for s in skipped}
    assert why[f"runs/megatron-moe-h200-x2-{names[0]}-armB.json"] == "not every rank pinned (arm B)"
    assert sum(w == "no run file" for w in why.values()) == 3
