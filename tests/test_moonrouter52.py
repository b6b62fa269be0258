"""Session 52 moonrouter52: Megatron-Core 24bad8e6's unfused router in Moonlight's recipe configuration
(studies/moonrouter52_device.py, validation/moonrouter52.py) on synthetic runs: rules R / K / H / L, the refusals, the
registration's freshness."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import ROOT, cpu_dry_run, fresh_register_equals, load_script
from test_mcrouter50 import device_document, read_synthetic, refuses_bundles

BUNDLE = ROOT / "calibration" / "h200x1-moonrouter52-2026-12-01"
SCRIPT = "validation/moonrouter52.py"
IMPLS = ("torch", "mcore-recipe", "mcore-recipe-nogroups", "mcore-mcrouter50")


def write_trace(runs: Path, mcore=2.5, torch_x=1.0, n_fwd=55.0, n_fwdbwd=98.0, host_x=5.0, name="NVIDIA H200", quick=False,
                note="0.20.0", stopped=None, drop=None, tarball=True) -> None:
    """A studies/moonrouter52_device.py output in `runs`: the torch chain at torch_x x the registered moeker50 kernels,
    the Megatron impls at mcore x them with n_fwd / n_fwdbwd kernels and host_x x their kernel seconds on the host
    (events 5 x); drop: an impl left out; tarball: runs/mcore-tarball.txt naming the registered sha256 (else absent)."""
    reg = yaml.safe_load((BUNDLE / "registered.yaml").read_text())
    ref = reg["rows"]["moeker50_kernels_us"]
    recs = []
    for impl in IMPLS:
        if impl == drop:
            continue
        x = torch_x if impl == "torch" else mcore
        for pas, n in (("fwd", n_fwd), ("fwdbwd", n_fwdbwd)):
            t = 1e-6 * ref[pas] * x
            base = {"layer": "moonlight-ep8", "tokens": 2048, "piece": "router", "pass": pas, "impl": impl}
            recs += [{**base, "clock": "events", "time_s": 5 * t, "samples": [5 * t]},
                     {**base, "clock": "kernels", "time_s": t, "samples": [t, t], "n_kernels": n, "span_s": 1.5 * t, "gemm_s": 0.2 * t},
                     {**base, "clock": "host", "time_s": host_x * t, "samples": [host_x * t]}]
    device_document(runs / "moonrouter52.json", recs, name, quick, note, stopped)
    if tarball:
        (runs / "mcore-tarball.txt").write_text(f"{reg['megatron_core']['sha256']}  .device/mcore-24bad8e6.tar.gz\n")


def read(tmp_path, **kw):
    return read_synthetic(SCRIPT, BUNDLE, write_trace, tmp_path, **kw)


@pytest.mark.parametrize("mcore, word", [(1.0, "HOLDS"), (1.29, "HOLDS"), (0.71, "HOLDS"), (1.31, "OVER"), (0.69, "UNDER"), (2.7, "OVER")])
def test_rule_r_reads_the_recipe_router_against_the_priced_seconds_on_a_30_percent_band(tmp_path, mcore, word, capsys):
    script, res = read(tmp_path, mcore=mcore)
    v = res["verdicts"]
    assert v["R"].startswith(word) and f"= {mcore:.3f}" in v["R"] and v["L"].startswith("REPEATS"), v
    script.show(res)
    out = capsys.readouterr().out
    assert [ln.split(":")[0] for ln in out.splitlines() if ln.startswith("RULE")] == ["RULE R", "RULE K", "RULE H", "RULE L"]
    assert ("not the router's GPU time" in out) == (word == "HOLDS") and "the model's host price" in out


@pytest.mark.parametrize("n_fwd, n_fwdbwd, word", [(53.0, 94.0, "HOLDS"), (56.0, 91.0, "HOLDS"), (57.0, 94.0, "DIFFERS"),
                                                   (53.0, 98.0, "DIFFERS"), (50.0, 90.0, "DIFFERS")])
def test_rule_k_holds_only_when_both_passes_lie_within_three_of_the_cpu_count(tmp_path, n_fwd, n_fwdbwd, word):
    _, res = read(tmp_path, n_fwd=n_fwd, n_fwdbwd=n_fwdbwd)
    assert res["verdicts"]["K"].startswith(word + " ("), res["verdicts"]["K"]


@pytest.mark.parametrize("host_x, word", [(5.0, "HOST-BOUND"), (1.01, "HOST-BOUND"), (1.0, "GPU-BOUND"), (0.3, "GPU-BOUND")])
def test_rule_h_compares_the_host_seconds_of_a_forward_with_its_kernel_seconds(tmp_path, host_x, word):
    _, res = read(tmp_path, host_x=host_x)
    assert res["verdicts"]["H"].startswith(word + " ("), res["verdicts"]["H"]


def test_a_drifting_lease_is_said(tmp_path):
    _, res = read(tmp_path, torch_x=1.2)
    assert res["verdicts"]["L"].startswith("DRIFTS"), res["verdicts"]


@pytest.mark.parametrize("kw, said", [({"note": "not run: ModuleNotFoundError: No module named 'megatron'"}, "No module named"),
                                      ({"drop": "mcore-recipe"}, "no kernels or host record"), ({"n_fwd": 0.0}, "no kernels"),
                                      ({"stopped": "SIGTERM after 12 records"}, "SIGTERM"), ({"tarball": False}, "not attested")])
def test_no_complete_attested_measurement_decides_nothing(tmp_path, kw, said, capsys):
    script, res = read(tmp_path, **kw)
    v = res["verdicts"]
    assert all(v[k].startswith("UNDECIDED") and said in v[k] for k in "RKH"), v
    script.show(res)
    assert capsys.readouterr().out.count("no verdict") == 3


def test_a_foreign_tarball_decides_nothing(tmp_path):
    script, _ = read_synthetic(SCRIPT, BUNDLE, write_trace, tmp_path)
    b = tmp_path / "b"   # read_synthetic's bundle
    (b / "runs" / "mcore-tarball.txt").write_text("0" * 64 + "  .device/mcore-24bad8e6.tar.gz\n")
    v = script.read_out(b)["verdicts"]
    assert v["R"].startswith("UNDECIDED (the carried tarball's sha256 0000"), v


def test_the_read_out_refuses_quick_foreign_missing_and_wrong_bundles_in_one_line(tmp_path, capsys):
    refuses_bundles(load_script(SCRIPT), BUNDLE, write_trace, "moonrouter52.json", "studies/moonrouter52_device.py",
                    "mcrouter50", "moonrouter52", tmp_path, capsys)
    s = load_script(SCRIPT)
    assert s.main([str(tmp_path / "nowhere")]) == 1 and s.main([str(BUNDLE / "registered.yaml")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all("Traceback" not in e for e in err), err


def test_the_registration_is_fresh_and_names_the_moonlight_layer_the_table_and_the_cpu_count(tmp_path, monkeypatch):
    """--register writes registered.yaml byte for byte, never over it; its prediction is the adopted column's
    moonlight-ep8 router seconds (mcrouter50's netting: moeker50's kernels where no floor clamped), at the one token count
    of all six Moonlight rows; its CPU count is moe52's recipe line at 24bad8e6; no absolute path."""
    reg = fresh_register_equals(load_script(SCRIPT), BUNDLE, tmp_path, monkeypatch, "commit")
    rows = reg["rows"]
    assert reg["tokens"] == [2048] and rows["cpu_ops"] == {"fwd": 53, "fwdbwd": 94}
    for pas in ("fwd", "fwdbwd"):
        assert rows["predicted_us"][pas] == pytest.approx(rows["moeker50_kernels_us"][pas], abs=0.02)
    assert rows["model_host_fwd_us"] == pytest.approx(147.2 + 7 * 40.0)
    assert "/work/" not in (BUNDLE / "registered.yaml").read_text()


def test_the_device_script_runs_its_cpu_dry_run():
    """studies/moonrouter52_device.py --device cpu --quick: the torch chain's records, and Megatron's three
    configurations where a megatron/core tree imports (skipped where torch is not installed: the project's venv has none)."""
    doc = cpu_dry_run("studies/moonrouter52_device.py")
    impls = {"torch"} | (set(IMPLS) - {"torch"} if not doc["mcore"].startswith("not run") else set())
    assert doc["quick"] and {(r["impl"], r["pass"], r["clock"]) for r in doc["records"]} == {
        (i, p, c) for i in impls for p in ("fwd", "fwdbwd") for c in ("events", "kernels", "host")}
