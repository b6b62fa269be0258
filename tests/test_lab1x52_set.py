"""Session 52's registered one-GPU host-bound set (calibration/h200x1-lab1x52-2026-12-01, validation/lab1x52.py): the
registration against a fresh --register at its commit, the shapes new to calibration/ on this helper's seqs, the device
script dry-run here with a stub runner (no torch on this machine) and read back, the budget guard, and synthetic runs
through the rules N, S, F, P, M and V (V against a synthetic 'today': the two regimes' rows at 48976f09)."""

from __future__ import annotations

import functools
import json
import math
import shutil
import subprocess

import yaml
from conftest import (
    ROOT,
    fresh_register_equals,
    load_script,
    measured_llm_tokens,
    refuses_paths_a_keyless_row_and_a_foreign_registration,
    seqs_named_elsewhere,
    single_stub_runner,
    stub_dry_run,
)

from simcluster.trust.table import Residual

BUNDLE = ROOT / "calibration" / "h200x1-lab1x52-2026-12-01"
MY_SEQS = {352, 608, 672, 1056, 1120}   # lab1x52's seqs (the session's task file)
OPHB, HB = "llm | PyTorch eager | single+sac-op+host-bound | bf16", "llm | PyTorch eager | single+host-bound | bf16"
# the two regimes' held-out rows at 48976f09 (trust/build.eager_residuals of eager_held_out_rows, 1 GPU): set -> errors
TODAY = {OPHB: {"h200x1-llm-lease3-2026-11-29": [0.2276], "h200x2-hostsingle-2026-11-30": [-0.1266],
                "h200x2-opcheck-2026-11-30": [0.0372], "h200x2-opsplit-2026-11-30": [-0.0633],
                "h200x1-hb49-2026-12-01": [0.0698, -0.0018, 0.0565, -0.0144]},
         HB: {"llm-eager-regimes-2026-11-28": [0.1066, -0.0298], "h200x1-llm-compile-2026-11-29": [0.0237],
              "h200x1-llm-eager5-2026-11-29": [0.1455, -0.0507, 0.2863, 0.0423], "h200x2-eager-pphost-2026-11-29": [0.0209],
              "h200x2-eager-today-2026-11-30": [0.1182], "h200x2-hostsingle-2026-11-30": [-0.1084, -0.1015],
              "h200x2-opcheck-2026-11-30": [0.0292], "h200x1-hb49-2026-12-01": [0.1113]}}


@functools.cache
def script():
    return load_script("validation/lab1x52.py")


def registered() -> dict:
    return yaml.safe_load((BUNDLE / "registered.yaml").read_text())


def run_doc(row: dict, t: float, peak_gib: float) -> dict:
    """A process's llm-step document as the runner writes this set's (mode single, one rank; ac_mode only when op)."""
    doc = {"tool": "llm-step", "format": 1, "mode": "single", "world_size": 1, "model": {"preset": row["preset"]},
           "shapes": [{"seq": row["seq"], "micro_batch": row["micro_batch"], "status": "ok", "median_step_s": t,
                       "step_times_s": [t] * 20, "max_memory_allocated_bytes": int(peak_gib * 2**30)}]}
    if row["ac_mode"] != "none":
        doc["ac_mode"] = row["ac_mode"]
    return doc


def synthetic(tmp_path, scale: dict[str, float] | None = None, jitter=(0.05, 0.0, -0.05), mem: float = 1.0, drop=()):
    """A copy of the registration whose processes measure the registered step x scale[name] x exp(jitter[k])."""
    bundle = tmp_path / BUNDLE.name
    (bundle / "runs").mkdir(parents=True)
    shutil.copy(BUNDLE / "registered.yaml", bundle / "registered.yaml")
    for row in registered()["rows"]:
        p = row["predicted"]["product"]
        for k in range(1, row["processes"] + 1):
            stem = f"{row['name']}-r{k}"
            if stem not in drop:
                t = p["step_ms"] / 1e3 * (scale or {}).get(row["name"], 1.0) * math.exp(jitter[(k - 1) % len(jitter)])
                (bundle / "runs" / f"{stem}.json").write_text("log line\n" + json.dumps(run_doc(row, t, p["peak_mem_GiB"] * mem)))
    return bundle


def today(monkeypatch, rows: dict[str, dict[str, list[float]]]) -> None:
    res = [Residual("llm eager", regime, src, f"r{i}", 1.0, 1 / (1 + e), "H200")
           for regime, sets in rows.items() for src, errs in sets.items() for i, e in enumerate(errs)]
    monkeypatch.setattr(script(), "existing_residuals", lambda name: res)


def test_a_fresh_register_at_the_registering_commit_equals_the_registration(tmp_path, monkeypatch):
    reg = fresh_register_equals(script(), BUNDLE, tmp_path, monkeypatch)
    assert [(r["name"], r["preset"], r["seq"], r["micro_batch"], r["ac_mode"]) for r in reg["rows"]] == list(script().SHAPES)
    assert {r["name"]: r["regime"] for r in reg["rows"]} == {"ophb-1b": OPHB, "ophb-2b": OPHB, "hb-0.3b": HB, "hb-1.1b": HB,
                                                             "hb-3.1b": HB}
    assert min(r["predicted"]["product"]["host_share"] for r in reg["rows"]) > 0.75   # each flag far from the 0.5 line
    assert reg["today_sets"] == {regime.split(" | ")[2]: sorted(sets) for regime, sets in TODAY.items()}
    assert reg["hb49"] == {"process_sd": 0.086, "process_dof": 10, "lease_sd": 0.065}
    readout = (ROOT / "calibration" / "h200x1-hb49-2026-12-01" / "readout.txt").read_text()
    assert "N: process sd 0.086 (10 dof)" in readout and "lease sd 0.065" in readout   # the constants are hb49's read
    assert "/work/" not in (BUNDLE / "registered.yaml").read_text()   # no absolute paths


def test_the_shapes_are_new_to_calibration_on_this_helpers_seqs():
    from simcluster.runner.llm_decoder import PRESETS

    tokens = measured_llm_tokens(BUNDLE)
    for name, preset, seq, mb, _ in script().SHAPES:
        assert seq in MY_SEQS and (preset, PRESETS[preset]["layers"], seq * mb) not in tokens, name
    assert seqs_named_elsewhere(BUNDLE, {x[2] for x in script().SHAPES}) == []


STUB_RUNNER = single_stub_runner("test_lab1x52_set", "5", "20")


def dry_run(tmp_path, budget: str | None = None, sleep: str = "0") -> subprocess.CompletedProcess:
    """device_run.sh on this machine with this set's stub runner (conftest.stub_dry_run)."""
    return stub_dry_run(tmp_path, BUNDLE, STUB_RUNNER, {"STUB_TESTS": str(ROOT / "tests"), "STUB_SLEEP": sleep}, budget)


def test_the_device_script_dry_run_runs_every_registered_process_with_hb49s_flags(tmp_path):
    from validation.hostsingle import read_processes

    done = dry_run(tmp_path)
    assert done.returncode == 0, done.stderr
    status = (tmp_path / BUNDLE.name / "runs" / "status.txt").read_text()
    names = [f"{r['name']}-r{k}" for r in registered()["rows"] for k in (1, 2, 3)]
    assert sorted(line.split()[0] for line in status.splitlines() if " exit 0 " in line) == sorted(names), status
    procs, left = read_processes(tmp_path / BUNDLE.name, registered(), ("product",))
    assert len(procs) == 15 and left == [], left
    assert all(abs(p["measured_s"] * 1e3 / p["predicted"]["product"]["step_ms"] - 1) < 1e-9 for p in procs)
    text = (BUNDLE / "device_run.sh").read_text()
    assert "BUDGET_S=${BUDGET_S:-280}" in text and " 45 $one $step " in text
    assert 'step="--warmup 5 --steps 20 --profile 0"' in (ROOT / "calibration" / "h200x1-hb49-2026-12-01" / "device_run.sh").read_text()


def test_the_budget_guard_stops_launching_runs(tmp_path):
    done = dry_run(tmp_path, budget="1", sleep="1.1")
    assert done.returncode == 0, done.stderr
    status = (tmp_path / BUNDLE.name / "runs" / "status.txt").read_text()
    assert status.startswith("ophb-1b-r1 exit 0") and status.count("skipped: budget 1 s spent") == 14, status


def test_rows_at_their_registered_steps(tmp_path, monkeypatch):
    today(monkeypatch, TODAY)
    v = script().read_out(synthetic(tmp_path))["verdicts"]
    assert v["M single+sac-op+host-bound"].startswith("0.1% mean |error| over 2 new rows"), v
    # jitter +-0.05 (sd 0.05, 2 dof per shape): a row of 3 processes with hb49's lease sd 0.065
    assert "noise floor: a row of 3 processes 5.7% (process sd 0.050, lease sd 0.065), a process 4.0%" in v["M single+host-bound"], v
    assert v["V single+sac-op+host-bound"].startswith("STAYS: with these rows thin (10 rows, 6 sets"), v
    assert "today thin (8 rows, 5 sets, mean |error| 7.5%" in v["V single+sac-op+host-bound"], v
    assert v["V single+host-bound"].startswith("NOT met -> thin: with these rows thin (16 rows, 9 sets"), v
    assert "today NOT met (13 rows, 8 sets, mean |error| 9.0%" in v["V single+host-bound"], v
    assert v["S all"].startswith("REPEATS: process sd 0.050 (10 dof) against hb49's 0.086 (10 dof)"), v
    assert v["S hb-3.1b"].startswith("REPEATS: process sd 0.050 (2 dof)"), v
    assert "below the 8% target" in v["N"] and v["P"].startswith("memory met"), v


def test_rows_off_sink_or_stay_and_quiet_or_loud_processes_differ(tmp_path, monkeypatch):
    today(monkeypatch, TODAY)
    # the model 11% slow on the op rows (SINKS over 10.1%), 4% slow on the single ones (stays NOT met over 3.5%)
    v = script().read_out(synthetic(tmp_path / "a", {"ophb-1b": 1 / 1.11, "ophb-2b": 1 / 1.11, "hb-0.3b": 1 / 1.04,
                                                     "hb-1.1b": 1 / 1.04, "hb-3.1b": 1 / 1.04}, jitter=(0.0,)))["verdicts"]
    assert v["M single+sac-op+host-bound"].startswith("11.0% mean |error| over 2 new rows (errors +11.0%, +11.0%)"), v
    assert v["V single+sac-op+host-bound"].startswith("SINKS: with these rows NOT met (10 rows"), v
    assert v["V single+host-bound"].startswith("STAYS: with these rows NOT met (16 rows"), v
    assert v["S all"].startswith("DIFFERS (SMALLER): process sd 0.000"), v
    v = script().read_out(synthetic(tmp_path / "b", jitter=(0.3, 0.0, -0.3)))["verdicts"]
    assert v["S all"].startswith("DIFFERS (LARGER): process sd 0.300"), v
    assert "ABOVE the 8% target" in v["N"], v


def test_a_set_listed_after_the_registration_is_counted_apart(tmp_path, monkeypatch):
    today(monkeypatch, {OPHB: TODAY[OPHB] | {"h200x1-later-2026-12-02": [0.5, 0.5]}, HB: TODAY[HB]})
    v = script().read_out(synthetic(tmp_path))["verdicts"]
    assert v["V single+sac-op+host-bound"].startswith("STAYS: with these rows thin (10 rows, 6 sets"), v
    assert v["V single+sac-op+host-bound later"] == "not counted (listed after this registration): h200x1-later-2026-12-02"
    assert "V single+host-bound later" not in v


def test_memory_outside_the_range_missing_runs_and_bad_paths(tmp_path, monkeypatch, capsys):
    today(monkeypatch, TODAY)
    s = script()
    v = s.read_out(synthetic(tmp_path / "mem", mem=1.2))["verdicts"]
    assert v["P"].startswith("memory not met: max |error| 16.7% over 15 processes"), v["P"]
    bundle = synthetic(tmp_path, drop=("hb-3.1b-r2", "hb-3.1b-r3"))
    (bundle / "runs" / "ophb-1b-r2.json").write_text("Traceback ...")
    out = s.read_out(bundle)
    left = " ".join(out["left"])
    assert "hb-3.1b: 1 of 3 processes read" in left and "ophb-1b-r2.json: no llm-step document" in left, left
    assert len(out["rows"]) == 12 and out["verdicts"]["S hb-3.1b"].startswith("NO DATA"), out["verdicts"]
    refuses_paths_a_keyless_row_and_a_foreign_registration(s, bundle, tmp_path, capsys, ("product", "step_ms"),
                                                           r"registered.yaml: rows\[0\]: missing or bad key", "h200x1-hb49-2026-12-01")
