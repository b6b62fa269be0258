"""Session 55 hfhook55: the Hugging Face hook term (simcluster/llm/hf_hooks.py, OFF) and its registered held-out set
(validation/hfhook55.py; calibration/h200x1-hfhook55-2026-12-01; studies/hfhook55_device.py): the switch moves nothing
while off, the term's composition, the registration fresh, the read-out's rules on synthetic runs, one-line refusals."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace

import pytest
import yaml
from conftest import ROOT, fresh_register_equals, load_script, refused_in_one_line, seqs_named_elsewhere, wrong_bundles

from simcluster.llm import hf_hooks, host
from simcluster.llm.framework import FRAMEWORKS
from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec

BUNDLE = ROOT / "calibration" / "h200x1-hfhook55-2026-12-01"
s = load_script("validation/hfhook55.py")
HOSTS = {"single": (30e-6, 1e-3, 2)}
MODEL, PAR, BATCH = TransformerSpec(16, 1024, 2816, 8, 8, 32000, 1288, tied_embeddings=False), ParallelSpec(zero=3), BatchSpec(2, 2)


def reg_rows() -> list[dict]:
    return yaml.safe_load((BUNDLE / "registered.yaml").read_text())["rows"]


def test_the_term_is_off_and_off_returns_the_framework_itself():
    assert not hf_hooks.is_on()
    for name in ("hf-fsdp1", "hf-deepspeed", "hf-deepspeed-overlap", "torch-amp", "megatron"):
        assert hf_hooks.priced(FRAMEWORKS[name], MODEL, PAR, BATCH, HOSTS) is FRAMEWORKS[name]


def test_switched_on_prices_the_hf_frameworks_only_and_restores_the_switch_after_an_error():
    with pytest.raises(RuntimeError), hf_hooks.switched_on():
        assert hf_hooks.is_on() and hf_hooks.priced(FRAMEWORKS["torch-amp"], MODEL, PAR, BATCH, HOSTS) is FRAMEWORKS["torch-amp"]
        raise RuntimeError
    assert not hf_hooks.is_on()


@pytest.mark.parametrize("name, h", [("hf-fsdp1", 3166e-6), ("hf-deepspeed", 13159e-6), ("hf-deepspeed-overlap", 13159e-6)])
def test_on_the_layers_host_issue_is_torch_amps_plus_h_over_the_frameworks_own_kernels(name, h):
    fw = FRAMEWORKS[name]
    with hf_hooks.switched_on():
        got = hf_hooks.priced(fw, MODEL, PAR, BATCH, HOSTS)
    k_amp = host.layer_kernels(MODEL, PAR, BATCH, FRAMEWORKS["torch-amp"])
    k_hf = host.layer_kernels(MODEL, PAR, BATCH, fw)
    assert k_amp != k_hf   # the spread is not a no-op: torch-amp's autocast casts are kernels the HF frameworks lack
    assert got.host_kernel_s * k_hf == pytest.approx(k_amp * 30e-6 + h) and got.host_step_s == 1e-3
    assert replace(got, host_kernel_s=0.0, host_step_s=0.0) == fw   # nothing else changed


def test_on_without_the_single_fit_is_a_clear_error():
    with hf_hooks.switched_on(), pytest.raises(ValueError, match="'single' host fit"):
        hf_hooks.priced(FRAMEWORKS["hf-fsdp1"], MODEL, PAR, BATCH, {"ckpt": (1e-5, 1e-3, 2)})


def test_on_moves_the_step_by_about_layers_times_h_where_the_host_bounds_it():
    """Host-bound (s0.2b, micro-batch 1, ZeRO-3): ON's step over the same with h = 0 grows by about L h (the head's and embedding's
    kernels take the same per-kernel cost: a few per cent more)."""
    on = s.predict("s0.2b", "mb1", "zero3")["p_on_s"]
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(hf_hooks.HOOK_S, "hf-deepspeed", 0.0)
        zero_h = s.predict("s0.2b", "mb1", "zero3")["p_on_s"]
    assert on - zero_h == pytest.approx(16 * 13159e-6, rel=0.05)


def bundle_with(tmp_path, on_err: float, eager_err: float, quick: bool = False, drop=(), z3_status=None):
    """A bundle whose traces put each registered wrapper row at events = P_on / (1 + on_err), each eager row at
    P / (1 + eager_err); the host's issue 20 ms for eager, 20 ms + layers x 3 ms for the wrappers."""
    b = tmp_path / "bundle"
    (b / "runs").mkdir(parents=True)
    shutil.copy(BUNDLE / "registered.yaml", b / "registered.yaml")
    recs = []
    for r in reg_rows():
        if (r["size"], r["point"], r["variant"]) in drop:
            continue
        wrap = r["variant"] != "eager"
        ev = r["p_on_s"] / (1 + on_err) if wrap else r["p_s"] / (1 + eager_err)
        issue = 0.02 + (r["layers"] * 3e-3 if wrap else 0.0)
        recs.append({"size": r["size"], "point": r["point"], "variant": r["variant"], "layers": r["layers"],
                     "micro_batch": r["micro_batch"], "seq": r["seq"], "status": (z3_status if r["variant"] == "zero3" and z3_status else "ok"),
                     "median_events_s": ev, "median_issue_s": issue, "events_s": [ev], "peak_bytes": 2**30})
    env = {"device": "cpu" if quick else "NVIDIA H200", "torch": "2.11.0+cu130", "quick": quick}
    for name, variants in ((s.TRACE, ("eager", "fsdp1")), (s.TRACE_Z3, ("zero3",))):
        (b / "runs" / name).write_text(json.dumps({"set": "hfdev55", "env": env, "records": [r for r in recs if r["variant"] in variants]}))
    return b


def test_the_registration_is_fresh(tmp_path, monkeypatch):
    """--register writes registered.yaml byte for byte at its commit (today's model, the term on and off), never over it."""
    fresh_register_equals(s, BUNDLE, tmp_path, monkeypatch, "commit")


def test_the_registered_rows_are_the_grid_and_the_term_moves_only_the_wrappers():
    rows = reg_rows()
    assert len(rows) == 18 and not hf_hooks.is_on()
    assert all(r["p_on_s"] == r["p_s"] for r in rows if r["variant"] == "eager")
    assert all(r["p_on_s"] > 2 * r["p_s"] for r in rows if r["variant"] != "eager")   # the hooks dominate these shapes
    assert "/work" not in (BUNDLE / "registered.yaml").read_text()


def test_the_sets_seqs_and_sizes_are_new():
    dev = load_script("studies/hfdev55_device.py")
    seqs = {seq for _, seq in s.POINTS.values()}   # the repeat on a second lease (hfhook55r) is this set's own: exempt
    # hfmemh57 (session 57) measures memory at this set's shapes after its read: exempt too
    again = {ROOT / "calibration" / b: seqs for b in ("h200x1-hfhook55r-2026-12-01", "h200x1-hfmemh57-2026-12-02")}
    assert seqs_named_elsewhere(BUNDLE, seqs, again) == []
    assert not set(s.SIZES.values()) & set(dev.SIZES.values()) and not {q for _, q in s.POINTS.values()} & {q for _, q in dev.POINTS.values()}


@pytest.mark.parametrize("on_err, eager_err, want", [
    (0.05, -0.2, ("HOLDS", "HOLDS", "OFF")), (-0.2, 0.05, ("FAILS", "FAILS", "HOLDS")), (0.14, 0.0, ("HOLDS", "HOLDS", "HOLDS"))])
def test_the_rules_on_synthetic_runs(tmp_path, capsys, on_err, eager_err, want):
    assert s.main([str(bundle_with(tmp_path, on_err, eager_err))]) == 0
    out = capsys.readouterr().out
    for key, verdict in zip(("TERM", "TERM-FSDP1", "EAGER"), want, strict=True):
        assert f"RULE {key}: {verdict} " in out, out
    assert f"ON mean |error| {100 * abs(on_err):.1f}%" in out
    assert "measured hook host h median 3000 us" in out


def test_term_fails_when_on_is_close_but_not_30_points_better(tmp_path, capsys, monkeypatch):
    """Both thresholds bind: ON within 15% but OFF only a few points worse (a registration whose OFF is near) FAILS."""
    b = bundle_with(tmp_path, 0.1, 0.0)
    reg = yaml.safe_load((b / "registered.yaml").read_text())
    for r in reg["rows"]:
        r["p_s"] = r["p_on_s"] * 0.85   # OFF 15% below ON: about 13 points worse than ON's 9%
    (b / "registered.yaml").write_text(yaml.safe_dump(reg, sort_keys=False))
    assert s.main([str(b)]) == 0
    assert "RULE TERM: FAILS " in capsys.readouterr().out


def test_the_read_out_refuses_a_quick_run_a_missing_or_failed_record_in_one_line(tmp_path, capsys):
    assert s.main([str(bundle_with(tmp_path / "q", 0, 0, quick=True))]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "dry run" in err
    assert s.main([str(bundle_with(tmp_path / "m", 0, 0, drop=(("s0.7b", "mb1", "fsdp1"),)))]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "size s0.7b point mb1 variant fsdp1: no record" in err


def test_the_read_out_on_a_wrong_or_empty_bundle_is_one_line_naming_the_file(tmp_path, capsys):
    empty, other, keyless = wrong_bundles(tmp_path, "hfdev55", "hfhook55")
    (keyless / "runs" / s.TRACE).write_text(json.dumps({"env": {}, "records": []}))
    refused_in_one_line(s.main, capsys, tmp_path, ((empty, f"{empty}/registered.yaml: missing"), (other, "set 'hfdev55', expected 'hfhook55'"),
                                                   (keyless, "expected the 18 of SIZES x POINTS x VARIANTS")))


def test_zero3_not_run_reads_term_not_run_and_the_rest_is_read(tmp_path, capsys):
    assert s.main([str(bundle_with(tmp_path, 0.05, -0.2, z3_status="skipped: no deepspeed"))]) == 0
    out = capsys.readouterr().out
    assert "RULE TERM: NOT RUN (" in out and "no deepspeed" in out and "RULE TERM-FSDP1: HOLDS " in out and "RULE EAGER: OFF " in out


def test_the_device_script_sets_its_shapes_and_refuses_unknown_arguments_in_one_line():
    for args in (["--bogus"], ["--sizes", "s134m"], ["--points", "mb4"]):   # hfdev55's names are not this set's
        out = subprocess.run([sys.executable, "studies/hfhook55_device.py", *args], cwd=ROOT, capture_output=True, text=True)
        assert out.returncode == 2 and out.stderr.count("\n") == 1 and "Traceback" not in out.stderr, out.stderr
