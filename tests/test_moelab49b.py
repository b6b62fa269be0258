"""The moelab49b set (issue 44, session 49, calibration/h200x2-moelab49b-2026-12-01): is the router term's ROUTER piece real?
Four more Megatron-Core local-spec MoE layers, OFF / ON / P (the permutation piece alone) registered. Its registration
(fresh: --register reproduces it; the layers new to every earlier set, moelab49's included), the P-vs-ON rule on synthetic
runs (each reading, launches left out, one-line errors) and device_run.sh (moelab49's flow as its body) with stubs."""

from __future__ import annotations

import json
import tarfile

import pytest
import yaml
from conftest import ROOT, load_script
from test_megatron_moe_lab import run_device_script
from test_moelab49 import _bundle, _doc, _parse, bad_bundles_are_one_line, damaged_registrations_are_one_line, earlier_layers, fresh, register

BUNDLE = ROOT / "calibration" / "h200x2-moelab49b-2026-12-01"
script = load_script("validation/moelab49b.py")


def reg() -> dict:
    return yaml.safe_load((BUNDLE / "registered.yaml").read_text())


def test_the_registration_is_fresh_and_never_overwritten(tmp_path, monkeypatch):
    """--register at the registered commit writes registered.yaml byte for byte (three columns and the published MoE rows'
    figures priced again by today's model)."""
    fresh(script.main, BUNDLE, tmp_path, monkeypatch)


def test_the_layers_are_new_and_on_and_p_differ_by_more_than_the_margin():
    r = reg()
    earlier = earlier_layers("moelab49b", BUNDLE, r, script.RULE)
    gaps = []
    for name, run in r["runs"].items():
        assert run["flags"] == register.flags(register.SET49B[name]) and _parse(run["flags"]) not in earlier
        assert run["flags"].count("--seq 4096") == 1
        # the term adds time, its permutation piece part of it
        assert run["predicted_step_s"] < run["predicted_p_s"] < run["predicted_on_s"]
        gaps.append(run["predicted_on_s"] / run["predicted_p_s"] - 1)
    assert min(gaps) > 0.05 and sum(gaps) / len(gaps) > 0.08          # the candidates apart by more than the 3-point margin
    pub = r["published_moe_development"]
    assert list(pub) == ["off", "on", "p"] and len({v["rows"] for v in pub.values()}) == 1 and pub["off"]["rows"] >= 60


def _synthetic(tmp_path, at, launch2=True):
    return _bundle(tmp_path / "b", at, launch2, BUNDLE, register.SET49B)


@pytest.mark.parametrize(("at", "reading"), [
    (lambda r: r["predicted_p_s"], "P REPLACES ON"),                               # measured at P: ON 5-16% slow
    (lambda r: r["predicted_on_s"], "ON STAYS"),                                    # measured at ON
    (lambda r: (r["predicted_p_s"] + r["predicted_on_s"]) / 2, "UNDECIDED, ON stays"),  # halfway
    (lambda r: r["predicted_p_s"] / 1.12, "UNDECIDED, ON stays"),                    # P better by the margin, past the level
])
def test_the_read_out_prints_every_configuration_and_one_rule_line(tmp_path, capsys, at, reading):
    assert script.main([str(_synthetic(tmp_path, at))]) == 0
    out = capsys.readouterr().out
    assert [ln.split()[0] for ln in out.splitlines()[1:5]] == list(register.SET49B)
    rule = [ln for ln in out.splitlines() if ln.startswith("RULE: ")]
    assert len(rule) == 1 and rule[0].startswith(f"RULE: {reading} (") and "left out" not in out
    assert out.count("published MoE rows, development") == 1


def test_launches_that_do_not_count_are_left_out_with_why(tmp_path):
    folder = _synthetic(tmp_path, lambda r: r["predicted_p_s"], launch2=False)
    names = list(register.SET49B)
    run = folder / "runs" / f"megatron-moe-h200-x2-{names[0]}-armB.json"
    run.write_text(json.dumps(_doc(names[0], 0.1, pinned=False, configs=register.SET49B)))
    (folder / "runs" / f"megatron-moe-h200-x2-{names[1]}-armB.json").unlink()
    res = script.read_out(folder)
    assert [x["name"] for x in res["rows"]] == names[2:] and res["verdict"].startswith("NO READING (2 configurations")
    assert sum("no run file" in ln for ln in res["left"]) == 5 and any("not every rank pinned" in ln for ln in res["left"])


def test_the_rule_at_its_edges():
    assert script.verdict([0.10] * 3, [0.07] * 3).startswith("P REPLACES ON")          # exactly the margin
    assert script.verdict([0.10] * 3, [0.071] * 3).startswith("UNDECIDED")
    assert script.verdict([0.20] * 3, [-0.11, 0.11, 0.11]).startswith("UNDECIDED")     # better, past the level
    assert script.verdict([0.05] * 3, [0.081, -0.081, 0.081]).startswith("ON STAYS")
    assert script.verdict([0.05] * 2, [0.0] * 2).startswith("NO READING")


def test_bad_bundles_are_one_line(tmp_path, capsys):
    bad_bundles_are_one_line(script.main, tmp_path, capsys, "h200x2-moelab49-2026-12-01")
    damaged_registrations_are_one_line(script.main, BUNDLE, tmp_path / "damaged", capsys)


def test_device_run_flow_with_stubs(tmp_path):
    """moelab49's flow on SET49B: 8 launches (in order, then reversed), commit.txt naming this script, its registration
    and the body it sourced."""
    out, res = run_device_script(tmp_path, 2, BUNDLE / "device_run.sh", MOELAB49B_WORK=str(tmp_path / "w"))
    lines = res.stdout.splitlines()
    names = list(register.SET49B)
    assert [ln.split(": launch")[0] for ln in lines if "device.py" in ln] == [f"h200-x2-{n}-armB" for n in names + names[::-1]], res.stderr
    assert sum(" exit 0 " in ln for ln in lines) == 8
    with tarfile.open(out / "runs.tgz") as tgz:
        members = tgz.getnames()
        commit = tgz.extractfile("runs/commit.txt").read().decode()
    for n in names:
        assert f"runs/megatron-moe-h200-x2-{n}-armB.json" in members and f"runs/launch2/megatron-moe-h200-x2-{n}-armB.json" in members
    for f in ("h200x2-moelab49b-2026-12-01/device_run.sh", "h200x2-moelab49b-2026-12-01/registered.yaml",
              "h200x2-moelab49-2026-12-01/device_run.sh", "validation/moelab49b.py", "studies/megatron_moe/device.py"):
        assert f in commit, commit
    (tmp_path / "b0").mkdir()
    _, res = run_device_script(tmp_path / "b0", 2, BUNDLE / "device_run.sh", MOELAB49B_WORK=str(tmp_path / "b0" / "w"), BUDGET_S="0")
    assert res.stdout.count("skipped: budget 0 s spent") == 8
