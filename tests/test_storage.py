"""Storage: DLIO's AU formula against DLIO's own recorded numbers, the workload reader, the NVMe and
loader model (seed 001's behaviour), max-accelerators, and validation against real DLIO runs."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import ROOT

from simcluster.cards import load_nvme
from simcluster.cli import main
from simcluster.storage import dlio_workload, loader
from simcluster.storage.report import qd_stats, throughput_stats
from simcluster.traces import dlio

LOCAL = ROOT / "calibration" / "local-2026-11-22"
WORKLOADS = ROOT / "scenarios" / "workloads"
MICRON = ROOT / "models" / "nvme" / "micron-9400-pro-7.68tb.yaml"
DLIO_RUNS = sorted(p for p in (LOCAL / "dlio").glob("unet3d_h100-*acc") if (p / "output" / "summary.json").is_file())


@pytest.mark.parametrize("run", DLIO_RUNS, ids=lambda p: p.name)
def test_au_formula_matches_dlio_own_output(run):
    """Recompute each block's AU from the per-step lists DLIO recorded; it must equal DLIO's own."""
    batch = 7
    for block in dlio.parse_output(run / "output" / "0_output.json"):
        wall = len(block.compute_s) * batch / block.throughput_samples_per_s  # DLIO: steps x batch / wall
        assert loader.dlio_au_percent(block.compute_s, block.proc_s, wall) == pytest.approx(block.au_percent, rel=1e-9)
    summary = dlio.parse_summary(run / "output" / "summary.json")
    assert summary.accelerators == int(run.name.split("-")[-1].removesuffix("acc"))


def test_workload_reader_reads_mlperf_configs():
    w = dlio_workload.load(WORKLOADS / "unet3d_v100.yaml")
    assert (w.batch_size, w.computation_time_s, w.read_threads, w.au_threshold) == (4, 1.3604, 4, 0.9)
    assert w.record_bytes == 146600628


@pytest.mark.parametrize("path", sorted(WORKLOADS.glob("*.yaml")), ids=lambda p: p.name)
def test_every_mlperf_workload_reads_and_runs(path):
    """unet3d, resnet50 and cosmoflow for A100/H100 (and unet3d V100): read as DLIO reads them, and a
    short simulation on a Micron card gives an AU in (0, 100]."""
    w = dlio_workload.load(path)
    assert w.batch_size >= 1 and w.computation_time_s > 0 and 0 < w.au_threshold <= 1
    nvme, _ = load_nvme(MICRON)
    r = loader.simulate(w, nvme, 2, 1, loader.LoaderConfig(io_size=4 << 20, steps=4))
    assert 0 < r.au_percent <= 100 and 0 < r.dlio_au_percent <= 100 + 1e-9 and r.throughput_MiB_per_s > 0


@pytest.mark.parametrize("edit,expect", [("batch_size: 4", "batch_sise: 4"), ("computation_time: 1.3604", "computation_time: fast")])
def test_bad_workload_is_one_line(tmp_path, capsys, edit, expect):
    bad = tmp_path / "w.yaml"
    bad.write_text((WORKLOADS / "unet3d_v100.yaml").read_text().replace(edit, expect))
    assert main(["storage", "simulate", "--workload", str(bad), "--nvme", str(MICRON)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "w.yaml:" in err and expect.split(":")[0].split()[-1] in err


@pytest.mark.parametrize("args,expect", [(["--accelerators", "0"], "1 to 4096 accelerators"),
                                         (["--drives", "0"], "1 to 256 drives"), (["--steps", "1"], "AU needs >= 2")])
def test_bad_simulation_sizes_are_one_line(capsys, args, expect):
    code = main(["storage", "simulate", "--workload", str(WORKLOADS / "unet3d_h100.yaml"), "--nvme", str(MICRON), *args])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and expect in err


def _seed001(accelerators: int, steps: int, io_size: int):
    w = dlio_workload.load(WORKLOADS / "unet3d_v100.yaml")
    nvme, _ = load_nvme(MICRON)
    config = loader.LoaderConfig(io_size=io_size, steps=steps, thread_read_Bps=THREAD_RATE)
    return loader.simulate(w, nvme, accelerators, 1, config, seed=1)


# One loader thread's intake: the warm-cache DLIO run on this project's machine (1 read thread, compute 0),
# the only measurement there is; seed 001's host is not described. About 617 MB/s.
THREAD_RATE = dlio.parse_summary(next((LOCAL / "dlio-warm").glob("*/output/summary.json"))).io_MiB_per_s * 2**20


def test_seed001_one_accelerator_is_light_and_shallow():
    r = _seed001(1, 10, 256 * 1024)
    q, t = qd_stats(r), throughput_stats(r)
    assert q["qd_max"] <= 10                          # seed: QD never above 10
    assert q["qd0_share"] + q["qd1_share"] > 0.5       # seed: ~50% at QD 0, ~50% at QD 1
    assert t["p50_Bps"] < 600e6 and t["max_Bps"] > 1000e6  # seed: mostly 0-600 MB/s, ~1,600 MB/s peaks
    assert r.au_percent > 90


def test_seed001_fifteen_accelerators_saturate_the_drive():
    r = _seed001(15, 16, 2**20)
    q, t = qd_stats(r), throughput_stats(r)
    assert t["max_Bps"] > 0.95 * 7000e6                 # reaches the device maximum
    assert 0.6 * 7000e6 < t["mean_Bps"] < 0.9 * 7000e6     # seed: mean 15-20% below the maximum
    assert q["qd_max"] > 60


def test_max_accelerators_json(capsys):
    assert main(["storage", "max-accelerators", "--workload", str(WORKLOADS / "unet3d_h100.yaml"), "--accelerator", "h100",
                 "--nvme", str(MICRON), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"accelerators", "throughput_Bps", "au_percent"} <= set(out)
    assert out["accelerators"] >= 1 and out["au_percent"] >= 90
    assert out["throughput_Bps"] > 1e8 and all(t["throughput_Bps"] > 0 for t in out["tried"])   # SI: bytes/s, not MiB/s
    more = [t for t in out["tried"] if t["accelerators"] == out["accelerators"] + 1]
    assert not more or more[0]["au_percent"] < 90


def test_more_drives_more_accelerators(capsys):
    found = []
    for drives in (1, 2):
        assert main(["storage", "max-accelerators", "--workload", str(WORKLOADS / "unet3d_h100.yaml"),
                     "--nvme", str(MICRON), "--drives", str(drives), "--json"]) == 0
        found.append(json.loads(capsys.readouterr().out)["accelerators"])
    assert found[1] > found[0]


def test_nvme_iops_and_bandwidth_ceilings():
    nvme, _ = load_nvme(MICRON)
    assert nvme.iops_ceiling == pytest.approx(1.6e6, rel=0.01)
    assert nvme.bandwidth_Bps == pytest.approx(7e9)
    assert np.isfinite(nvme.sigma)


def test_real_dlio_runs_predicted_from_separate_calibration():
    """validation/storage_validation.py: disk card from fio, loader thread rate from a separate cold-cache
    calibration run; the three validation runs (1, 2, 4 accelerators) were not used. Measured errors (issue 42 model:
    DLIO v1.0's PyTorch prefetch factor ceil(prefetch_size / threads) = 1 batch per thread where the old model held 2,
    the first load excluded as DLIO excludes it): throughput -25.6%, -17.1%, -1.8%; AU -23.9, -11.9, -5.4 points
    (the old model: -6.8%, -13.9%, -0.5%). Bounds: 30% and 25 points."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, str(ROOT / "validation" / "storage_validation.py")], capture_output=True, text=True,
                         check=True).stdout
    rows = [line.split() for line in out.splitlines() if line.strip().startswith("unet3d_h100-")]
    assert len(rows) == 3
    for row in rows:
        assert abs(float(row[3])) <= 25.0 and abs(float(row[6].rstrip("%"))) <= 30.0, row


@pytest.mark.slow
def test_stall_per_step_agrees_with_au():
    """The stall is what a step takes beyond its compute, the barrier's wait for slower ranks' batches included, so the
    steady-state compute share compute / (compute + stall) sits above DLIO's AU (which also counts the first load);
    the old metric (own batch wait only) gave 88% beside an AU of 48% at 16 accelerators on 4 drives."""
    w = dlio_workload.load(WORKLOADS / "unet3d_h100.yaml")
    nvme, _ = load_nvme(MICRON)
    for drives in (1, 4):
        r = loader.simulate(w, nvme, 16, drives, loader.LoaderConfig(io_size=2**20, steps=16), seed=0)
        share = 100 * w.computation_time_s / (w.computation_time_s + r.stall_per_step_s)
        # AU = share x (n - 1) S / ((n - 1) S + first load): at 16 steps the first load (every rank's prefetch at once)
        # keeps the ratio below 1.4; the old metric's 88 / 48 = 1.83 fails it
        assert r.au_percent <= share <= 1.4 * r.au_percent, (drives, r.au_percent, share)
