"""Issue 44 (pool2): every validation script that writes a registered predictions file (`--register` /
`--registered`) refuses one that exists with one line, before predicting anything, and leaves it byte for byte as it
was (simcluster/heldout/registration.py)."""

from __future__ import annotations

import pathlib

import pytest
from conftest import load_script

from simcluster.errors import SimclusterError
from simcluster.heldout.registration import write_registration

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _script(name: str):
    return load_script(f"validation/{name}.py")


def _no_model(*args, **kwargs):
    raise AssertionError("a refused registration must not predict anything")


@pytest.mark.parametrize(("name", "argv"), [("llm_sac", ["--register"]), ("llm_compile2", ["--register"]),
                                             ("llm_eager_regimes", ["--register"]), ("llm_ophost", ["--register"]),
                                             ("eager_pp_host", ["--register"])])
def test_register_refuses_an_existing_file_in_one_line(name, argv, tmp_path, monkeypatch, capsys):
    mod = _script(name)
    monkeypatch.setattr(mod, "register", _no_model)
    target = tmp_path / "registered.json"
    target.write_text("registered before the run\n")
    assert mod.main([*argv, str(target)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(target) in err and "never overwritten" in err
    assert target.read_text() == "registered before the run\n"


def test_llm_compile_registered_refuses_the_committed_predictions(monkeypatch, capsys):
    mod = _script("llm_compile")
    monkeypatch.setattr(mod, "rows_registered", _no_model)
    committed = (mod.SET / "predictions.json").read_bytes()
    assert mod.main(["--registered"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "predictions.json" in err and "never overwritten" in err
    assert (mod.SET / "predictions.json").read_bytes() == committed


def test_the_compile_sets_registered_read_is_written_once(capsys):
    mod = _script("llm_compile_registered_read")
    committed = {ext: (ROOT / mod.SET / f"readout-registered.{ext}").read_bytes() for ext in ("txt", "json")}
    assert mod.main([str(ROOT)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "readout-registered.txt" in err and "never overwritten" in err
    assert {ext: (ROOT / mod.SET / f"readout-registered.{ext}").read_bytes() for ext in ("txt", "json")} == committed


def test_a_new_path_is_written_once(tmp_path):
    target = tmp_path / "set" / "registered.json"
    write_registration(target, "first\n")
    assert target.read_text() == "first\n"
    with pytest.raises(SimclusterError, match="registered.json: a registered predictions file exists"):
        write_registration(target, "second\n")
    assert target.read_text() == "first\n"


def test_a_new_registration_is_written_by_the_script(tmp_path, monkeypatch):
    mod = _script("llm_sac")
    monkeypatch.setattr(mod, "predict", lambda *a: (0.1, 2.0**30))
    target = tmp_path / "registered.json"
    assert mod.main(["--register", str(target)]) == 0
    assert '"predicted_step_ms": 100.0' in target.read_text()
    assert mod.main(["--register", str(target)]) == 2


def test_the_ophost_read_out_refuses_a_missing_bundle_in_one_line(tmp_path, capsys):
    mod = _script("llm_ophost")
    assert mod.main([str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "nowhere" in err and "BUNDLE/runs" in err
