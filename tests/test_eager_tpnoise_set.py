"""Session 42's TP-noise set (calibration/h200x2-eager-tpnoise-2026-11-30): the registration against its script, the
study's numbers it records, and synthetic runs through the read-out's three rules."""

from __future__ import annotations

import json
import math
import re
import shutil

import pytest
import yaml
from conftest import ROOT, bundles_run_after, load_script

from simcluster.errors import SimclusterError

BUNDLE = ROOT / "calibration" / "h200x2-eager-tpnoise-2026-11-30"


def script():
    return load_script("validation/eager_tpnoise.py")


def doc(preset: str, shapes: list[tuple[int, int, float]]) -> dict:
    return {"tool": "llm-step", "format": 1, "mode": "tp", "world_size": 2, "model": {"preset": preset},
            "shapes": [{"seq": s, "micro_batch": m, "status": "ok", "median_step_s": t, "step_times_s": [t] * 10}
                       for s, m, t in shapes]}


def synthetic(tmp_path, seq_effect: float, order_effect: float, jitter: list[float]):
    """A bundle whose 2b processes take 0.3 s at 2048:2, times exp(seq_effect) at 4096:1, times exp(order_effect) for
    the second shape of a process, times exp(jitter[i]) for process i; 3b 4096:1 at 0.4 s."""
    bundle = tmp_path / "set"
    (bundle / "runs").mkdir(parents=True)
    shutil.copy(BUNDLE / "registered.yaml", bundle / "registered.yaml")
    stems = [s for s in script().PROCESSES if s.startswith(("a-", "b-"))]
    for i, stem in enumerate(stems):
        j = math.exp(jitter[i])
        short, long = 0.3 * j, 0.3 * j * math.exp(seq_effect)
        if stem.startswith("a-"):
            shapes = [(2048, 2, short), (4096, 1, long * math.exp(order_effect))]
        else:
            shapes = [(4096, 1, long), (2048, 2, short * math.exp(order_effect))]
        (bundle / "runs" / f"{stem}.json").write_text("torchrun noise\n" + json.dumps(doc("2b", shapes)))
    (bundle / "runs" / "3b-r1.json").write_text(json.dumps(doc("3b", [(4096, 1, 0.4)])))
    return bundle


def test_the_registration_records_todays_model_and_the_studys_numbers():
    s = script()
    reg = yaml.safe_load((BUNDLE / "registered.yaml").read_text())
    for row, want in zip(reg["rows"], s.predicted(), strict=True):
        assert row["predicted"]["step_ms"] == pytest.approx(want["predicted"]["step_ms"], rel=1e-3), row
    study = load_script("studies/tp_lease_noise.py")
    later = {BUNDLE.name, *(b.name for b in bundles_run_after(BUNDLE))}   # the study as it stood when this set was registered
    n = study.numbers([r for r in study.processes() if r["path"].split("/")[0] not in later])
    assert reg["study"]["process_sd"] == pytest.approx(n["process_sd"], abs=5e-4)
    assert reg["study"]["process_dof"] == n["process_dof"]
    assert reg["study"]["lease_sd"] == pytest.approx(n["lease_sd"], abs=5e-4)
    assert reg["study"]["floor_normal_pct"] == pytest.approx(n["floor_normal"] * 100, abs=0.05)


def test_the_device_script_runs_the_registered_processes_in_their_orders():
    text = (BUNDLE / "device_run.sh").read_text()
    runs = re.findall(r"^guarded (\S+) \d+ \$tp --preset (\S+) --shapes (\S+)$", text, re.M)
    assert [r[0] for r in runs] == list(script().PROCESSES)
    for stem, preset, shapes in runs:
        assert script().PROCESSES[stem][0] == preset
        want = {"a": "2048:2,4096:1", "b": "4096:1,2048:2", "": "4096:1"}[script().PROCESSES[stem][1]]
        assert shapes == want, stem


def test_a_sequence_effect_is_told_from_an_order_effect(tmp_path):
    s = script()
    jitter = [0.01, -0.01, 0.0, 0.005, -0.005, 0.0]
    seq = s.read_out(synthetic(tmp_path / "seq", 0.10, 0.0, jitter))["verdicts"]["S"]
    assert "sequence (4096:1 over 2048:2) +0.100: SEEN" in seq and "process +0.000: not seen" in seq, seq
    order = s.read_out(synthetic(tmp_path / "order", 0.0, 0.10, jitter))["verdicts"]["S"]
    assert "+0.000: not seen" in order and "process +0.100: SEEN" in order, order


def test_the_noise_rule_reads_the_spread_of_processes(tmp_path):
    s = script()
    quiet = s.read_out(synthetic(tmp_path / "quiet", 0.0, 0.0, [0.001, -0.001, 0.0, 0.001, -0.001, 0.0]))
    assert quiet["verdicts"]["N"].startswith("process noise as the study: LOWER"), quiet["verdicts"]["N"]
    like = s.read_out(synthetic(tmp_path / "like", 0.0, 0.0, [0.08, -0.08, 0.0, 0.09, -0.09, 0.0]))
    assert like["verdicts"]["N"].startswith("process noise as the study: HOLDS"), like["verdicts"]["N"]
    loud = s.read_out(synthetic(tmp_path / "loud", 0.0, 0.0, [0.3, -0.3, 0.0, 0.3, -0.3, 0.0]))
    assert loud["verdicts"]["N"].startswith("process noise as the study: HIGHER"), loud["verdicts"]["N"]
    assert "3b-r2: no runs/3b-r2.json" in " ".join(like["left"])
    assert like["verdicts"]["M"].startswith("TP 2 "), like["verdicts"]["M"]


def test_a_bad_registration_or_document_is_one_line(tmp_path):
    s = script()
    bundle = synthetic(tmp_path, 0.0, 0.0, [0.0] * 6)
    (bundle / "runs" / "b-r3.json").write_text("Traceback ...")
    (bundle / "runs" / "a-r3.json").write_text(json.dumps(doc("3b", [(2048, 2, 0.3)])))
    left = " ".join(s.read_out(bundle)["left"])
    assert "b-r3: no llm-step document" in left and "a-r3: not tp / 2 ranks / 2b" in left
    reg = yaml.safe_load((bundle / "registered.yaml").read_text())
    del reg["study"]
    (bundle / "registered.yaml").write_text(yaml.safe_dump(reg))
    with pytest.raises(SimclusterError, match="registered.yaml: missing or bad key"):
        s.read_out(bundle)


def test_a_partial_run_file_is_a_left_out_line_not_a_traceback(tmp_path):
    """An ok shape without its seq (or a micro_batch that is not a number): the process is left out in one line and
    the rest is read."""
    s = script()
    bundle = synthetic(tmp_path, 0.0, 0.0, [0.0] * 6)
    partial = doc("2b", [(2048, 2, 0.3), (4096, 1, 0.3)])
    del partial["shapes"][1]["seq"]
    (bundle / "runs" / "a-r2.json").write_text(json.dumps(partial))
    bad = doc("2b", [(2048, 2, 0.3)])
    bad["shapes"][0]["micro_batch"] = "two"
    (bundle / "runs" / "b-r2.json").write_text(json.dumps(bad))
    out = s.read_out(bundle)
    left = [line for line in out["left"] if line.startswith(("a-r2", "b-r2"))]
    assert len(left) == 2 and all("partial document" in line and "\n" not in line for line in left), left
    assert {r["process"] for r in out["rows"]} == {"a-r1", "b-r1", "a-r3", "b-r3", "3b-r1"}
