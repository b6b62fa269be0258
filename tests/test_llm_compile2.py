"""The held-out compile2 set's read-out (validation/llm_compile2.py) on fake llm-step documents: the verdicts its README
declares (compiled step mean <= 8% and every memory within 10%; op: the launches' median within 10% mean), and
'incomplete' where too few runs came back."""

from __future__ import annotations

import json
import pathlib

from conftest import load_script

ROOT = pathlib.Path(__file__).resolve().parent.parent
REGISTERED = ROOT / "calibration/h200x1-llm-compile2-2026-11-29/registered.json"


def _script():
    return load_script("validation/llm_compile2.py")


def _doc(run: dict, step_scale: float, mem_scale: float) -> str:
    shape = {"seq": run["seq"], "micro_batch": run["micro_batch"], "status": "ok",
             "median_step_s": run["predicted_step_ms"] * step_scale / 1e3,
             "max_memory_allocated_bytes": run["predicted_mem_GiB"] * mem_scale * 2**30 + 1e6,
             "max_memory_allocated_timed_bytes": run["predicted_mem_GiB"] * mem_scale * 2**30}
    doc = {"tool": "llm-step", "model": {"preset": run["preset"], "layers": run["layers"]}, "shapes": [shape],
           "compile": run["kind"] == "compile", "ac_mode": "op" if run["kind"] == "op" else "none"}   # the registered run
    return "llm-step log line\n" + json.dumps(doc)


def _bundle(tmp_path, compiled: dict, op: dict, mem_scale: float = 1.02) -> pathlib.Path:
    runs = tmp_path / "runs"
    runs.mkdir(parents=True)
    for run in json.loads(REGISTERED.read_text())["runs"]:
        if run["kind"] == "compile" and run["run"] in compiled:
            (runs / f"{run['run']}.json").write_text(_doc(run, compiled[run["run"]], mem_scale))
        for i, scale in enumerate(op.get(run["run"], ()), 1):
            (runs / f"{run['run']}-{i}.json").write_text(_doc(run, scale, 1.0))
    return tmp_path


def _verdicts(capsys, bundle) -> list[str]:
    assert _script().main([str(bundle)]) == 0
    return [line for line in capsys.readouterr().out.splitlines() if line.startswith(("compiled:", "op:"))]


def test_the_registered_runs_are_the_plan():
    mod = _script()
    assert [r["run"] for r in json.loads(REGISTERED.read_text())["runs"]] == [r["run"] for r in mod.planned()]


def test_the_read_out_meets_misses_and_stays_incomplete_as_declared(tmp_path, capsys):
    runs = [r for r in json.loads(REGISTERED.read_text())["runs"]]
    comp = {r["run"]: 1.05 for r in runs if r["kind"] == "compile"}
    ops = {r["run"]: (1.0, 1.12, 1.05) for r in runs if r["kind"] == "op"}
    got = _verdicts(capsys, _bundle(tmp_path / "a", comp, ops))
    assert got[0].startswith("compiled: step mean |error| 5.0%") and got[0].endswith(": met"), got
    assert got[1].startswith("op: step mean |error| 5.0%") and ": met; memory" in got[1], got
    got = _verdicts(capsys, _bundle(tmp_path / "b", comp, {k: (1.2, 1.15) for k in ops}, mem_scale=1.15))
    assert got[0].endswith("NOT met") and "memory max |error| 15.0%" in got[0], got
    assert "17.5%" in got[1] and "NOT met" in got[1], got
    two = dict(list(comp.items())[:2])
    got = _verdicts(capsys, _bundle(tmp_path / "c", two, {k: (1.0,) for k in ops}))
    assert got == ["compiled: incomplete (2 shapes ran; 3 needed)",
                   f"op: incomplete (fewer than 2 launches: {', '.join(ops)})"]


def test_a_launch_that_ran_another_configuration_is_not_counted(tmp_path, capsys):
    """The read-out takes the band's acceptance (heldout/eager_registered.launch_shapes): an op launch that ran without
    the op policy does not count toward its shape's median, and the shape goes incomplete."""
    runs = [r for r in json.loads(REGISTERED.read_text())["runs"]]
    comp = {r["run"]: 1.0 for r in runs if r["kind"] == "compile"}
    ops = {r["run"]: (1.0, 1.0) for r in runs if r["kind"] == "op"}
    bundle = _bundle(tmp_path, comp, ops)
    op = next(r for r in runs if r["kind"] == "op")
    doc = (bundle / "runs" / f"{op['run']}-2.json").read_text().replace('"ac_mode": "op"', '"ac_mode": "none"')
    (bundle / "runs" / f"{op['run']}-2.json").write_text(doc)
    got = _verdicts(capsys, bundle)
    assert got[1].startswith("op: incomplete") and op["run"] in got[1], got


def test_a_malformed_registration_is_one_line_not_a_traceback(tmp_path, capsys):
    (tmp_path / "runs").mkdir()
    (tmp_path / "registered.json").write_text(json.dumps({"runs": [{"run": "x"}]}))
    assert _script().main([str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "registered.json: runs" in err and "predicted_step_ms" in err, err

