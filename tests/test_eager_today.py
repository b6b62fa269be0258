"""Session 41's eager-today set (calibration/h200x2-eager-today-2026-11-30): the registration against the script and the
device call, and a synthetic run through the heldout reader, the table's eager rows (trust/build) and the read-out."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import yaml
from conftest import LATER_SETS_S44, ROOT, load_script, seqs_named_elsewhere

from simcluster.errors import SimclusterError
from simcluster.heldout import eager_today, step_sets
from simcluster.trust.build import eager_residuals

BUNDLE = ROOT / eager_today.TODAY_BUNDLE
FLAGGED = {"single", "single+compile", "single+ckpt-every2", "single+sac-op", "single+host-bound", "PP"}


def script():
    return load_script("validation/eager_today.py")


def accuracy_at_registration(tmp=[]) -> Path:   # noqa: B006  (one file per session)
    """docs/accuracy.md as the registration read it (git show at registered_at_commit's model, b540476b)."""
    if not tmp:
        text = subprocess.run(["git", "show", "b540476b:docs/accuracy.md"], cwd=ROOT, capture_output=True, text=True)
        if text.returncode:
            pytest.skip("git show b540476b:docs/accuracy.md failed (a copy without history)")
        path = Path(tempfile.mkdtemp()) / "accuracy.md"
        path.write_text(text.stdout)
        tmp.append(path)
    return tmp[0]


def test_half_width_is_half_the_regimes_80pct_band(tmp_path):
    mod = script()
    doc = tmp_path / "accuracy.md"
    doc.write_text("| llm | PyTorch eager | single | bf16 | 50 | 9 | 1-1 | H200 | -4.0%..+7.7% | 4.0% | - | validated |\n")
    assert mod.half_width_pct("llm | PyTorch eager | single | bf16", doc) == pytest.approx(5.85)
    with pytest.raises(SimclusterError, match="accuracy.md"):
        mod.half_width_pct("llm | PyTorch eager | PP | bf16", doc)


def registration() -> dict:
    return yaml.safe_load((BUNDLE / "registered.yaml").read_text())


def test_registration_matches_the_script_and_the_device_call():
    mod, reg = script(), registration()
    assert [r["name"] for r in reg["rows"]] == [row[0] for row in mod.ROWS]
    assert {mod.short(r["regime"]) for r in reg["rows"]} == FLAGGED   # every flagged regime has a row
    device = (BUNDLE / "device_run.sh").read_text()
    for r in reg["rows"]:
        # the regime as trust names it, from the registered host-bound flag
        assert r["regime"] == mod.regime_of(r["mode"], r["compile"], r["ac_mode"], r["predicted"]["today"]["host_bound"])
        assert r["half_width_pct"] == mod.half_width_pct(r["regime"], accuracy_at_registration())
        launches = re.findall(rf"guarded {re.escape(r['name'])}-r(\d) \d+ (.*)", device)
        assert sorted(int(k) for k, _ in launches) == list(range(1, r["processes"] + 1))
        for _, cmd in launches:
            assert f"--preset {r['preset']} --shapes {r['seq']}:{r['micro_batch']}" in cmd
            assert ("--compile" in cmd) == r["compile"]
            assert ("--ac-mode " + r["ac_mode"] in cmd) == (r["ac_mode"] != "none")
            assert ("$pp" in cmd) == (r["mode"] == "pp-1f1b")


def test_every_registered_seq_is_new_to_calibration():
    """No other bundle times any of the set's sequence lengths (so every (preset, seq, micro-batch) is new), but the
    sets registered after it ran (conftest.LATER_SETS_S44: they may name its seqs)."""
    seqs = {r["seq"] for r in registration()["rows"]}
    assert seqs_named_elsewhere(BUNDLE, seqs, exempt={b: seqs for b in LATER_SETS_S44}) == []


def _doc(reg: dict, step_s: float, **change) -> str:
    pp = reg["mode"] == "pp-1f1b"
    shape = {"seq": reg["seq"], "micro_batch": reg["micro_batch"], "status": "ok", "median_step_s": step_s}
    doc = {"tool": "llm-step", "format": 1, "mode": "pp" if pp else "single", "world_size": 2 if pp else 1,
           "model": {"preset": reg["preset"]}, "shapes": [shape | ({"microbatches": 4} if pp else {})]}
    if reg["compile"]:
        doc["compile"] = {"backend": "inductor"}
    if reg["ac_mode"] != "none":
        doc["ac_mode"] = reg["ac_mode"]
    if pp:
        doc["pipeline"] = {"schedule": "Schedule1F1B", "stages": 2, "microbatches": 4}
    return "W1130 a warning line\n" + json.dumps(doc | change)


ERROR = {"single": 0.02, "single+compile": -0.05, "single+ckpt-every2": 0.09, "single+sac-op": -0.10,
         "single+host-bound": 0.2, "PP": 0.01}   # predicted / measured - 1 of the synthetic runs


@pytest.fixture
def ran(tmp_path):
    """A copy of the bundle with every registered process run at ERROR[regime] (the tmp root's calibration/)."""
    bundle = tmp_path / eager_today.TODAY_BUNDLE
    bundle.mkdir(parents=True)
    shutil.copy(BUNDLE / "registered.yaml", bundle)
    (bundle / "runs").mkdir()
    mod = script()
    for r in registration()["rows"]:
        step = r["predicted"]["today"]["step_ms"] / 1e3 / (1 + ERROR[mod.short(r["regime"])])
        for k in range(1, r["processes"] + 1):
            (bundle / "runs" / f"{r['name']}-r{k}.json").write_text(_doc(r, step))
    return tmp_path, bundle


def test_a_synthetic_run_enters_each_regime_band_at_its_registered_prediction(ran, monkeypatch):
    root, bundle = ran
    monkeypatch.setattr(step_sets, "ROOT", root)   # all_held_out_rows: the list entry trust/build reads
    rows = [r for r in step_sets.all_held_out_rows() if r["bundle"] == bundle.name]
    reg = {r["name"]: r for r in registration()["rows"]}
    assert len(rows) == len(reg)
    res = eager_residuals(rows)
    for row, r in zip(rows, res, strict=True):
        want = next(x for x in reg.values() if x["regime"] == row["regime"] and x["preset"] in row["label"]
                    and f"seq {x['seq']} " in row["label"])
        assert r.regime == want["regime"] and r.source == bundle.name
        assert row["predicted_s"] == pytest.approx(want["predicted"]["today"]["step_ms"] / 1e3)
        assert r.rho == pytest.approx(1 / (1 + ERROR[want["regime"].split(" | ")[2]]))   # measured / registered
        today = eager_today.predict(want["preset"], want["seq"], want["micro_batch"], want["mode"], want["compile"],
                                    want["ac_mode"], want["microbatches"])["step_ms"]
        assert r.moved == pytest.approx(today / want["predicted"]["today"]["step_ms"])   # trust/moved.py's ratio
        assert r.registered_at == "acb7a0cb"
    mod = script()
    verdicts = {mod.short(k): v for k, v in mod.read_out(bundle)["verdicts"].items()}
    assert verdicts["single"].startswith("band re-measured: HOLDS")            # 2% <= 5.85%
    assert verdicts["single+ckpt-every2"].startswith("band re-measured: MISSES")   # 9% > 7.65%
    assert verdicts["single+sac-op"].startswith("band re-measured: HOLDS")     # 10% <= 22.65%
    assert verdicts["single+compile"].startswith("band re-measured: HOLDS")    # 5% <= 6.15%
    assert verdicts["single+host-bound"].startswith("band re-measured: MISSES")   # 20% > 16.35%
    assert verdicts["PP"].startswith("band re-measured: HOLDS")                # 1% <= 8.25%


def test_a_process_that_ran_another_configuration_is_left_out(ran):
    _, bundle = ran
    regs = {r["name"]: r for r in registration()["rows"]}
    (bundle / "runs" / "compile-1b-r1.json").write_text(_doc(regs["compile-1b"], 0.07, compile=None))   # eager, not compiled
    (bundle / "runs" / "op-2b-r2.json").write_text("Traceback: CUDA out of memory")
    (bundle / "runs" / "pp-2b-r1.json").unlink()   # the budget guard
    rows, dropped = eager_today.read_rows(bundle)
    assert not any("1b single+compile seq 1664" in r["label"] for r in rows)
    assert any(line.startswith("compile-1b-r1.json: ran") for line in dropped)
    assert any(line.startswith("op-2b-r2.json:") for line in dropped)
    assert next(r for r in rows if "single+sac-op" in r["label"])["processes"] == 1
    out = script().read_out(bundle)
    assert out["verdicts"]["llm | PyTorch eager | PP | bf16"].startswith("INCOMPLETE: 1 of 2 rows")


def test_not_run_gives_no_rows_and_bad_registration_is_one_line(tmp_path):
    unrun = tmp_path / "unrun"   # registered, no runs/ yet
    unrun.mkdir()
    shutil.copy(BUNDLE / "registered.yaml", unrun)
    assert eager_today.read_rows(unrun) == ([], [])
    bad = tmp_path / "b"
    (bad / "runs").mkdir(parents=True)
    doc = registration()
    del doc["rows"][2]["predicted"]["today"]["step_ms"]
    (bad / "registered.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(SimclusterError, match=r"rows\[2\]"):
        eager_today.read_rows(bad)


@pytest.mark.parametrize(("key", "value"), [("half_width_pct", None), ("regime", "llm | PyTorch eager"),
                                            ("microbatches", "four"), ("ac_mode", "every:x"), ("ac_mode", "bogus")])
def test_a_bad_registered_row_is_one_line_naming_the_file_and_key(ran, key, value):
    """read_rows and the read-out: a row without half_width_pct, a regime not in trust's four parts, a non-integer
    micro-batch count or an unknown checkpointing mode is one SimclusterError line naming registered.yaml and rows[i]."""
    _, bundle = ran
    doc = registration()
    if value is None:
        del doc["rows"][3][key]
    else:
        doc["rows"][3][key] = value
    (bundle / "registered.yaml").write_text(yaml.safe_dump(doc))
    for read in (eager_today.read_rows, script().read_out):
        with pytest.raises(SimclusterError, match=r"registered\.yaml: rows\[3\]") as err:
            read(bundle)
        assert "\n" not in str(err.value)


def test_a_run_whose_model_is_not_a_mapping_is_left_out(ran):
    _, bundle = ran
    regs = {r["name"]: r for r in registration()["rows"]}
    (bundle / "runs" / "single-0.5b-r1.json").write_text(_doc(regs["single-0.5b"], 0.07, model="0.5b"))
    (bundle / "runs" / "pp-2b-r1.json").write_text(_doc(regs["pp-2b"], 0.3, pipeline="1f1b"))
    rows, dropped = eager_today.read_rows(bundle)
    assert any(line.startswith("single-0.5b-r1.json: `model`") for line in dropped)
    assert any(line.startswith("pp-2b-r1.json: `model`") for line in dropped)
    assert not any("0.5b single seq 2816" in r["label"] for r in rows)


def test_the_read_out_prints_half_widths_to_two_decimals(ran):
    _, bundle = ran
    verdicts = {script().short(k): v for k, v in script().read_out(bundle)["verdicts"].items()}
    assert verdicts["single"].endswith("half-width 5.85%)") and verdicts["single+compile"].endswith("half-width 6.15%)")
