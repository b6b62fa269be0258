"""Session 55 hfdev55: accelerate's FSDP1 and DeepSpeed ZeRO-3 around a Hugging Face Llama on one GPU against `hf-fsdp1`
and `hf-deepspeed`, plain eager against `torch-amp` (validation/hfdev55.py; calibration/h200x1-hfdev55-2026-12-01; studies/hfdev55_device.py): the registration
fresh, the read-out's rules on synthetic runs, one-line refusals, the device script's CPU dry run and its argument check."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
import yaml
from conftest import ROOT, fresh_register_equals, load_script, refused_in_one_line, seqs_named_elsewhere, wrong_bundles

BUNDLE = ROOT / "calibration" / "h200x1-hfdev55-2026-12-01"
s = load_script("validation/hfdev55.py")


def reg_rows() -> list[dict]:
    return yaml.safe_load((BUNDLE / "registered.yaml").read_text())["rows"]


def bundle_with(tmp_path, hook_s: float, fsdp_err: float, eager_err: float, quick: bool = False, drop=(), status=None):
    """A bundle whose runs/hfdev55.json puts each registered row at events = P / (1 + err) (fsdp_err or eager_err) and the
    host's issue at 20 ms for eager, 20 ms + layers x hook_s for FSDP1 and ZeRO-3 (status: theirs, when given)."""
    b = tmp_path / "bundle"
    (b / "runs").mkdir(parents=True)
    shutil.copy(BUNDLE / "registered.yaml", b / "registered.yaml")
    recs = []
    for r in reg_rows():
        key = (r["size"], r["point"], r["variant"])
        if key in drop:
            continue
        fsdp = r["variant"] != "eager"
        ev = r["p_s"] / (1 + (fsdp_err if fsdp else eager_err))
        issue = 0.02 + (r["layers"] * hook_s if fsdp else 0.0)
        recs.append({"size": r["size"], "point": r["point"], "variant": r["variant"], "layers": r["layers"],
                     "micro_batch": r["micro_batch"], "seq": r["seq"], "status": status if status and fsdp else "ok",
                     "median_events_s": ev, "median_issue_s": issue, "events_s": [ev], "peak_bytes": 2**30,
                     "issue_fwd_s": [issue / 3], "issue_bwd_s": [0.9 * issue]})
    env = {"device": "cpu" if quick else "NVIDIA H200", "torch": "2.11.0+cu130", "quick": quick}
    for name, variants in ((s.TRACE, ("eager", "fsdp1")), (s.TRACE_Z3, ("zero3",))):
        mine = [r for r in recs if r["variant"] in variants]
        (b / "runs" / name).write_text(json.dumps({"set": "hfdev55", "env": env, "records": mine}))
    return b


def test_the_registration_is_fresh(tmp_path, monkeypatch):
    """--register writes registered.yaml byte for byte at its commit (today's model), never over it."""
    from simcluster.heldout.registration import switched_off
    from simcluster.llm import framework, hf_memory

    for name in ("hf-fsdp1", "hf-deepspeed", "hf-deepspeed-overlap"):   # registered before session 57's memory terms
        monkeypatch.setitem(framework.FRAMEWORKS, name, switched_off(framework.FRAMEWORKS[name], hf_memory.SWITCHES))
    fresh_register_equals(s, BUNDLE, tmp_path, monkeypatch, "commit")


def test_the_registered_rows_are_the_grid_and_the_frameworks_the_variants():
    rows = reg_rows()
    assert len(rows) == 18 and {r["framework"] for r in rows if r["variant"] == "eager"} == {"torch-amp"}
    assert {r["framework"] for r in rows if r["variant"] == "fsdp1"} == {"hf-fsdp1"}
    assert {r["framework"] for r in rows if r["variant"] == "zero3"} == {"hf-deepspeed"}
    assert all(r["p_s"] == r["p_gpu_s"] for r in rows if r["variant"] != "eager")      # the HF frameworks price no host
    assert all(r["p_s"] >= r["p_gpu_s"] for r in rows)
    assert "/work" not in (BUNDLE / "registered.yaml").read_text()                       # no absolute paths


def test_the_sets_seqs_are_new_to_calibration():
    # hfmem57 (session 57, development of the memory terms, after this set's read) re-ran this set's own points
    again = {ROOT / "calibration" / "h200x1-hfmem57-2026-12-02": {seq for _, seq in s.POINTS.values()}}
    assert seqs_named_elsewhere(BUNDLE, {seq for _, seq in s.POINTS.values()}, again) == []


@pytest.mark.parametrize("hook, fsdp, eager, want", [
    (300e-6, -0.5, -0.3, ("REAL", "OFF", "OFF")), (10e-6, 0.0, 0.05, ("NEGLIGIBLE", "HOLDS", "HOLDS")),
    (50e-6, 0.08, -0.12, ("SMALL", "HOLDS", "OFF"))])
def test_the_rules_on_synthetic_runs(tmp_path, capsys, hook, fsdp, eager, want):
    assert s.main([str(bundle_with(tmp_path, hook, fsdp, eager))]) == 0
    out = capsys.readouterr().out
    for key, verdict in zip(("HOOK", "PRICE", "EAGER"), want, strict=True):
        assert f"RULE {key}: {verdict} " in out, out
    assert f"RULE HOOK-Z3: {want[0]} " in out and f"RULE PRICE-Z3: {want[1]} " in out
    assert f"median {1e6 * hook:.0f} us a layer" in out
    third = 1e6 * hook / 3   # the synthetic split: a third of the excess in the forward, 0.9 - 1/3 in the backward, 0.1 in the step
    assert f"(forward / backward / step {third:.0f} / {1e6 * hook * (0.9 - 1 / 3):.0f} / {1e6 * hook * 0.1:.0f} us)" in out


def test_the_read_out_refuses_a_quick_run_a_missing_or_failed_record_in_one_line(tmp_path, capsys):
    assert s.main([str(bundle_with(tmp_path / "q", 0, 0, 0, quick=True))]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "dry run" in err
    assert s.main([str(bundle_with(tmp_path / "m", 0, 0, 0, drop=(("s0.3b", "mb4", "fsdp1"),)))]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "size s0.3b point mb4 variant fsdp1: no record" in err
    assert s.main([str(bundle_with(tmp_path / "f", 0, 0, 0, status="failed: OutOfMemoryError"))]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "status 'failed: OutOfMemoryError'" in err


def test_the_read_out_on_a_wrong_or_empty_bundle_is_one_line_naming_the_file(tmp_path, capsys):
    empty, other, keyless = wrong_bundles(tmp_path, "moe54", "hfdev55")
    (keyless / "runs" / s.TRACE).write_text(json.dumps({"env": {}, "records": []}))
    refused_in_one_line(s.main, capsys, tmp_path, ((empty, f"{empty}/registered.yaml: missing"), (other, "set 'moe54', expected 'hfdev55'"),
                                                   (keyless, "expected the 18 of SIZES x POINTS x VARIANTS")))


def test_zero3_not_run_reads_not_run_and_the_rest_is_read(tmp_path, capsys):
    """No deepspeed on the device (the carried wheels missing): the zero3 rows are skipped, the two Z3 rules NOT RUN."""
    b = bundle_with(tmp_path, 300e-6, -0.5, -0.3)
    doc = json.loads((b / "runs" / s.TRACE_Z3).read_text())
    for r in doc["records"]:
        r["status"] = "skipped: no deepspeed (No module named 'deepspeed')"
    (b / "runs" / s.TRACE_Z3).write_text(json.dumps(doc))
    assert s.main([str(b)]) == 0
    out = capsys.readouterr().out
    assert "RULE HOOK-Z3: NOT RUN (" in out and "RULE PRICE-Z3: NOT RUN (" in out and "no deepspeed" in out
    assert "RULE HOOK: REAL " in out and "RULE PRICE: OFF " in out and "RULE EAGER: OFF " in out
    (b / "runs" / s.TRACE_Z3).write_text("")   # the zero3 invocation killed before it printed
    assert s.main([str(b)]) == 0
    out = capsys.readouterr().out
    assert "RULE HOOK-Z3: NOT RUN (" in out and "hfdev55-z3.json: not an hfdev55 trace" in out and "RULE HOOK: REAL " in out


def test_the_device_script_refuses_unknown_arguments_in_one_line():
    for args in (["--bogus"], ["--sizes", "s9b"], ["--steps", "0"]):
        out = subprocess.run([sys.executable, "studies/hfdev55_device.py", *args], cwd=ROOT, capture_output=True, text=True)
        assert out.returncode == 2 and out.stderr.count("\n") == 1 and "Traceback" not in out.stderr, out.stderr


def test_the_device_script_runs_its_cpu_dry_run():
    """--device cpu --quick: eager runs, FSDP1 recorded as a guarded skip or run (skipped where torch is not installed:
    the project's venv has none; the device has it)."""
    pytest.importorskip("torch")
    out = subprocess.run([sys.executable, "studies/hfdev55_device.py", "--device", "cpu", "--quick", "--warmup", "1", "--steps", "2"],
                         cwd=ROOT, capture_output=True, text=True, check=True)
    doc = json.loads(out.stdout)
    assert doc["env"]["quick"] and [(r["variant"], r["status"][:2]) for r in doc["records"]][0] == ("eager", "ok")
    assert len(doc["records"]) == 2 and (doc["records"][1]["status"] == "ok" or doc["records"][1]["status"].startswith("skipped:"))
