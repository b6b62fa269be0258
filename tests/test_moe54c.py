"""Session 54 moe54c: Megatron-Core's own MoE layer at AWS's Qwen3-30B-A3B per-rank shapes on one GPU beside moe54's
plain-torch layer (studies/moe54c_device.py; validation/moe54c.py; calibration/h200x1-moe54c-2026-12-01): the
registration fresh, the rules on synthetic runs, one-line refusals, the device script's CPU dry run."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml
from conftest import ROOT, cpu_dry_run, fresh_register_equals, load_script, refused_in_one_line, wrong_bundles

BUNDLE = ROOT / "calibration" / "h200x1-moe54c-2026-12-01"
s = load_script("validation/moe54c.py")


def reg_rows() -> list[dict]:
    return yaml.safe_load((BUNDLE / "registered.yaml").read_text())["rows"]


def bundle_with(tmp_path, ratio: float, torch_scale: float = 1.0, kernel_share: float = 0.3, quick: bool = False,
                drop: tuple = (), price_scale: float | None = None) -> object:
    """A bundle whose runs/moe54c.json puts each registered row's torch events at torch_scale x moe54's events, Megatron's
    at ratio x those (or at price_scale x p_local where given), kernels at kernel_share x events (other passes 1 ms)."""
    b = tmp_path / "bundle"
    (b / "runs").mkdir(parents=True)
    shutil.copy(BUNDLE / "registered.yaml", b / "registered.yaml")
    recs = {(i, c, p, k): {"impl": i, "cell": c, "pass": p, "clock": k, "time_s": 1e-3, "samples": [1e-3], "n_kernels": 100,
                           "gemm_s": 5e-4} for i in s.IMPLS for c in s.CELLS for p in s.PASSES for k in ("events", "kernels")}
    for r in reg_rows():
        et = torch_scale * r["moe54_events_s"]
        em = ratio * et if price_scale is None else price_scale * r["p_local_s"]
        for impl, ev in (("torch", et), ("mcore", em)):
            recs[(impl, r["cell"], r["pass"], "events")]["time_s"] = ev
            recs[(impl, r["cell"], r["pass"], "kernels")]["time_s"] = kernel_share * ev
    for key in drop:
        del recs[key]
    doc = {"device": {"name": "NVIDIA H200", "torch": "2.11.0+cu130"}, "quick": quick, "mcore": "0.14.0",
           "records": list(recs.values())}
    (b / "runs" / s.TRACE).write_text(json.dumps(doc))
    return b


def test_the_registration_is_fresh(tmp_path, monkeypatch):
    """--register writes registered.yaml byte for byte at its commit (today's model), never over it."""
    fresh_register_equals(s, BUNDLE, tmp_path, monkeypatch, "commit")


def test_the_registered_rows_carry_moe54b_figures():
    """c = moe_sync's 147.2 us; the what-if at c and at moe54b's c' = 187.8 us gives moe54b's AWS means (38.2% / 19.0%,
    llm-findings 'Session 54: moe54b'); the bridge figures are moe54's measured events; no absolute paths."""
    rows = reg_rows()
    assert [r["row"] for r in rows] == list(range(6)) and all(round(1e6 * r["c_s"], 1) == 147.2 for r in rows)
    assert round(s.whatif(rows, 147.2e-6)[0], 1) == 38.2 and round(s.whatif(rows, 187.8e-6)[0], 1) == 19.0
    assert [r["n_calls"] for r in rows] == [60, 60, 45, 60, 60, 45]
    assert all(9e-3 < r["moe54_events_s"] < 15e-3 and r["p_local_compute_s"] < r["p_local_s"] for r in rows)
    assert "/work" not in (BUNDLE / "registered.yaml").read_text()


@pytest.mark.parametrize("ratio, cs, term", [(1.0, "AT C", "NARROWS"), (0.7, "BELOW C", "SHORT"), (1.4, "ABOVE C", "CLOSES"),
                                             (1.25, "ABOVE C", "NARROWS"), (2.0, "FAR ABOVE C", "CLOSES"),
                                             (3.0, "FAR ABOVE C", "OVERSHOOTS")])
def test_the_rules_on_synthetic_runs(tmp_path, capsys, ratio, cs, term):
    assert s.main([str(bundle_with(tmp_path, ratio))]) == 0
    out = capsys.readouterr().out
    assert f"RULE CS: {cs} (r {ratio:.3f}" in out and f"RULE TERM: {term} " in out and "RULE BRIDGE: REPEATS (median torch events / moe54's 1.000)" in out


def test_cs_undecided_when_not_host_bound_and_the_bridge_drifts(tmp_path, capsys):
    assert s.main([str(bundle_with(tmp_path, 1.4, torch_scale=1.3, kernel_share=0.9))]) == 0
    out = capsys.readouterr().out
    assert "RULE CS: UNDECIDED (not host-bound: ABOVE C if read anyway)" in out and "RULE BRIDGE: DRIFTS" in out


def test_price_holds_at_the_local_spec_price_and_is_off_far_from_it(tmp_path, capsys):
    assert s.main([str(bundle_with(tmp_path / "a", 1.0, price_scale=1.0))]) == 0
    assert "RULE PRICE: HOLDS (mean |p_local / mcore events - 1| 0.0%" in capsys.readouterr().out
    assert s.main([str(bundle_with(tmp_path / "b", 1.0, price_scale=1.5))]) == 0
    assert "RULE PRICE: OFF (mean |p_local / mcore events - 1| 33.3%, signed -33.3%" in capsys.readouterr().out


def test_the_read_out_refuses_a_quick_run_a_missing_record_or_a_failed_cell_in_one_line(tmp_path, capsys):
    assert s.main([str(bundle_with(tmp_path / "q", 1.0, quick=True))]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "a --quick dry run" in err
    b = bundle_with(tmp_path / "m", 1.0, drop=tuple(("mcore", "ep16-mb1", p, c) for p in s.PASSES for c in ("events", "kernels")))
    doc = json.loads((b / "runs" / s.TRACE).read_text())
    doc["records"].append({"impl": "mcore", "cell": "ep16-mb1", "error": "OutOfMemoryError: CUDA out of memory"})
    (b / "runs" / s.TRACE).write_text(json.dumps(doc))
    assert s.main([str(b)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "impl mcore cell ep16-mb1 pass fwd clock events (failed: OutOfMemoryError" in err


def test_the_read_out_on_a_wrong_or_empty_bundle_is_one_line_naming_the_file(tmp_path, capsys):
    empty, other, keyless = wrong_bundles(tmp_path, "moe54", "moe54c")
    (keyless / "runs" / s.TRACE).write_text(json.dumps({"device": {}, "quick": False, "records": []}))
    refused_in_one_line(s.main, capsys, tmp_path, ((empty, f"{empty}/registered.yaml: missing"), (other, "set 'moe54', expected 'moe54c'"),
                         (keyless, "no positive time_s for impl mcore cell ep16-mb4")))


def test_the_device_script_runs_its_cpu_dry_run():
    """studies/moe54c_device.py --device cpu --quick on one cell: the torch layer's passes in both clocks, and Megatron's
    where megatron-core imports (skipped where torch is not installed: the project's venv has none; the device has it)."""
    doc = cpu_dry_run("studies/moe54c_device.py", "--cells", "ep32-mb1")
    impls = ("mcore", "torch") if not str(doc["mcore"]).startswith("not run") else ("torch",)
    assert doc["quick"] and {(r["impl"], r["cell"], r["pass"], r["clock"]) for r in doc["records"]} == {
        (i, "ep32-mb1", p, c) for i in impls for p in ("fwd", "fwdbwd", "recompute") for c in ("events", "kernels")}
