"""The lease3 set (validation/llm_lease3.py, calibration/h200x1-llm-lease3-2026-11-29): its registration is the plan,
its shapes were never measured in their mode before, device_run.sh runs exactly the registered runs (op three times),
and the band's reader (eager_registered.read_compile2) and compile2's read-out take its documents unchanged."""

from __future__ import annotations

import json
import pathlib
import re

from conftest import load_script

from simcluster.heldout.eager_registered import read_compile2
from simcluster.llm import eager

ROOT = pathlib.Path(__file__).resolve().parent.parent
SET = ROOT / "calibration/h200x1-llm-lease3-2026-11-29"
CAL = ROOT / "calibration"


def _script():
    return load_script("validation/llm_lease3.py")


def _registered() -> list[dict]:
    return json.loads((SET / "registered.json").read_text())["runs"]


def _measured_before() -> set[tuple]:
    """(kind, preset, layers, seq, micro-batch) of every earlier compiled and op run on one H200."""
    seen = set()
    for r in json.loads((CAL / "h200x1-llm-compile-2026-11-29/readout-registered.json").read_text())["rows"]:
        if r["compiled"]:
            seen.add(("compile", r["preset"], None, r["seq"], r["micro_batch"]))
    for name in ("compile2", "ophost2"):
        for r in json.loads((CAL / f"h200x1-llm-{name}-2026-11-29/registered.json").read_text())["runs"]:
            seen.add((r.get("kind", "op"), r["preset"], r["layers"], r["seq"], r["micro_batch"]))
    for path in (CAL / "h200x1-llm-sac-2026-11-29/runs").glob("*-op.json"):
        doc = eager.read_document(path)
        seen |= {("op", path.name.split("-")[0], None, s["seq"], s["micro_batch"]) for s in doc["shapes"]}
    for path in (CAL / "h200x1-llm-ophost-2026-11-29/runs").glob("*.json"):
        preset, seq, mb = re.fullmatch(r"(.+)-(\d+)x(\d+)", path.stem).groups()
        seen.add(("op", preset, None, int(seq), int(mb)))
    return seen


def test_the_registered_runs_are_the_plan_on_new_shapes():
    mod = _script()
    reg = _registered()
    assert [r["run"] for r in reg] == [r["run"] for r in mod.llm_compile2.planned(mod.COMPILED, mod.OP)]
    assert [r["kind"] for r in reg].count("compile") == 4 and [r["kind"] for r in reg].count("op") == 2
    before = _measured_before()
    assert ("op", "2b", None, 2048, 4) in before and ("compile", "3b", None, 2048, 2) in before   # the reader sees them
    assert not {(r["kind"], r["preset"], r["layers"], r["seq"], r["micro_batch"]) for r in reg} & before


def test_device_run_runs_each_registered_run_once_and_op_three_times():
    script = (SET / "device_run.sh").read_text()
    names = re.findall(r"^go (\S+) ", script, flags=re.M)
    want = [r["run"] for r in _registered() if r["kind"] == "compile"] + \
        [f"{r['run']}-{i}" for r in _registered() if r["kind"] == "op" for i in (1, 2, 3)]
    assert sorted(names) == sorted(want)
    for r in _registered():
        flag = "$C" if r["kind"] == "compile" else "$OP"
        assert re.search(rf"^go {re.escape(r['run'])}\S* .*--preset {re.escape(r['preset'])} "
                         rf"--shapes {r['seq']}:{r['micro_batch']} \{flag}$", script, flags=re.M), r["run"]


def _doc(run: dict, scale: float) -> str:
    shape = {"seq": run["seq"], "micro_batch": run["micro_batch"], "status": "ok",
             "median_step_s": run["predicted_step_ms"] * scale / 1e3,
             "max_memory_allocated_bytes": run["predicted_mem_GiB"] * 1.01 * 2**30,
             "max_memory_allocated_timed_bytes": run["predicted_mem_GiB"] * 1.01 * 2**30}
    doc = {"tool": "llm-step", "model": {"preset": run["preset"]}, "shapes": [shape], "compile": run["kind"] == "compile",
           "ac_mode": "op" if run["kind"] == "op" else "none"}
    return "llm-step log line\n" + json.dumps(doc)


def test_the_band_reader_and_the_read_out_take_its_documents(tmp_path, capsys):
    (tmp_path / "runs").mkdir()
    (tmp_path / "registered.json").write_text((SET / "registered.json").read_text())
    for r in _registered():
        if r["kind"] == "compile":
            (tmp_path / "runs" / f"{r['run']}.json").write_text(_doc(r, 1.06))
        else:
            for i, scale in enumerate((1.0, 1.2, 1.04), 1):
                (tmp_path / "runs" / f"{r['run']}-{i}.json").write_text(_doc(r, scale))
    rows, skipped = read_compile2(tmp_path)
    assert not skipped and len(rows) == 6
    assert sorted(round(r["measured_s"] / r["predicted_s"] - 1, 6) for r in rows) == [0.04] * 2 + [0.06] * 4
    assert _script().main([str(tmp_path)]) == 0
    verdicts = [x for x in capsys.readouterr().out.splitlines() if x.startswith(("compiled:", "op:"))]
    assert verdicts[0].startswith("compiled: step mean |error| 6.0%") and verdicts[0].endswith(": met"), verdicts
    assert verdicts[1].startswith("op: step mean |error| 4.0%") and "memory max |error| 1.0%: met" in verdicts[1], verdicts
