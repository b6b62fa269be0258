"""Storage: DLIO's AU formula against DLIO's own recorded numbers, the workload reader, the NVMe and
loader model (seed 001's behaviour), max-accelerators, and validation against real DLIO runs."""

from __future__ import annotations

import json
import types

import numpy as np
import pytest
from conftest import ROOT

from simcluster.cli import main
from simcluster.storage import accelerator_search, dlio_workload, loader
from simcluster.storage.nvme import load_nvme
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
    """unet3d, resnet50 and cosmoflow for A100/H100 (and unet3d V100, B200): read as DLIO reads them, and a
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


@pytest.mark.slow
def test_max_accelerators_json(capsys):
    assert main(["storage", "max-accelerators", "--workload", str(WORKLOADS / "unet3d_h100.yaml"), "--accelerator", "h100",
                 "--nvme", str(MICRON), "--io-size", "16MiB", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"accelerators", "throughput_Bps", "au_percent", "au_ci_percent", "limit"} <= set(out)
    assert out["accelerators"] >= 1 and out["au_percent"] >= 90
    assert out["throughput_Bps"] > 1e8 and all(t["throughput_Bps"] > 0 for t in out["tried"])   # SI: bytes/s, not MiB/s
    more = [t for t in out["tried"] if t["accelerators"] == out["accelerators"] + 1]
    assert not more or more[0]["au_percent"] < 90


@pytest.mark.slow
def test_more_drives_more_accelerators(capsys):
    found = []
    for drives in (1, 2):
        assert main(["storage", "max-accelerators", "--workload", str(WORKLOADS / "unet3d_h100.yaml"),
                     "--nvme", str(MICRON), "--drives", str(drives), "--io-size", "16MiB", "--json"]) == 0
        found.append(json.loads(capsys.readouterr().out)["accelerators"])
    assert found[1] > found[0]


def test_nvme_iops_and_bandwidth_ceilings():
    nvme, _ = load_nvme(MICRON)
    assert nvme.iops_ceiling == pytest.approx(1.6e6, rel=0.01)
    assert nvme.bandwidth_Bps == pytest.approx(7e9)
    assert np.isfinite(nvme.sigma)


def test_real_dlio_runs_predicted_from_separate_calibration():
    """studies/storage_validation.py: disk card from fio, the loader's intake rate solved through the model from a
    separate cold-cache calibration run; nothing is fitted on the three runs (1, 2, 4 accelerators), but the session-27
    fixes were found on them: development rows, not held out (docs/models/storage.md). Measured errors
    (issue 42, second pass: batches handed out in order as PyTorch does, the drive no longer counted twice in the
    intake rate): throughput -0.1%, -2.0%, +14.9%; AU -0.5, -3.1, -0.9 points (first pass: -25.6%, -17.1%, -1.8%).
    Bounds: 5% at 1 and 2 accelerators; 20% at 4, where DLIO's own rank processes take the two cores (not modelled)."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, str(ROOT / "studies" / "storage_validation.py")], capture_output=True, text=True,
                         check=True).stdout
    rows = [line.split() for line in out.splitlines() if line.strip().startswith("unet3d_h100-")]
    assert len(rows) == 3
    for row in rows:
        bound = 20.0 if row[0].endswith("4acc") else 5.0
        assert abs(float(row[3])) <= bound and abs(float(row[6].rstrip("%"))) <= bound, row


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
        assert r.au_percent <= share * (1 + 1e-9) <= 1.4 * r.au_percent, (drives, r.au_percent, share)   # equal up to rounding


# --- issue 42: steady state, the limit named, bad input ---

def _unet3d(threads: int, prefetch_size: int = 0):
    """Unet3D H100 as Micron's MLPerf Storage v1.0 submission ran it (read_threads 24, prefetch_size 0)."""
    import dataclasses

    return dataclasses.replace(dlio_workload.load(WORKLOADS / "unet3d_h100.yaml"), read_threads=threads, prefetch=prefetch_size)


def test_dlio_proc_counts_the_load_so_the_first_load_is_excluded():
    """DLIO's proc of a step runs from its load's start (0_output.json: proc[0] = load[0] + compute[0]); a short
    24-thread run's AU was 73% when the first load (every thread's first batch at once) counted."""
    nvme, _ = load_nvme(MICRON)
    r = loader.simulate(_unet3d(24), nvme, 1, 1, loader.LoaderConfig(io_size=4 << 20, steps=32))
    assert r.proc[0][0] > 1.0 > r.compute[0][0]          # the first load is inside proc[0]
    assert r.dlio_au_percent > 95


def test_steady_estimate_removes_the_prefetch_drain():
    """A lead falling by 0.1 batch a step at 100% window AU is a buffer draining: the steady AU is 90%."""
    from simcluster.storage import steady

    steps, block = 200, 16
    release = np.cumsum(np.full(steps, 1.0))
    compute = np.ones((1, steps))
    lead = np.maximum(0, 30 - 0.1 * np.arange(steps)) + 0.01 * np.sin(np.arange(steps))
    p = steady.Plan(warmup=8, block=block, max_steps=steps)
    e = steady.fixed_estimate(release, compute, lead, 1, 1, p)
    assert e.lead_slope == pytest.approx(-0.1, rel=0.02) and e.au_percent == pytest.approx(90, abs=0.3)
    flat = steady.fixed_estimate(release, compute, np.full(steps, 5.0) + 0.4 * np.sin(np.arange(steps)), 1, 1, p)
    assert flat.lead_slope == 0.0 and flat.au_percent == pytest.approx(100)      # a full buffer's jitter is no drain


@pytest.mark.slow
def test_steady_state_does_not_depend_on_run_length():
    """At 2 and 3 accelerators (the answer's edge), a run until settled and one of at least twice its steps agree within 2%."""
    nvme, _ = load_nvme(MICRON)
    w = _unet3d(24)
    for n in (2, 3):
        short = loader.simulate(w, nvme, n, 1, loader.LoaderConfig(io_size=16 << 20))
        long = loader.simulate(w, nvme, n, 1, loader.LoaderConfig(io_size=16 << 20, steps=2 * short.steps, at_least=True))
        assert long.steps >= 2 * short.steps and short.estimate.settled and long.estimate.settled
        assert long.throughput_MiB_per_s == pytest.approx(short.throughput_MiB_per_s, rel=0.02)
        assert abs(long.au_percent - short.au_percent) <= 2


@pytest.mark.slow
def test_answer_does_not_depend_on_steps(capsys):
    """max-accelerators at the default and at --steps 50 (issue 42: 0 accelerators at the default, 2 at --steps 800)."""
    found = []
    for steps in ([], ["--steps", "50"]):
        assert main(["storage", "max-accelerators", "--workload", str(WORKLOADS / "unet3d_h100.yaml"), "--accelerator", "h100",
                     "--nvme", str(MICRON), "--io-size", "16MiB", "--json", *steps]) == 0
        found.append(json.loads(capsys.readouterr().out))
    assert found[0]["accelerators"] == found[1]["accelerators"] == 2
    assert found[1]["throughput_Bps"] == pytest.approx(found[0]["throughput_Bps"], rel=0.02)
    assert found[0]["limit"] == "drive" and found[0]["au_ci_percent"] is not None


@pytest.mark.slow
def test_answer_at_800_steps_matches_the_default():
    nvme, _ = load_nvme(MICRON)
    w = _unet3d(24)
    base, _ = accelerator_search.max_accelerators(w, nvme, 1, loader.LoaderConfig(io_size=4 << 20))
    long, _ = accelerator_search.max_accelerators(w, nvme, 1, loader.LoaderConfig(io_size=4 << 20, steps=800, at_least=True))
    assert long.steps >= 800 and long.accelerators == base.accelerators
    assert long.throughput_MiB_per_s == pytest.approx(base.throughput_MiB_per_s, rel=0.02)


def test_more_loader_threads_are_never_slower():
    """Issue 42: read_threads 2 / 4 / 8 / 24 gave 2 / 2 / 1 / 0 accelerators. At 2 accelerators (the drive near its
    ceiling) the steady throughput must not fall as threads are added."""
    nvme, _ = load_nvme(MICRON)
    rates = [loader.simulate(_unet3d(t), nvme, 2, 1, loader.LoaderConfig(io_size=16 << 20)).throughput_MiB_per_s for t in (2, 4, 8, 24)]
    assert all(b >= a * 0.995 for a, b in zip(rates, rates[1:], strict=False)), rates


def test_limit_is_named():
    """Drive when its bandwidth is spent; the host CPU when few cores take the reads in; the network for remote storage."""
    nvme, _ = load_nvme(MICRON)
    w = _unet3d(8)
    assert loader.simulate(w, nvme, 3, 1, loader.LoaderConfig(io_size=16 << 20)).limit == "drive"
    cpu = loader.simulate(w, nvme, 1, 1, loader.LoaderConfig(io_size=16 << 20, thread_read_Bps=1e9, cores=2))
    assert cpu.limit == "host CPU" and cpu.au_percent < 90
    net = loader.simulate(w, nvme, 1, 1, loader.LoaderConfig(io_size=16 << 20, network_Bps=2e9))
    assert net.limit == "network" and net.au_percent < 90


def test_page_cache_share():
    """An LRU of C bytes over a reshuffled dataset of D: h = (C / D)^2 / 2 below C = D, all above."""
    w = _unet3d(4)
    data = w.num_files * w.record_bytes
    assert loader.cache_hit_share(w, None) == 0.0
    assert loader.cache_hit_share(w, 0.2 * data) == pytest.approx(0.02)
    assert loader.cache_hit_share(w, 2 * data) == 1.0


@pytest.mark.parametrize("edit,expect", [("read_threads: 4", "read_threads: 0"), ("num_files_train: 168", "num_files_train: 100000")])
def test_bad_storage_input_is_one_line(tmp_path, capsys, edit, expect):
    """Zero loader threads; a dataset (100,000 x 147 MB = 14.7 TB) larger than one 7.68 TB drive."""
    bad = tmp_path / "w.yaml"
    bad.write_text((WORKLOADS / "unet3d_h100.yaml").read_text().replace(edit, expect))
    assert main(["storage", "max-accelerators", "--workload", str(bad), "--nvme", str(MICRON)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "w.yaml" in err and ("read_threads" in err or "larger than 1 x micron" in err), err


def test_zero_depth_is_one_line(capsys):
    code = main(["storage", "simulate", "--workload", str(WORKLOADS / "unet3d_h100.yaml"), "--nvme", str(MICRON), "--depth", "0"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and "--depth 0" in err


def test_record_below_one_io_is_a_stated_limit(tmp_path, capsys):
    """A 100-byte record: one 4 KiB page read per record, said in the answer; the run ends (bounded)."""
    small = tmp_path / "w.yaml"
    small.write_text((WORKLOADS / "unet3d_h100.yaml").read_text().replace("record_length: 146600628", "record_length: 100")
                     .replace("record_length_stdev: 68341808", "record_length_stdev: 0"))
    assert main(["storage", "simulate", "--workload", str(small), "--nvme", str(MICRON), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert any("below one page" in n for n in out["notes"]) and out["au_percent"] > 90


@pytest.mark.parametrize("flag,value", [("--network", "fast"), ("--page-cache", "-5GiB")])
def test_bad_storage_flags_name_the_flag(capsys, flag, value):
    code = main(["storage", "simulate", "--workload", str(WORKLOADS / "unet3d_h100.yaml"), "--nvme", str(MICRON), f"{flag}={value}"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and f"{flag} {value}" in err


def test_batches_are_handed_to_workers_in_order():
    """PyTorch's DataLoader issues batch j to worker j % T when batch j - T x f is consumed. Handing a freed slot to
    whichever worker was idle first (the model before) let a worker start a later batch early and the batch the next
    step needs start late: local DLIO 1 accelerator, 2 threads, f = 1 was predicted at AU 66% where DLIO measured 90%."""
    import dataclasses

    nvme, _ = load_nvme(MICRON)
    w = dataclasses.replace(_unet3d(2, prefetch_size=2), record_bytes=16 * 2**20, record_stdev_bytes=7.8e6,
                            computation_time_s=0.3, num_files=400)
    starts = []
    original = loader.SampleReader.read_batch

    def read_batch(self, rank, step):
        starts.append((step, self.env.now))
        yield from original(self, rank, step)

    config = loader.LoaderConfig(io_size=4 << 20, steps=40, thread_read_Bps=211e6, cores=2)
    try:
        loader.SampleReader.read_batch = read_batch
        r = loader.simulate(w, nvme, 1, 1, config)
    finally:
        loader.SampleReader.read_batch = original
    order = [step for step, _ in sorted(starts, key=lambda s: (s[1], s[0]))]
    assert order == sorted(order)                       # batches start in their order (before: 9 before 8, ...)
    assert r.dlio_au_percent > 80


def test_steady_state_settles_on_noisy_blocks_with_longer_windows():
    """Blocks scattering by 3 AU points around a constant (38 ranks at one barrier on a saturated drive): windows of 4
    blocks never get a 95% interval within 1 point; windows of half the blocks do, at the constant."""
    from simcluster.storage import steady

    rng = np.random.default_rng(0)
    block, blocks = 16, 120
    p = steady.Plan(warmup=8, block=block, max_steps=8 + block * blocks)
    au = np.repeat(np.clip(rng.normal(0.9, 0.03, blocks), 0.5, 1.0), block)
    compute = np.full((1, 8 + block * blocks), 1.0)
    release = np.cumsum(np.concatenate([np.full(8, 1.0), 1.0 / au]))
    lead = np.full(len(release), 5.0)
    early = 8 + block * 2 * steady.BLOCKS
    assert steady.settled_estimate(release[:early], compute[:, :early], lead[:early], 1, 1, p) is None
    e = steady.settled_estimate(release, compute, lead, 1, 1, p)
    assert e is not None and e.settled and e.au_percent == pytest.approx(90, abs=1.5) and e.au_ci_percent <= 1.0


@pytest.mark.slow
def test_search_candidates_stop_once_decided():
    """A candidate far below or above the AU threshold stops as soon as two windows agree on its side; the answer's
    own run is still run until settled."""
    from simcluster.storage import steady

    block = 16
    p = steady.Plan(warmup=8, block=block, max_steps=400)
    n = 8 + 2 * steady.BLOCKS * block
    release = np.cumsum(np.concatenate([np.full(8, 1.0), np.full(n - 8, 1 / 0.6)]))
    compute, lead = np.ones((1, n)), np.full(n, 0.0)
    assert steady.decided_estimate(release, compute, lead, 1, 1, p, 90.0).au_percent == pytest.approx(60)
    assert steady.decided_estimate(release, compute, lead, 1, 1, p, 59.5) is None     # within 1 point: undecided
    nvme, _ = load_nvme(MICRON)
    best, tried = accelerator_search.max_accelerators(_unet3d(24), nvme, 1, loader.LoaderConfig(io_size=16 << 20))
    assert best.estimate.settled and any(not r.estimate.settled for r in tried if r.accelerators != best.accelerators)


@pytest.mark.slow
def test_a_search_beyond_the_simulation_bound_answers_at_least():
    """Records below one page and a workload so light that the count doubles past the bound: an answer of "at least N"
    with the bound named (before: a one-line error after minutes)."""
    nvme, _ = load_nvme(MICRON)
    import dataclasses

    w = dataclasses.replace(_unet3d(4), record_bytes=100.0, record_stdev_bytes=0.0)
    best, _ = accelerator_search.max_accelerators(w, nvme, 1, loader.LoaderConfig(io_size=4 << 20), limit=4096)
    assert best.bound.startswith(f"at least {best.accelerators} accelerators") and "simulation bound" in best.bound


def test_a_search_that_meets_the_threshold_up_to_its_limit_answers_at_least_the_limit():
    """Every doubling up to the limit passes: the answer is the limit as a lower bound, named, not a bisection past it
    (before: a traceback asking for more accelerators than the limit; the MLPerf Storage v0.5 BERT row, cold read C)."""
    nvme, _ = load_nvme(MICRON)
    best, tried = accelerator_search.max_accelerators(_unet3d(4), nvme, 1, loader.LoaderConfig(io_size=4 << 20), limit=2)
    assert best.accelerators == 2 and best.bound == "at least 2 accelerators: the search stops at its limit of 2"
    assert max(r.accelerators for r in tried) == 2


@pytest.mark.parametrize("limit", [1, 3, 100])
def test_the_search_answers_the_limit_itself_when_every_count_up_to_it_passes(monkeypatch, limit):
    """Not a power of two: the bisection goes up to the limit, never past it (cold read D: 65-100 were never tried)."""
    seen = []

    def simulate(workload, nvme, n, drives, config, seed):
        seen.append(n)
        return loader.RunResult(n, drives, 10, 100.0, 1.0, 1.0, 1.0, 0.0, estimate=types.SimpleNamespace(settled=True))

    monkeypatch.setattr(loader, "simulate", simulate)
    best, _ = accelerator_search.max_accelerators(_unet3d(4), load_nvme(MICRON)[0], 1, loader.LoaderConfig(io_size=4 << 20), limit=limit)
    assert best.accelerators == limit == max(seen) and best.bound.endswith(f"its limit of {limit}")


@pytest.mark.slow
def test_resnet50_answer_settles_and_does_not_depend_on_steps():
    """ResNet-50 H100 on one 9400 (38 ranks near the threshold, blocks scattering 3 AU points): before issue 42's
    second pass every candidate ran to the bound and the search ran out of reads; now the default and --steps 50 agree."""
    nvme, _ = load_nvme(MICRON)
    w = dlio_workload.load(WORKLOADS / "resnet50_h100.yaml")
    base, _ = accelerator_search.max_accelerators(w, nvme, 1, loader.LoaderConfig(io_size=4 << 20))
    short, _ = accelerator_search.max_accelerators(w, nvme, 1, loader.LoaderConfig(io_size=4 << 20, steps=50, at_least=True))
    assert base.estimate.settled and base.accelerators == short.accelerators
    assert short.throughput_MiB_per_s == pytest.approx(base.throughput_MiB_per_s, rel=0.02)


def test_an_nvme_card_with_an_absurd_service_time_spread_is_one_line_error(tmp_path, capsys):
    """Found by the session-27 fuzz run: sigma 1e200 overflowed exp() inside the drive model (a traceback)."""
    card = tmp_path / "drive.yaml"
    card.write_text(MICRON.read_text().replace("sigma: 0.52", "sigma: 1.0e+200"))
    assert "sigma: 0.52" in MICRON.read_text()
    code = main(["storage", "simulate", "--workload", str(WORKLOADS / "unet3d_h100.yaml"), "--nvme", str(card), "--steps", "4"])
    err = capsys.readouterr().err
    assert code == 2 and "drive.yaml:" in err and "params.sigma: expected a number from 0 to 5, got 1e+200" in err and len(err.strip().splitlines()) == 1


def test_a_workload_with_a_negative_zero_spread_runs_as_zero(tmp_path):
    """Found by the session-27 fuzz run: record_length_stdev -0.0 passed the >= 0 check, and numpy's normal() refuses a
    scale of -0.0 ("scale < 0", a traceback)."""
    path = tmp_path / "w.yaml"
    path.write_text((WORKLOADS / "unet3d_v100.yaml").read_text().replace("record_length_stdev: 68341808", "record_length_stdev: -0.0"))
    w = dlio_workload.load(path)
    assert w.record_stdev_bytes == 0.0 and str(w.record_stdev_bytes) == "0.0"
    assert main(["storage", "simulate", "--workload", str(path), "--nvme", str(MICRON), "--steps", "4", "--accelerators", "2"]) == 0
