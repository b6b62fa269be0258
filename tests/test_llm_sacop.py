"""The sacop set (validation/llm_sacop.py, calibration/h200x1-eager-sacop-2026-11-30): its registration is today's
model's plan, device_run.sh runs exactly the registered shapes three times each, and the read-out's rule gives each
verdict on synthetic launches (earlier real run documents with their median step rewritten)."""

from __future__ import annotations

import json
import pathlib
import re
import shutil

from conftest import load_script

ROOT = pathlib.Path(__file__).resolve().parent.parent
SET = ROOT / "calibration/h200x1-eager-sacop-2026-11-30"
# an earlier op document of each registered shape (the synthetic launches' template)
TEMPLATES = {"op-3b-2048x4": "calibration/h200x1-llm-sac-2026-11-29/runs/3b-op.json",
             "op-0.8b-2048x4": "calibration/h200x1-llm-lease3-2026-11-29/runs/op-0.8b-2048x4-1.json",
             "op-3b-1024x4": "calibration/h200x1-llm-lease3-2026-11-29/runs/op-3b-1024x4-1.json"}


def _script():
    return load_script("validation/llm_sacop.py")


def _registered() -> list[dict]:
    return json.loads((SET / "registered.json").read_text())["runs"]


def test_registration_is_the_plan():
    """The registered runs are the script's plan (the predictions themselves are the model at the REGISTERED commit:
    not compared with today's model, which may move after it)."""
    mod = _script()
    reg = _registered()
    assert [r["run"] for r in reg] == [r["run"] for r in mod.llm_compile2.planned((), mod.OP)]
    assert all(r["kind"] == "op" and r["predicted_step_ms"] > 0 for r in reg)
    assert {mod.LONG, mod.SHORT} <= {r["run"] for r in reg}


def test_device_run_runs_each_registered_shape_three_times_as_registered():
    text = (SET / "device_run.sh").read_text()
    names = re.findall(r"^guarded (\S+) ", text, flags=re.M)
    assert sorted(names) == sorted(f"{r['run']}-{i}" for r in _registered() for i in (1, 2, 3))
    shapes = dict(re.findall(r'^(\w+)="(--preset \S+ --shapes \S+)"', text.replace("; ", "\n"), flags=re.M))
    for r in _registered():
        used = re.findall(rf"^guarded {re.escape(r['run'])}-\d .*\$(\w+)$", text, flags=re.M)
        assert len(used) == 3, r["run"]
        for line in used:
            assert shapes[line] == f"--preset {r['preset']} --shapes {r['seq']}:{r['micro_batch']}", r["run"]


def _bundle(tmp_path: pathlib.Path, ratios: dict[str, list[float]]) -> pathlib.Path:
    """A bundle whose launch i of run r has median step = registered / ratios[r][i] (error = ratio - 1)."""
    (tmp_path / "runs").mkdir(parents=True)
    shutil.copy(SET / "registered.json", tmp_path / "registered.json")
    for r in _registered():
        doc = json.loads((ROOT / TEMPLATES[r["run"]]).read_text())
        for i, ratio in enumerate(ratios[r["run"]], 1):
            doc["shapes"][0]["median_step_s"] = r["predicted_step_ms"] / ratio / 1e3
            (tmp_path / "runs" / f"{r['run']}-{i}.json").write_text(json.dumps(doc))
    return tmp_path


def test_read_out_noise(tmp_path, capsys):
    ratios = {"op-3b-2048x4": [1.05, 1.03, 1.2], "op-0.8b-2048x4": [1.06, 0.9, 1.04], "op-3b-1024x4": [1.0, 1.04, 1.1]}
    assert _script().main([str(_bundle(tmp_path, ratios))]) == 0
    out = capsys.readouterr().out
    assert "NOISE" in out and "sequence scaling holds" in out, out
    assert "error +5.0%" in out   # the median of 1.03, 1.05, 1.2


def test_read_out_model(tmp_path, capsys):
    ratios = {"op-3b-2048x4": [0.8] * 3, "op-0.8b-2048x4": [1.2] * 3, "op-3b-1024x4": [1.2] * 3}
    assert _script().main([str(_bundle(tmp_path, ratios))]) == 0
    out = capsys.readouterr().out
    assert "MODEL" in out and "sequence scaling WRONG" in out, out


def test_read_out_undecided_and_incomplete(tmp_path, capsys):
    ratios = {"op-3b-2048x4": [1.2] * 3, "op-0.8b-2048x4": [0.95] * 3, "op-3b-1024x4": [1.0] * 3}
    mod = _script()
    assert mod.main([str(_bundle(tmp_path / "a", ratios))]) == 0
    assert "UNDECIDED" in capsys.readouterr().out
    ratios["op-3b-1024x4"] = [1.0]
    assert mod.main([str(_bundle(tmp_path / "b", ratios))]) == 0
    assert "INCOMPLETE" in capsys.readouterr().out


def test_bad_registration_is_one_line(tmp_path, capsys):
    (tmp_path / "runs").mkdir()
    (tmp_path / "registered.json").write_text('{"runs": [{"run": "x"}]}')
    assert _script().main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "registered.json" in err
