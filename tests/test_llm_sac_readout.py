"""validation/llm_sac.py read_out (also llm_ac6's): a missing registered run fails the read-out and is named, a mode is
judged only with all its runs, a malformed registration is a one-line error (mendB, s35)."""

import shutil

from conftest import ROOT, load_script

SAC = ROOT / "calibration/h200x1-llm-sac-2026-11-29"


def _bundle(tmp_path, runs: tuple[str, ...]):
    (tmp_path / "runs").mkdir(parents=True)
    for run in runs:
        shutil.copy(SAC / "runs" / f"{run}.json", tmp_path / "runs" / f"{run}.json")
    return tmp_path


def test_an_empty_bundle_fails_and_names_every_missing_run(tmp_path, capsys):
    mod = load_script("validation/llm_sac.py")
    assert mod.read_out(_bundle(tmp_path, ()), SAC / "registered.json") == 1
    captured = capsys.readouterr()
    assert "met" not in captured.out and captured.out.count("incomplete: 0 of 3") == 4
    err = captured.err.strip()
    assert len(err.splitlines()) == 1 and "12 of 12 registered runs" in err and "3b-op" in err


def test_a_mode_is_judged_only_with_all_its_runs(tmp_path, capsys):
    mod = load_script("validation/llm_sac.py")
    bundle = _bundle(tmp_path, ("0.3b-none", "0.3b-full", "1b-full", "3b-full"))
    assert mod.read_out(bundle, SAC / "registered.json") == 1
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line.split()}
    assert "incomplete: 1 of 3" in lines["none"] and lines["full"].endswith(": met")
    assert "incomplete: 0 of 3" in lines["op"]


def test_a_registration_without_runs_is_a_one_line_error(tmp_path, capsys):
    mod = load_script("validation/llm_sac.py")
    reg = tmp_path / "registered.json"
    for text in ('{"card": "x"}', "not json", '{"runs": [{"run": "a"}]}'):
        reg.write_text(text)
        assert mod.read_out(_bundle(tmp_path / str(len(text)), ()), reg) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and str(reg) in err and "not a registration" in err
