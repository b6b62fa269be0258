"""The session-36 2-GPU sets (validation/llm_eager_regimes.py --plan two / twohost): their (preset, tokens) were new to
calibration/, their runs reach the error-band rows against the registered predictions, the host runs the twohost registration
read on the device are committed and fit, and --plan twohost refuses to register without them."""

from __future__ import annotations

import pathlib

import pytest
import yaml
from conftest import LATER_REPEATS, load_script, measured_llm_tokens, registered_tokens

from simcluster.heldout import eager, eager_regimes

ROOT = pathlib.Path(__file__).resolve().parent.parent
TWO, TWOHOST = ROOT / eager.TWO_BUNDLE, ROOT / eager.TWOHOST_BUNDLE


def _runs(bundle: pathlib.Path) -> list[dict]:
    return yaml.safe_load((bundle / "registered.yaml").read_text())["runs"]


@pytest.mark.parametrize("bundle", [TWO, TWOHOST], ids=["two", "twohost"])
def test_the_sets_tokens_were_new_to_calibration(bundle):
    earlier = measured_llm_tokens(TWO, TWOHOST, *LATER_REPEATS)
    assert registered_tokens(_runs(bundle)) & earlier == set()


@pytest.mark.parametrize("bundle, runs", [(TWO, 15), (TWOHOST, 9)], ids=["two", "twohost"])
def test_every_registered_run_is_a_held_out_row_at_its_registered_step(bundle, runs):
    """The band's reader (registered_rows) maps every run to its registration: a mode, preset or row-count slip."""
    rows = eager_regimes.registered_rows(bundle)
    assert len(rows) == runs
    registered = {(r["preset"], r["mode"]): r["predicted"]["h200"]["step_ms"] / 1e3 for r in _runs(bundle)}
    for row in rows:
        preset, mode = row["label"].split()[:2]
        assert row["predicted_s"] == pytest.approx(registered[(preset, mode)])
        assert row["gpus"] == 2 and row["transport"] == "nvlink"


def test_the_committed_host_runs_give_each_mode_its_own_fit():
    """The variant registered on the device took each mode's fit from TWOHOST/host: the committed folder still gives
    ddp, fsdp and tp a fit over its 3 layer counts x 2 shapes, and tp's host cost per kernel is not the other lease's."""
    from simcluster.llm.eager import fit_modes

    own, other = fit_modes(TWOHOST / "host"), fit_modes(eager.MODE_HOST)
    assert {m: n for m, (_, _, n) in own.items()} == {"ddp": 6, "fsdp": 6, "tp": 6}
    assert all(c > 0 for c, _, _ in own.values())
    assert own["tp"][0] != pytest.approx(other["tp"][0], rel=0.01)


def test_twohost_without_host_runs_is_a_one_line_error(tmp_path, capsys):
    script = load_script("validation/llm_eager_regimes.py")
    assert script.main(["--plan", "twohost", "--register", str(tmp_path / "r.yaml")]) == 2
    err = capsys.readouterr().err.strip()
    assert "--host" in err and "\n" not in err
    assert not (tmp_path / "r.yaml").exists()


def test_an_empty_host_folder_is_refused_not_registered_as_a_variant(tmp_path, capsys):
    """Without the lease's own runs the variant would be the model's prediction under an 'own fit' label."""
    script = load_script("validation/llm_eager_regimes.py")
    empty = tmp_path / "host"
    empty.mkdir()
    assert script.main(["--plan", "twohost", "--host", str(empty), "--register", str(tmp_path / "r.yaml")]) == 2
    err = capsys.readouterr().err.strip()
    assert "ddp, fsdp, tp" in err and str(empty) in err and "\n" not in err
    assert not (tmp_path / "r.yaml").exists()


def test_a_failed_run_leaves_its_mode_without_a_verdict(tmp_path, capsys):
    """A run that left no document must not let the surviving runs decide the mode (tp met on 2 of 3 runs)."""
    import shutil

    copy = tmp_path / TWOHOST.name
    shutil.copytree(TWOHOST, copy, ignore=shutil.ignore_patterns("host"))
    (copy / "runs" / "tp-1b.json").write_text("Traceback: the run died\n")
    script = load_script("validation/llm_eager_regimes.py")
    assert script.main([str(copy)]) == 1
    out = capsys.readouterr().out
    assert "tp: incomplete (2 of 3 registered runs judged): no verdict" in out
    assert "ddp: step mean |error| 1.2%" in out
