"""Session 51's registered one-GPU lab set (calibration/h200x1-lab1x51-2026-12-01, validation/lab1x51.py): the
registration against a fresh --register at its commit, the shapes new to calibration/ on this helper's seqs, the device
script dry-run here with a stub runner (no torch on this machine) and read back, and synthetic runs through the rules
N, P, M and V (V against a synthetic 'today' and, once, against studies/eager_lab_modes.py's own reading of it)."""

from __future__ import annotations

import functools
import json
import math
import shutil
import subprocess
import sys

import pytest
import yaml
from conftest import (
    ROOT,
    fresh_register_equals,
    load_script,
    measured_llm_tokens,
    refuses_paths_a_keyless_row_and_a_foreign_registration,
    seqs_named_elsewhere,
    stub_dry_run,
)

from simcluster.errors import SimclusterError
from simcluster.trust.table import Residual

BUNDLE = ROOT / "calibration" / "h200x1-lab1x51-2026-12-01"
MY_SEQS = {608, 672, 736, 864, 928}   # lab1x51's seqs (the session's task file)
COMPILE_CKPT, SAC_OP = "llm | PyTorch eager | single+compile+ckpt | bf16", "llm | PyTorch eager | single+sac-op | bf16"


@functools.cache
def script():
    """One module for the whole file, so that a test's monkeypatch of it takes in the read-out it calls."""
    return load_script("validation/lab1x51.py")


def registered() -> dict:
    return yaml.safe_load((BUNDLE / "registered.yaml").read_text())


def run_doc(row: dict, t: float, peak_gib: float) -> dict:
    """A process's llm-step document as the runner writes this set's (mode single, one rank; part C compiled at
    --compile-scope layer with --ac-mode full, part E --ac-mode op)."""
    doc = {"tool": "llm-step", "format": 1, "mode": "single", "world_size": 1, "model": {"preset": row["preset"]},
           "ac_mode": row["ac_mode"],
           "shapes": [{"seq": row["seq"], "micro_batch": row["micro_batch"], "status": "ok", "median_step_s": t,
                       "step_times_s": [t] * 5, "max_memory_allocated_bytes": int(peak_gib * 2**30)}]}
    if row["part"] == "C":
        doc["compile"] = {"scope_flag": "layer"}
    return doc


def predicted(row: dict) -> dict:
    return row["predicted"] if row["part"] == "C" else row["predicted"]["product"]


def synthetic(tmp_path, scale: dict[str, float] | None = None, jitter=(0.01, -0.01), mem: float = 1.0, drop=()):
    """A copy of the registration (its folder named as the set's) whose processes measure the registered step x
    scale[name] x exp(jitter[k]), peak `mem` x the registered peak; `drop`: process stems not written."""
    bundle = tmp_path / BUNDLE.name
    (bundle / "runs").mkdir(parents=True)
    shutil.copy(BUNDLE / "registered.yaml", bundle / "registered.yaml")
    for row in registered()["rows"]:
        p = predicted(row)
        for k in range(1, row["processes"] + 1):
            stem = f"{row['name']}-r{k}"
            if stem not in drop:
                t = p["step_ms"] / 1e3 * (scale or {}).get(row["name"], 1.0) * math.exp(jitter[(k - 1) % len(jitter)])
                (bundle / "runs" / f"{stem}.json").write_text("log line\n" + json.dumps(run_doc(row, t, p["peak_mem_GiB"] * mem)))
    return bundle


def today(monkeypatch, rows: dict[str, dict[str, list[float]]]) -> None:
    """Today's held-out residuals as the read-out sees them: regime -> set -> signed errors (fractions)."""
    res = [Residual("llm eager", regime, src, f"r{i}", 1.0, 1 / (1 + e), "H200")
           for regime, sets in rows.items() for src, errs in sets.items() for i, e in enumerate(errs)]
    monkeypatch.setattr(script(), "existing_residuals", lambda name: res)


# today's thin rows of the two regimes (studies/eager_lab_modes.txt at 97a9edf7: compile+ckpt 5 rows / 2 sets; sac-op
# 14 rows / 8 sets), their signed errors from `python studies/eager_lab_modes.py --live`'s rows
TODAY = {COMPILE_CKPT: {"h200x2-compileac-2026-11-30": [0.009, 0.024, 0.063], "h200x2-compilefsdp-2026-11-30": [0.09, 0.131]},
         SAC_OP: {"h200x1-llm-compile2-2026-11-29": [-0.051, -0.073], "h200x1-llm-lease3-2026-11-29": [0.197],
                  "h200x1-llm-ophost2-2026-11-29": [0.047, -0.018, 0.102], "h200x1-llm-sac-2026-11-29": [-0.005, -0.119, -0.193],
                  "h200x2-eager-today-2026-11-30": [0.022], "h200x2-hostsingle-2026-11-30": [-0.023],
                  "h200x2-opcheck-2026-11-30": [0.05], "h200x2-opsplit-2026-11-30": [0.017, 0.035]}}


def test_a_fresh_register_at_the_registering_commit_equals_the_registration(tmp_path, monkeypatch):
    reg = fresh_register_equals(script(), BUNDLE, tmp_path, monkeypatch)
    assert [(r["name"], r["part"], r["preset"], r["seq"], r["micro_batch"]) for r in reg["rows"]] == list(script().SHAPES)
    assert {r["name"]: r["regime"] for r in reg["rows"]} == {"c-3b": COMPILE_CKPT, "c-0.8b": COMPILE_CKPT, "op-1b": SAC_OP,
                                                             "op-2b": SAC_OP, "op-0.8b": SAC_OP}
    assert max(predicted(r)["host_share"] for r in reg["rows"]) < 0.45   # each flag far from the 0.5 line
    assert reg["today_sets"] == {regime: sorted(sets) for regime, sets in
                                 (("single+compile+ckpt", TODAY[COMPILE_CKPT]), ("single+sac-op", TODAY[SAC_OP]))}
    assert "/work/" not in (BUNDLE / "registered.yaml").read_text()   # no absolute paths


def test_the_shapes_are_new_to_calibration_on_this_helpers_seqs():
    from simcluster.runner.llm_decoder import PRESETS

    tokens = measured_llm_tokens(BUNDLE)
    for name, _, preset, seq, mb in script().SHAPES:
        assert seq in MY_SEQS and (preset, PRESETS[preset]["layers"], seq * mb) not in tokens, name
    assert seqs_named_elsewhere(BUNDLE, {x[3] for x in script().SHAPES}) == []


STUB_RUNNER = """import json, math, os, sys, time
sys.path.insert(0, os.environ["LAB1X51_TESTS"])
from test_lab1x51_set import registered, run_doc, predicted
a = sys.argv[3:]
val = lambda k: a[a.index(k) + 1] if k in a else None
seq, mb = map(int, val("--shapes").split(":"))
row = next(r for r in registered()["rows"] if (r["preset"], r["seq"], r["micro_batch"]) == (val("--preset"), seq, mb)
           and r["ac_mode"] == val("--ac-mode") and (r["part"] == "C") == ("--compile" in a))
assert val("--mode") == "single" and val("--profile") == "0" and os.environ["CUDA_VISIBLE_DEVICES"] == "0"
assert (val("--warmup"), val("--steps")) == (("3", "5") if row["part"] == "C" else ("5", "20"))
assert row["part"] == "E" or val("--compile-scope") == "layer"
time.sleep(float(os.environ.get("LAB1X51_SLEEP", "0")))
print(json.dumps(run_doc(row, predicted(row)["step_ms"] / 1e3, predicted(row)["peak_mem_GiB"])))
"""


def dry_run(tmp_path, budget: str | None = None, sleep: str = "0") -> subprocess.CompletedProcess:
    """device_run.sh on this machine with a stub runner (python3 -m simcluster.runner.llm_step answers the registered
    row's document at its registered step after checking its flags); the packed runs unpacked into a copy of the bundle."""
    return stub_dry_run(tmp_path, BUNDLE, STUB_RUNNER, {"LAB1X51_TESTS": str(ROOT / "tests"), "LAB1X51_SLEEP": sleep}, budget)


def test_the_device_script_dry_run_runs_every_registered_process_with_the_earlier_sets_flags(tmp_path):
    done = dry_run(tmp_path)
    assert done.returncode == 0, done.stderr
    status = (tmp_path / BUNDLE.name / "runs" / "status.txt").read_text()
    names = [f"{r['name']}-r{k}" for r in registered()["rows"] for k in (1, 2)]
    assert sorted(line.split()[0] for line in status.splitlines() if " exit 0 " in line) == sorted(names), status
    out = script().read_processes(tmp_path / BUNDLE.name, registered())
    assert len(out[0]) == 10 and out[1] == [], out[1]
    assert all(abs(p["measured_s"] * 1e3 / float(p["pred"]["step_ms"]) - 1) < 1e-9 for p in out[0])
    text = (BUNDLE / "device_run.sh").read_text()
    assert "BUDGET_S=${BUDGET_S:-300}" in text and " 90 $one $compiled " in text and " 60 $one $op " in text
    # the earlier sets ran these very arguments: compileac's single variant, hb49's op rows
    assert 'common="--warmup 3 --steps 5 --profile 0 --compile --ac-mode full"' in (
        ROOT / "calibration" / "h200x2-compileac-2026-11-30" / "device_run.sh").read_text()
    assert 'step="--warmup 5 --steps 20 --profile 0"' in (ROOT / "calibration" / "h200x1-hb49-2026-12-01" / "device_run.sh").read_text()


def test_the_budget_guard_stops_launching_runs(tmp_path):
    done = dry_run(tmp_path, budget="1", sleep="1.1")
    assert done.returncode == 0, done.stderr
    status = (tmp_path / BUNDLE.name / "runs" / "status.txt").read_text()
    assert status.startswith("c-3b-r1 exit 0") and status.count("skipped: budget 1 s spent") == 9, status


def test_rows_at_their_registered_steps_lift_both_regimes(tmp_path, monkeypatch):
    today(monkeypatch, TODAY)
    v = script().read_out(synthetic(tmp_path))["verdicts"]
    assert v["M single+compile+ckpt"].startswith("0.0% mean |error| over 2 new rows"), v
    assert v["V single+compile+ckpt"].startswith("LIFTED: with these rows met (7 rows, 3 sets"), v
    assert "today thin (5 rows, 2 sets, mean |error| 6.3%" in v["V single+compile+ckpt"], v
    assert v["V single+sac-op"].startswith("LIFTED: with these rows met (17 rows, 9 sets"), v
    assert "below the 8% target" in v["N"] and v["P"].startswith("memory met"), v


def test_rows_far_off_sink_or_stay(tmp_path, monkeypatch):
    today(monkeypatch, TODAY)
    # the model 20% slow on the compiled rows (7 rows 10.1% mean |error|), 6% slow on the op rows (mean + 1 se over 8%)
    v = script().read_out(synthetic(tmp_path, {"c-3b": 1 / 1.2, "c-0.8b": 1 / 1.2, "op-1b": 1 / 1.06, "op-2b": 1 / 1.06,
                                               "op-0.8b": 1 / 1.06}, jitter=(0.0,)))["verdicts"]
    assert v["M single+compile+ckpt"].startswith("20.0% mean |error| over 2 new rows (errors +20.0%, +20.0%)"), v
    assert v["V single+compile+ckpt"].startswith("SINKS: with these rows NOT met (7 rows, 3 sets"), v
    assert v["V single+sac-op"].startswith("STAYS: with these rows thin (17 rows"), v
    assert "mean + 1 se" in v["V single+sac-op"], v


def test_a_set_listed_after_the_registration_is_counted_apart(tmp_path, monkeypatch):
    today(monkeypatch, {COMPILE_CKPT: TODAY[COMPILE_CKPT] | {"h200x1-later-2026-12-02": [0.5, 0.5]}, SAC_OP: TODAY[SAC_OP]})
    v = script().read_out(synthetic(tmp_path))["verdicts"]
    assert v["V single+compile+ckpt"].startswith("LIFTED: with these rows met (7 rows, 3 sets"), v
    assert v["V single+compile+ckpt later"] == "not counted (listed after this registration): h200x1-later-2026-12-02", v
    assert "V single+sac-op later" not in v


def test_the_verdict_is_studies_eager_lab_modes_reading(monkeypatch):
    """V's figures are the study's (its --live path) on the same residuals."""
    sys.path.insert(0, str(ROOT / "studies"))
    import eager_lab_modes

    from simcluster.trust import build

    res = [Residual("llm eager", regime, src, f"r{i}", 1.0, 1 / (1 + e), "H200")
           for regime, sets in TODAY.items() for src, errs in sets.items() for i, e in enumerate(errs)]
    monkeypatch.setattr(build, "eager_held_out_rows", lambda: [])
    monkeypatch.setattr(build, "eager_residuals", lambda rows: res)
    study = {m["regime"]: m for m in eager_lab_modes.modes(live=True)}
    for regime in (COMPILE_CKPT, SAC_OP):
        mine = script().verdict(res, regime, 8.0)
        assert (mine["word"], mine["rows"], mine["sets"]) == (study[regime]["met"], study[regime]["rows"], study[regime]["sets"])
        assert mine["mean"] == pytest.approx(study[regime]["mean_abs_pct"]) and mine["why"] == study[regime]["thin_why"]


def test_the_sets_own_rows_are_left_out_of_today(tmp_path, monkeypatch):
    from simcluster.trust import build

    bundle = synthetic(tmp_path)
    mine = script().new_rows(bundle)
    assert len(mine) == 5 and {r["bundle"] for r in mine} == {BUNDLE.name}
    monkeypatch.setattr(build, "eager_held_out_rows", lambda: mine)
    assert script().existing_residuals(BUNDLE.name) == []


def test_loud_processes_read_noise_and_memory_outside_the_range_is_not_met(tmp_path, monkeypatch):
    today(monkeypatch, TODAY)
    v = script().read_out(synthetic(tmp_path / "loud", jitter=(0.3, -0.3)))["verdicts"]
    assert "ABOVE the 8% target" in v["N"] and "ABOVE" in v["N C"] and "ABOVE" in v["N E"], v
    v = script().read_out(synthetic(tmp_path / "mem", mem=1.2))["verdicts"]
    assert v["P"].startswith("memory not met: max |error| 16.7% over 10 processes"), v["P"]


def test_missing_runs_bad_documents_and_bad_paths_are_one_line(tmp_path, monkeypatch, capsys):
    today(monkeypatch, TODAY)
    s = script()
    bundle = synthetic(tmp_path, drop=("c-3b-r2",))
    (bundle / "runs" / "op-1b-r2.json").write_text("Traceback ...")
    other = dict(registered()["rows"][3], seq=1024)
    (bundle / "runs" / "op-2b-r2.json").write_text(json.dumps(run_doc(other, 0.2, 30.0)))
    out = s.read_out(bundle)
    left = " ".join(out["left"])
    assert "c-3b-r2: no runs/c-3b-r2.json" in left and "op-1b-r2.json: no llm-step document" in left, left
    assert "op-2b-r2.json: ran" in left and len(out["rows"]) == 7, left
    refuses_paths_a_keyless_row_and_a_foreign_registration(s, bundle, tmp_path, capsys, ("step_ms",),
                                                           r"registered.yaml: rows: missing or bad key", "h200x1-hb49-2026-12-01")


def test_a_part_rows_bad_share_is_named_by_its_registered_yaml_index(tmp_path):
    """Cold review A51 item 11: with `parts` set, shared_flag_rows' one-line error names the row's index in
    registered.yaml (enumerated before the part filter), not its index among the part's rows."""
    from simcluster.heldout import eager_hostsingle

    doc = registered()
    first_e = next(i for i, r in enumerate(doc["rows"]) if r["part"] == "E")
    assert first_e > 0   # part C's rows come first: the two indices differ
    del doc["rows"][first_e]["predicted"][eager_hostsingle.SHIPPED]["host_share"]
    (tmp_path / "runs").mkdir()
    (tmp_path / "registered.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(SimclusterError) as err:
        eager_hostsingle.held_out_rows(tmp_path, parts=("E",))
    assert f"rows[{first_e}]: no predicted.{eager_hostsingle.SHIPPED}.host_share" in err.value.one_line()
