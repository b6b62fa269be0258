"""The ac6a / ac6b sets (validation/llm_ac6.py, calibration/h200x1-llm-ac6{a,b}-2026-11-29): each registration is its
plan (three shapes x none / full / every:2), no shape was measured before in any mode, the device script runs what the
registration lists, and the band's reader (eager_registered.read_sac) and the read-out take the runner's documents."""

from __future__ import annotations

import json
import pathlib

import pytest
from conftest import load_script, measured_llm_shapes, registered_shapes

from simcluster.heldout.eager_registered import read_sac

ROOT = pathlib.Path(__file__).resolve().parent.parent
SAC_RUN = ROOT / "calibration/h200x1-llm-sac-2026-11-29/runs/1b-every2.json"   # a real llm-step document to edit
SETS = ("ac6a", "ac6b")


def _script():
    return load_script("validation/llm_ac6.py")


def _registered(folder: pathlib.Path) -> list[dict]:
    return json.loads((folder / "registered.json").read_text())["runs"]


@pytest.mark.parametrize("name", (*SETS, "eager7", "eager8"))
def test_the_registration_is_the_plan_on_never_measured_shapes(name):
    mod = _script()
    folder, plan = mod.SETS[name]
    reg = _registered(folder)
    assert [(r["preset"], r["seq"], r["micro_batch"], r["ac_mode"]) for r in reg] == \
        [(p, s, m, mode) for p, s, m in plan for mode in mod.MODES]
    folders = [mod.SETS[n][0] for n in (*SETS, "eager7", "eager8")]   # eager7 / eager8 (session 35): none of ac6's shapes either
    assert not any(registered_shapes(reg) & registered_shapes(_registered(mod.SETS[n][0])) for n in mod.SETS if n != name)
    assert max(r["predicted_mem_GiB"] for r in reg) < 110   # fits the 141 GB card without checkpointing, with margin
    assert not registered_shapes(reg) & measured_llm_shapes(*folders)
    for r in reg:   # every:2 saves more than full and less than none; full costs the most time
        by_mode = {x["ac_mode"]: x for x in reg if (x["preset"], x["seq"]) == (r["preset"], r["seq"])}
        assert by_mode["full"]["predicted_mem_GiB"] < by_mode["every:2"]["predicted_mem_GiB"] < by_mode["none"]["predicted_mem_GiB"]
        assert by_mode["none"]["predicted_step_ms"] < by_mode["every:2"]["predicted_step_ms"] < by_mode["full"]["predicted_step_ms"]


def test_the_two_sets_share_no_shape_and_the_device_script_reads_the_registration():
    mod = _script()
    a, b = (registered_shapes(_registered(mod.SETS[n][0])) for n in SETS)
    assert not a & b and len(a) == len(b) == 3
    script = (mod.SETS["ac6a"][0] / "device_run.sh").read_text()
    assert "$SRC/registered.json" in script and '--ac-mode "$mode"' in script and "--profile 0" in script
    assert "ac6a|ac6b" in script


def _run_doc(run: dict, scale: float) -> str:
    doc = json.loads(SAC_RUN.read_text())
    shape = doc["shapes"][0]
    doc["model"]["preset"] = run["preset"]
    doc["ac_mode"] = run["ac_mode"]
    doc["activation_checkpointing"] = run["ac_mode"] != "none"
    shape.update(seq=run["seq"], micro_batch=run["micro_batch"], median_step_s=run["predicted_step_ms"] / 1e3 * scale,
                 max_memory_allocated_bytes=int(run["predicted_mem_GiB"] * 2**30 * 1.02))
    return json.dumps(doc)


def test_the_band_reader_and_the_read_out_take_its_documents(tmp_path, capsys):
    mod = _script()
    folder = mod.SETS["ac6a"][0]
    (tmp_path / "runs").mkdir()
    (tmp_path / "registered.json").write_text((folder / "registered.json").read_text())
    reg = _registered(folder)
    for r, scale in zip(reg, (1.0, 1.1, 0.9, 1.1, 1.0, 1.0, 0.95, 1.2, 1.0), strict=True):
        (tmp_path / "runs" / f"{r['run']}.json").write_text(_run_doc(r, scale))
    rows, skipped = read_sac(tmp_path)
    assert not skipped and len(rows) == 9
    assert {r["recompute"] for r in rows} == {"none", "full"} and {r["recompute_every"] for r in rows} == {1, 2}
    assert mod.main(["ac6a", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    verdicts = {line.split()[0]: line for line in out.splitlines() if " step mean |error| " in line}
    assert verdicts["full"].endswith(": NOT met") and verdicts["none"].endswith(": met"), verdicts   # full: 8.6% mean
    assert mod.main(["ac6c", str(tmp_path)]) == 2 and mod.main(["--register"]) == 2
    assert "llm_ac6: expected" in capsys.readouterr().err
    assert mod.main(["--register", "ac6a"]) == 2   # registered: never overwritten, one line
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "never overwritten" in err and "ac6a" in err


def _without_model_now(text: str) -> list[list[str]]:
    """The read-out's cells, a run line's fifth column (today's model, "now ms") left out: it may move, nothing else may."""
    rows = [line.split() for line in text.splitlines()]
    return [cells[:4] + cells[5:] if len(cells) == 8 and cells[0] != "run" else cells for cells in rows]


REGISTRATION = {"ac6a": "a48362f66546f92a6487a578757d08afd5a0a144", "ac6b": "a48362f66546f92a6487a578757d08afd5a0a144",
                "eager7": "1844559f26098869d4cf189bfae87c2592552fe7", "eager8": "4505374d1918d630d8acd2e847dd0320a6ac8418"}


@pytest.mark.parametrize("name", (*SETS, "eager7", "eager8"))
def test_the_read_out_reproduces_the_committed_readout_and_the_band_takes_all_nine_runs(name, capsys):
    from simcluster.heldout.eager_registered import REGISTERED

    mod = _script()
    folder = mod.SETS[name][0]
    assert mod.main([name, str(folder)]) == 0
    assert _without_model_now(capsys.readouterr().out) == _without_model_now((folder / "readout.txt").read_text())
    rows, skipped = read_sac(folder)
    assert not skipped and len(rows) == 9 and str(folder.relative_to(ROOT)) in REGISTERED
    assert (folder / "commit.txt").read_text().strip() == REGISTRATION[name]   # the run came from its registration
