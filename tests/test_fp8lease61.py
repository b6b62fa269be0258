"""fp8lease61 (issue 44, session 61): one H200 lease that re-ran the card's fp8 trace and the GPT-3 fp8 layer of
fp8layer60, and (fp8lease61b) the layer's GEMMs steady after 5 s and 90 s of preheat. These tests pin the reading
(calibration/h200x1-fp8lease61-2026-12-02/README.md, docs/models/gpu.md) to the committed traces: the fp8 rate is the
part's (lease and thermal history move it < 1%), the registered shape-transfer check fails, the card's error against the
steady GEMMs is a shape error, the op-by-op times of fp8layer60 ran in the power cap's lag, and the layer in sequence
beats its ops with the GEMMs steady."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

import pytest
from conftest import ROOT, load_script

BUNDLE = ROOT / "calibration" / "h200x1-fp8lease61-2026-12-02"


@pytest.fixture(scope="module")
def lease():
    return load_script("studies/fp8_lease_read.py")


@pytest.fixture(scope="module")
def traces():
    from simcluster.traces import gpu_micro

    return gpu_micro.parse(BUNDLE / "runs" / "gpu-micro-fp8.json"), gpu_micro.parse(
        ROOT / "calibration/h200x1-gpu-fp8-2026-11-23/gpu-micro/gpu-micro/stdout.txt")


def test_a_second_lease_reproduces_the_cards_fp8_trace_within_a_percent(lease, traces):
    new, old = traces
    for cond in ("back-to-back", "interleaved"):
        for in_fit in (True, False):
            ratios = lease.lease_ratios(new, old, cond, in_fit)
            assert len(ratios) == (108 if in_fit else 84)
            assert abs(statistics.median(ratios) - 1) < 0.01, (cond, in_fit)
    assert abs(lease.refit_fp8(new) / lease.refit_fp8(old) - 1) < 0.005
    assert abs(lease.refit_fp8(old) - 0.5996) < 5e-4   # the refit reproduces the committed card's efficiency


def test_the_registered_check_fails_and_the_read_says_so(lease):
    text = lease.read(BUNDLE)
    assert "refitted on this lease +13.1%: FAIL (+-5%)" in text
    assert "card +13.2%" in text


def test_thermal_history_moves_fp8_gemms_under_a_percent_and_the_card_is_slow_on_steady_gpt3_gemms(lease):
    text = lease.read_b(BUNDLE)
    assert "median -0.0%" in text.splitlines()[0] and "52 / 64 C" in text
    assert "sum: steady 8955 us; op-by-op -6.1%; card +6.3%" in text
    seq = [line for line in text.splitlines() if line.startswith("B3 layer")]
    assert len(seq) == 2 and all("(sequence -" in line for line in seq)   # the layer beats its ops with the GEMMs steady
    sweep = [float(line.rsplit(") ", 1)[1].split("%")[0]) for line in text.splitlines() if line.startswith("B4 ")]
    assert len(sweep) == 5 and min(sweep) > -1.0 and max(sweep) > 9.0   # the card's sweep reads some shapes slow


def test_gemms_timed_right_after_a_lighter_op_ran_in_the_caps_lag():
    """fp8layer60's op-by-op GEMM times (the mean of this lease's runs a and b) against the same shapes steady: the GEMMs
    timed right after a memory-bound or attention op average >= 5% faster than steady; the weight gradients timed right
    after their own large data gradient (qkv, up, down: a GEMM at the cap) are within 5.5% of steady."""
    cool = json.loads((BUNDLE / "runs_b/shapes-cool.json").read_text())
    steady = {r["role"].removeprefix("gpt3-"): r["time_s"] for r in cool["gemm"]
              if r["dtype"] == "fp8" and r["condition"] == "back-to-back" and r["role"].startswith("gpt3-")}
    runs = [json.loads((BUNDLE / f"runs/fp8-layer-{r}.json").read_text())["ops"] for r in ("a", "b")]
    ops = runs[0]
    ratio = {o["name"]: (o["measured_s"] + p["measured_s"]) / 2 / steady[o["name"]] - 1
             for o, p in zip(*runs, strict=True) if o["kind"] == "gemm"}
    after_lighter = [ratio[o["name"]] for i, o in enumerate(ops) if o["kind"] == "gemm" and ops[i - 1]["kind"] != "gemm"]
    assert len(after_lighter) == 8 and statistics.mean(after_lighter) <= -0.05
    for name in ("qkv.wgrad", "up.wgrad", "down.wgrad"):
        assert ops[[o["name"] for o in ops].index(name) - 1]["name"] == name.replace("wgrad", "dgrad")
        assert abs(ratio[name]) < 0.055, name


def test_fp8lease61bs_shapes_are_the_layers_gemms():
    """device_run_b.sh's gpt3- shapes are the 12 fp8 GEMMs of fp8layer60's op list (the model's layer)."""
    script = (BUNDLE / "device_run_b.sh").read_text()
    listed = {tuple(int(v) for v in item.split(":")[:3]) + (item.split(":")[3].removeprefix("gpt3-"),)
              for line in script.splitlines() if line.startswith("S=")
              for item in line.split("=", 1)[1].replace("$S,", "").split(",") if ":gpt3-" in item}
    ops = json.loads((ROOT / "calibration/h200x1-fp8layer60-2026-12-02/ops.json").read_text())["ops"]
    assert listed == {(o["m"], o["n"], o["k"], o["name"]) for o in ops if o["kind"] == "gemm"}


def test_an_own_fp8_k_ramp_reads_the_held_out_layers_better_on_both_cards():
    r = subprocess.run([sys.executable, str(ROOT / "studies/fp8_ramp_probe.py")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    held = [float(line.split("mean |error|")[1].split("%")[0]) for line in r.stdout.splitlines() if "held-out layers" in line]
    assert len(held) == 4 and held[1] < held[0] - 1.0 and held[3] < held[2] - 1.0   # H100, H200: today, own ramp
    gpt3 = [float(line.split("mean ")[-1].rstrip("%")) for line in r.stdout.splitlines() if "GPT-3 layer" in line]
    assert len(gpt3) == 2 and 3.0 < gpt3[1] < gpt3[0]   # the own ramp leaves the GPT-3 GEMMs slow


def test_the_read_refuses_a_bundle_without_runs_in_one_line(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "studies/fp8_lease_read.py"), str(tmp_path)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and "No such file" in r.stderr and len(r.stderr.strip().splitlines()) == 1
