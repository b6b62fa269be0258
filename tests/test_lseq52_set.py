"""Session 52's registered long-sequence one-GPU set (calibration/h200x1-lseq52-2026-12-01, validation/lseq52.py): the
registration against a fresh --register at its commit, the shapes new to calibration/ on this helper's seqs, the device
script dry-run here with a stub runner (no torch on this machine) and read back, and synthetic runs through the rules
N, A, P and C."""

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

BUNDLE = ROOT / "calibration" / "h200x1-lseq52-2026-12-01"
MY_SEQS = {12288, 23552, 39936, 57344, 27648, 47104, 61440}   # lseq52's seqs and spares (the session's task file)
SINGLE = "llm | PyTorch eager | single | bf16"


@functools.cache
def script():
    return load_script("validation/lseq52.py")


def registered() -> dict:
    return yaml.safe_load((BUNDLE / "registered.yaml").read_text())


def run_doc(row: dict, t: float, peak_gib: float) -> dict:
    """A process's llm-step document as the runner writes this set's (mode single, one rank, its --ac-mode)."""
    return {"tool": "llm-step", "format": 1, "mode": "single", "world_size": 1, "model": {"preset": row["preset"]},
            "ac_mode": row["ac_mode"],
            "shapes": [{"seq": row["seq"], "micro_batch": row["micro_batch"], "status": "ok", "median_step_s": t,
                        "step_times_s": [t] * 4, "max_memory_allocated_bytes": int(peak_gib * 2**30)}]}


def synthetic(tmp_path, scale: dict[str, float] | None = None, jitter=(0.005, -0.005), mem: float = 1.0, drop=()):
    """A copy of the registration whose processes measure the registered step x scale[name] x exp(jitter[k]), peak
    `mem` x the registered peak; `drop`: process stems not written."""
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


def test_a_fresh_register_at_the_registering_commit_equals_the_registration(tmp_path, monkeypatch):
    reg = fresh_register_equals(script(), BUNDLE, tmp_path, monkeypatch)
    assert [(r["name"], r["preset"], r["seq"], r["ac_mode"]) for r in reg["rows"]] == list(script().SHAPES)
    assert {r["regime"] for r in reg["rows"]} == {SINGLE} and all(r["micro_batch"] == 1 for r in reg["rows"])
    assert max(r["predicted"]["product"]["host_share"] for r in reg["rows"]) < 0.05   # GPU-bound, far from the 0.5 line
    assert max(r["predicted"]["product"]["peak_mem_GiB"] for r in reg["rows"]) < 120   # below the H200's ~139 GiB
    band = reg["borrowed_band"]["regimes"][SINGLE]
    assert band["rows"] > 3 * band["long_rows"] > 0   # today's band: mostly short-sequence rows
    assert "/work/" not in (BUNDLE / "registered.yaml").read_text()   # no absolute paths


def test_the_one_gpu_step_at_long_sequence_is_priced_over_the_cards_memory_without_checkpointing():
    """The README's "where memory needs it": 1b at 39936 plain is predicted over the H200's memory, so it runs checkpointed."""
    from simcluster.heldout.eager import MODE_HOST
    from validation.hostsingle import predict

    assert predict("1b", 39936, 1, "none", MODE_HOST, memory=True)["peak_mem_GiB"] > 139


def test_the_shapes_are_new_to_calibration_on_this_helpers_seqs():
    from simcluster.runner.llm_decoder import PRESETS

    tokens = measured_llm_tokens(BUNDLE)
    for name, preset, seq, _ in script().SHAPES:
        assert seq in MY_SEQS and (preset, PRESETS[preset]["layers"], seq) not in tokens, name
    # fp8lease61b's device script lists GEMM shapes M:N:K (4096:12288:12288...): 12288 there is a GEMM dimension, not a seq
    gemm_shapes = {ROOT / "calibration" / "h200x1-fp8lease61-2026-12-02": {12288}}
    assert seqs_named_elsewhere(BUNDLE, {x[2] for x in script().SHAPES}, gemm_shapes) == []


STUB_RUNNER = single_stub_runner("test_lseq52_set", "2", "4")


def dry_run(tmp_path, budget: str | None = None, sleep: str = "0") -> subprocess.CompletedProcess:
    """device_run.sh on this machine with a stub runner (python3 -m simcluster.runner.llm_step answers the registered
    row's document at its registered step after checking its flags); the packed runs unpacked into a copy of the bundle."""
    return stub_dry_run(tmp_path, BUNDLE, STUB_RUNNER, {"STUB_TESTS": str(ROOT / "tests"), "STUB_SLEEP": sleep}, budget)


def test_the_device_script_dry_run_runs_every_registered_process(tmp_path):
    from validation.hostsingle import read_processes

    done = dry_run(tmp_path)
    assert done.returncode == 0, done.stderr
    status = (tmp_path / BUNDLE.name / "runs" / "status.txt").read_text()
    names = [f"{r['name']}-r{k}" for r in registered()["rows"] for k in (1, 2)]
    assert sorted(line.split()[0] for line in status.splitlines() if " exit 0 " in line) == sorted(names), status
    procs, left = read_processes(tmp_path / BUNDLE.name, registered(), ("product",))
    assert len(procs) == 12 and left == [], left
    text = (BUNDLE / "device_run.sh").read_text()
    assert "BUDGET_S=${BUDGET_S:-300}" in text and 'guarded "$name-r$r" 60 $one ' in text


def test_the_budget_guard_stops_launching_runs(tmp_path):
    done = dry_run(tmp_path, budget="1", sleep="1.1")
    assert done.returncode == 0, done.stderr
    status = (tmp_path / BUNDLE.name / "runs" / "status.txt").read_text()
    assert status.startswith("s23-0.5b-r1 exit 0") and status.count("skipped: budget 1 s spent") == 11, status


def test_rows_at_their_registered_steps_meet_with_no_trend_and_the_borrowed_band_covers_them(tmp_path):
    out = script().read_out(synthetic(tmp_path))
    v = out["verdicts"]
    assert len(out["rows"]) == 6 and out["left"] == []
    assert v["A"].startswith("MET: 0.0% mean |error| over 6 rows (target 8%); along s FLAT: sweep 0.5b 23552 -0.0%, "
                             "39936 -0.0%, 57344 -0.0%, slope +0.00 points"), v["A"]
    assert v["A"].endswith("signs by seq: s12-3b 0 s23-0.5b 0 s40-0.5b 0 s40c-1b 0 s57-0.5b 0 s57c-0.5b 0"), v["A"]
    assert "below the 8% target" in v["N"] and v["P"].startswith("memory met: max |error| 0.0% over 12 processes"), v
    c = v["C single"]
    assert c.startswith(f"JOINS {SINGLE}: 6 rows; BORROWS the short-sequence band (52 rows, 11 sources, 3 at >= 16384 "
                        "tokens: h200x2-eager-cudnnstep-2026-11-29"), c
    assert c.endswith("covers 6 of 6 new rows; NO SPLIT NEEDED on these rows"), c


def test_an_error_growing_along_the_sequence_reads_grows_and_a_wide_miss_proposes_the_split(tmp_path):
    # the model fast by 0 / 5 / 10% along the sweep (measured slower), the other rows on their registered step
    grow = {"s23-0.5b": 1.0, "s40-0.5b": 1.05, "s57-0.5b": 1.10}
    v = script().read_out(synthetic(tmp_path / "grow", grow, jitter=(0.0,)))["verdicts"]
    assert v["A"].startswith("MET: ") and "along s GROWS: sweep 0.5b 23552 +0.0%, 39936 -4.8%, 57344 -9.1%" in v["A"], v["A"]
    assert "s57-0.5b -" in v["A"], v["A"]
    # every row 15% slower than predicted: NOT MET, outside the band [0.96, 1.06] on every row: the split is proposed
    v = script().read_out(synthetic(tmp_path / "wide", dict.fromkeys([s[0] for s in script().SHAPES], 1.15)))["verdicts"]
    assert v["A"].startswith("NOT MET: 13.0% mean |error| over 6 rows") and "along s FLAT" in v["A"], v["A"]
    assert v["C single"].endswith("covers 0 of 6 new rows; SPLIT PROPOSED"), v["C single"]
    # the other way: |error| shrinking along s
    v = script().read_out(synthetic(tmp_path / "shrink", {"s23-0.5b": 1.10, "s40-0.5b": 1.05, "s57-0.5b": 1.0},
                                    jitter=(0.0,)))["verdicts"]
    assert "along s SHRINKS" in v["A"], v["A"]


def test_loud_processes_read_noise_and_memory_outside_the_range_is_not_met(tmp_path):
    v = script().read_out(synthetic(tmp_path / "loud", jitter=(0.3, -0.3)))["verdicts"]
    assert "ABOVE the 8% target" in v["N"], v
    v = script().read_out(synthetic(tmp_path / "mem", mem=1.2))["verdicts"]
    assert v["P"].startswith("memory not met: max |error| 16.7% over 12 processes"), v["P"]


def test_the_rows_enter_the_eager_readers_in_the_registered_regime(tmp_path):
    from simcluster.trust.build import eager_residuals

    rows = script().new_rows(synthetic(tmp_path))
    res = eager_residuals(rows)
    assert len(res) == 6 and {r.regime for r in res} == {SINGLE} and {r.source for r in res} == {BUNDLE.name}
    assert all(abs(r.rho - 1) < 1e-3 for r in res)
    assert [script().seq_of(r.row) for r in res] == [s[2] for s in script().SHAPES]


def test_missing_runs_bad_documents_and_bad_paths_are_one_line(tmp_path, capsys):
    s = script()
    bundle = synthetic(tmp_path, drop=("s12-3b-r2",))
    (bundle / "runs" / "s40-0.5b-r2.json").write_text("Traceback ...")
    other = dict(registered()["rows"][0], ac_mode="full")
    (bundle / "runs" / "s23-0.5b-r2.json").write_text(json.dumps(run_doc(other, 0.4, 40.0)))
    out = s.read_out(bundle)
    left = " ".join(out["left"])
    assert "s12-3b: 1 of 2 processes read" in left and "s40-0.5b-r2.json: no llm-step document" in left, left
    assert "s23-0.5b-r2.json: ran" in left and len(out["rows"]) == 6, left
    refuses_paths_a_keyless_row_and_a_foreign_registration(s, bundle, tmp_path, capsys, ("product", "step_ms"),
                                                           r"registered.yaml: rows\[0\]: missing or bad key", "h200x1-hb49-2026-12-01")
