"""Session 54 moe54: one rank's own work in AWS's Qwen3-30B-A3B cells on one GPU (studies/moe54_device.py) against the
model's price of it (validation/moe54.py; calibration/h200x1-moe54-2026-12-01): the registration fresh, the read-out's
rules on synthetic runs, one-line refusals, the device script's CPU dry run."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml
from conftest import ROOT, cpu_dry_run, fresh_register_equals, load_script, refused_in_one_line, wrong_bundles

BUNDLE = ROOT / "calibration" / "h200x1-moe54-2026-12-01"
s = load_script("validation/moe54.py")


def reg_rows() -> list[dict]:
    return yaml.safe_load((BUNDLE / "registered.yaml").read_text())["rows"]


def bundle_with(tmp_path, d_share: float, k_share: float, quick: bool = False, drop: tuple = ()) -> object:
    """A bundle whose runs/moe54.json puts each registered row's cell and pass at events = P + d_share x G and kernels =
    P_compute + k_share x G (the other passes at 1 ms)."""
    b = tmp_path / "bundle"
    (b / "runs").mkdir(parents=True)
    shutil.copy(BUNDLE / "registered.yaml", b / "registered.yaml")
    recs = {(c, p, k): {"cell": c, "pass": p, "clock": k, "time_s": 1e-3, "samples": [1e-3], "n_kernels": 10, "gemm_s": 5e-4}
            for c in s.CELLS for p in s.PASSES for k in ("events", "kernels")}
    for r in reg_rows():
        recs[(r["cell"], r["pass"], "events")]["time_s"] = r["p_s"] + d_share * r["gap_s"]
        recs[(r["cell"], r["pass"], "kernels")]["time_s"] = r["p_compute_s"] + k_share * r["gap_s"]
    for key in drop:
        del recs[key]
    doc = {"device": {"name": "NVIDIA H200", "torch": "2.11.0+cu130"}, "quick": quick, "records": list(recs.values())}
    (b / "runs" / s.TRACE).write_text(json.dumps(doc))
    return b


def test_the_registration_is_fresh(tmp_path, monkeypatch):
    """--register writes registered.yaml byte for byte at its commit (today's model), never over it."""
    fresh_register_equals(s, BUNDLE, tmp_path, monkeypatch, "commit")


def test_the_registered_gaps_are_the_findings_figures():
    """G per row: session 53's (measured - predicted) / (micro-batches x layers a stage), llm-findings 'Session 53: moe53'
    (6.1 / 6.5 / 10.0 / 7.4 / 6.2 / 9.1 ms); P positive, its compute part at most P."""
    rows = reg_rows()
    assert [r["row"] for r in rows] == list(range(6))
    assert [round(1e3 * r["gap_s"], 1) for r in rows] == [6.1, 6.5, 10.0, 7.4, 6.2, 9.1]
    assert all(0 < r["p_compute_s"] <= r["p_s"] + 1e-12 and r["p_fwd_s"] < r["p_s"] for r in rows)
    assert "/work" not in (BUNDLE / "registered.yaml").read_text()          # no absolute paths


@pytest.mark.parametrize("d, k, side, gpu", [(0.8, 0.7, "RANK", "GPU"), (0.0, 0.0, "COMMUNICATION", "NOT GPU"),
                                             (0.35, 0.3, "SPLIT", "PART"), (0.6, 0.05, "RANK", "NOT GPU")])
def test_the_rules_on_synthetic_runs(tmp_path, capsys, d, k, side, gpu):
    assert s.main([str(bundle_with(tmp_path, d, k))]) == 0
    out = capsys.readouterr().out
    assert f"RULE SIDE: {side} " in out and f"RULE GPU: {gpu} " in out
    price = "HOLDS" if d == 0.0 else None
    if price:
        assert "RULE PRICE: HOLDS (mean |P / events - 1| 0.0%" in out


def test_price_off_when_the_model_is_far_from_the_measurement(tmp_path, capsys):
    assert s.main([str(bundle_with(tmp_path, 1.0, 0.0))]) == 0
    assert "RULE PRICE: OFF" in capsys.readouterr().out


def test_the_read_out_refuses_a_quick_run_or_a_missing_record_in_one_line(tmp_path, capsys):
    assert s.main([str(bundle_with(tmp_path / "q", 0, 0, quick=True))]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "a --quick dry run" in err
    assert s.main([str(bundle_with(tmp_path / "m", 0, 0, drop=(("ep32-mb1", "fwd", "kernels"),)))]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cell ep32-mb1 pass fwd clock kernels" in err


def test_a_failed_cell_is_named_in_the_one_line_refusal(tmp_path, capsys):
    b = bundle_with(tmp_path, 0, 0, drop=tuple(("ep16-mb1", p, c) for p in s.PASSES for c in ("events", "kernels")))
    doc = json.loads((b / "runs" / s.TRACE).read_text())
    doc["records"].append({"cell": "ep16-mb1", "error": "OutOfMemoryError: CUDA out of memory"})
    (b / "runs" / s.TRACE).write_text(json.dumps(doc))
    assert s.main([str(b)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cell ep16-mb1 pass fwd clock events (the cell failed: OutOfMemoryError" in err


def test_the_read_out_on_a_wrong_or_empty_bundle_is_one_line_naming_the_file(tmp_path, capsys):
    empty, other, keyless = wrong_bundles(tmp_path, "moeker50", "moe54")
    (keyless / "runs" / s.TRACE).write_text(json.dumps({"device": {}, "quick": False, "records": []}))
    refused_in_one_line(s.main, capsys, tmp_path, ((empty, f"{empty}/registered.yaml: missing"), (other, "set 'moeker50', expected 'moe54'"),
                         (keyless, "no positive time_s for cell ep16-mb4")))


def test_the_device_script_runs_its_cpu_dry_run():
    """studies/moe54_device.py --device cpu --quick on one cell: every pass in both clocks (skipped where torch is not
    installed: the project's venv has none; the device has it)."""
    doc = cpu_dry_run("studies/moe54_device.py", "--cells", "ep32-mb1")
    assert doc["quick"] and {(r["cell"], r["pass"], r["clock"]) for r in doc["records"]} == {
        ("ep32-mb1", p, c) for p in ("fwd", "fwdbwd", "recompute") for c in ("events", "kernels")}
