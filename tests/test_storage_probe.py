"""The device probe's model side (studies/storage_pattern_probe.py): the registered ratios come from simcluster's drive,
and the pairing of phases into ratios is by setting."""

from __future__ import annotations

import json

from conftest import ROOT, load_script

probe = load_script("studies/storage_pattern_probe.py")
SET = ROOT / "calibration" / "h200x1-storage-pattern-2026-11-29"


def test_model_gives_both_patterns_the_card_when_the_link_binds():
    card = ROOT / "models" / "nvme" / "micron-9550-pro-7.68tb.yaml"
    large = probe.model_rate(card, "large", 64, 2**20)
    small = probe.model_rate(card, "small", 64, 2**20)
    assert abs(large / 10e9 - 1) < 0.02          # the card's 10 GB/s link
    assert abs(small / large - 1) < 0.01


def test_one_reader_is_latency_bound_in_the_model():
    """A check that the simulated pattern can fall below the card: one reader with 2 x 256 KiB in flight."""
    card = ROOT / "models" / "nvme" / "micron-9550-pro-7.68tb.yaml"
    assert probe.model_rate(card, "large", 1, 256 * 1024) < 0.5 * 10e9


def test_ratios_pair_phases_by_setting():
    rows = [{"kind": "large", "ranks": 8, "threads": 8, "transfer_B": 2**20, "mode": "buffered", "GBps": 10.0},
            {"kind": "small", "ranks": 8, "threads": 8, "transfer_B": 2**20, "mode": "buffered", "GBps": 7.0},
            {"kind": "small", "ranks": 8, "threads": 8, "transfer_B": 2**20, "mode": "direct", "GBps": 9.0},
            {"kind": "large", "ranks": 16, "threads": 8, "transfer_B": 2**20, "mode": "buffered", "skipped": "budget"}]
    assert probe.ratios(rows) == {"8x8 1024 KiB buffered": 0.7}


def test_registration_holds_the_model_ratios_for_every_pair_of_the_plan():
    reg = json.loads((SET / "registered.json").read_text())
    pairs = {k for k in probe.ratios([{"kind": k, "ranks": r, "threads": t, "transfer_B": x, "mode": d, "GBps": 1.0}
                                      for k, r, t, x, d in probe.PLAN])}
    assert set(reg["predicted_ratio"]) == pairs
    assert all(abs(v - 1) < 0.01 for v in reg["predicted_ratio"].values())


read = load_script("studies/storage_pattern_read.py")


def _row(kind, files, readers=64, gbps=1.0, **kw):
    return {"kind": kind, "ranks": readers // 8, "threads": 8, "readers": readers, "transfer_B": 2**20,
            "mode": "buffered", "seconds": 4.5, "files": files, "bytes": files, "GBps": gbps, "readers_failed": 0} | kw


def test_a_phase_with_no_or_too_few_completed_files_gives_no_reading():
    assert read.reading(_row("large", 0, gbps=0.0))[0] is None
    assert "fewer than one a reader" in read.reading(_row("large", 62))[1]
    assert read.reading(_row("large", 64, gbps=1.85)) == (1.85, "")
    assert "skipped" in read.reading({"skipped": "budget"})[1]


def test_pairs_with_a_no_reading_half_are_not_judged_and_a_wide_count_does_not_decide():
    reg = {"predicted_ratio": {"8x8 1024 KiB buffered": 1.0}, "tolerance": 0.05}
    lines = read.judge([_row("large", 0, gbps=0.0), _row("small", 2600)], reg)
    assert len(lines) == 1 and "no reading, not judged" in lines[0] and "model" not in lines[0].split("(")[0]
    wide = read.judge([_row("large", 64, gbps=1.85), _row("small", 2600, gbps=1.51)], reg)[0]
    assert "not decided over the counting bound" in wide       # 64 files by 64 readers: the count bounds nothing
    assert "model missed" not in wide and "model met" not in wide
    tight = read.judge([_row("large", 640, gbps=2.0), _row("small", 2600, gbps=1.4)], reg)[0]
    assert "model missed, holds" in tight


def test_the_first_runs_read_out_names_every_phase_without_a_rate(capsys):
    read.read(SET / "runs.json", SET / "registered.json")
    out = capsys.readouterr().out
    assert out.count("no reading, not judged") == 5              # 16x8 x 3, direct, full: their large halves
    assert out.count("holds over the counting bound") == 2      # 8x2 at 256 KiB and 2 MiB
    assert "Traceback" not in out


def test_readahead_windows_give_the_device_read_sizes_of_long_files():
    """Long files reach the read_ahead_kb window, cut at max_sectors_kb: the device's measured mean read (the first
    run's large buffered phases, 3.7-4.0 MiB) within 10%; a 2.8 MB file's reads never reach it."""
    runs = json.loads((SET / "runs.json").read_text())
    q = runs["machine"]["queue"]
    for r in runs["rows"]:
        if r["kind"] == "large" and r["mode"] == "buffered":
            reqs = read.windows(143_439_660, r["transfer_B"], int(q["read_ahead_kb"]), int(q["max_sectors_kb"]))
            assert abs(sum(reqs) / len(reqs) / r["device_read_B_mean"] - 1) < 0.10
    small = read.windows(2_828_486, 2**20, 8192, 4096)
    assert sum(small) >= 2_828_486 and max(small) < 4 * 2**20 and len(small) == 2


def test_read_out_of_a_missing_file_is_one_line():
    import subprocess
    import sys

    p = subprocess.run([sys.executable, str(ROOT / "studies" / "storage_pattern_read.py"), "nope.json"],
                       capture_output=True, text=True)
    assert p.returncode != 0 and p.stderr.strip() == "nope.json: no such file"


ra_probe = load_script("studies/storage_readahead_probe.py")
RA_SET = ROOT / "calibration" / "h200x1-storage-readahead-2026-11-29"


def test_readahead_registration_holds_both_predictions_for_every_pair_of_its_plan():
    reg = json.loads((RA_SET / "registered.json").read_text())
    keys = {ra_probe.key(ra, x, d) for ra, k, _, _, x, d in ra_probe.PLAN}
    assert set(reg["model_ratio"]) == set(reg["mechanism_ratio"]) == keys
    assert all(abs(v - 1) < 0.01 for v in reg["model_ratio"].values())
    mech = reg["mechanism_ratio"]                  # the mechanism separates the two read_ahead_kb settings
    assert mech["8x8 1024 KiB buffered ra 8192"] < 0.85 < 0.95 < mech["8x8 1024 KiB buffered ra 128"]


def test_readahead_read_out_names_a_phase_that_did_not_run(tmp_path, capsys):
    rows = [{"kind": k, "read_ahead_kb": ra, "transfer_B": x, "mode": d, "GBps_read": 1.0}
            for ra, k, _, _, x, d in ra_probe.PLAN]
    rows[0] = {**rows[0], "skipped": "read_ahead_kb 8192 not set on vda (read back '')"}
    del rows[0]["GBps_read"]
    (tmp_path / "runs.json").write_text(json.dumps({"rows": rows}))
    ra_probe.read(tmp_path / "runs.json", RA_SET / "registered.json")
    out = capsys.readouterr().out.splitlines()
    assert "no reading (large: read_ahead_kb 8192 not set" in out[0]
    assert "small / large = 1.00 (model 1.00 met; mechanism 0.75 missed)" in out[1]


def _one_line_exit(call) -> str:
    import pytest

    with pytest.raises(SystemExit) as info:
        call()
    text = str(info.value.code)
    assert "\n" not in text and "Traceback" not in text
    return text


def test_pattern_read_out_of_bad_runs_is_one_line_naming_the_file_and_key(tmp_path):
    runs = tmp_path / "runs.json"
    assert _one_line_exit(lambda: read.read(tmp_path / "gone.json", None)) == f"{tmp_path / 'gone.json'}: no such file"
    runs.write_text(json.dumps({"machine": {}}))
    assert _one_line_exit(lambda: read.read(runs, None)).startswith(f"{runs}: rows: expected a list")
    runs.write_text(json.dumps({"rows": [{k: v for k, v in _row("large", 64).items() if k != "files"}]}))
    assert _one_line_exit(lambda: read.read(runs, None)) == f"{runs}: rows[0].files: missing"
    runs.write_text("{")
    assert _one_line_exit(lambda: read.read(runs, None)).startswith(f"{runs}: not readable JSON")
    runs.write_text(json.dumps({"rows": [_row("large", 64)]}))
    reg = tmp_path / "registered.json"
    assert _one_line_exit(lambda: read.read(runs, reg)) == f"{reg}: no such file"


def test_pattern_probe_read_subcommand_of_a_missing_file_is_one_line():
    import subprocess
    import sys

    p = subprocess.run([sys.executable, str(ROOT / "studies" / "storage_pattern_probe.py"), "read", "nope.json"],
                       capture_output=True, text=True)
    assert p.returncode != 0 and p.stderr.strip() == "nope.json: no such file"


def test_readahead_read_out_of_bad_runs_or_registration_is_one_line(tmp_path):
    runs, reg = tmp_path / "runs.json", tmp_path / "registered.json"
    good = [{"kind": k, "read_ahead_kb": ra, "transfer_B": x, "mode": d, "GBps_read": 1.0}
            for ra, k, _, _, x, d in ra_probe.PLAN]
    runs.write_text(json.dumps({"plan": []}))
    assert _one_line_exit(lambda: ra_probe.read(runs, RA_SET / "registered.json")).startswith(f"{runs}: rows: expected")
    runs.write_text(json.dumps({"rows": [{k: v for k, v in good[0].items() if k != "read_ahead_kb"}] + good[1:]}))
    assert _one_line_exit(lambda: ra_probe.read(runs, RA_SET / "registered.json")) == f"{runs}: rows[0].read_ahead_kb: missing"
    runs.write_text(json.dumps({"rows": good}))
    registered = json.loads((RA_SET / "registered.json").read_text())
    del registered["tolerance"]["mechanism_ratio"]
    reg.write_text(json.dumps(registered))
    assert _one_line_exit(lambda: ra_probe.read(runs, reg)) == f"{reg}: tolerance.mechanism_ratio: missing"
    registered = json.loads((RA_SET / "registered.json").read_text())
    first = next(iter(registered["model_ratio"]))
    del registered["model_ratio"][first]
    reg.write_text(json.dumps(registered))
    assert _one_line_exit(lambda: ra_probe.read(runs, reg)) == f"{reg}: model_ratio.{first}: missing"


def _fake_rank(files, threads, transfer, mode, seconds, warmup, queue, barrier):
    # bytes of completed files, files, window s, readers died, CPU s, bytes ever read, bytes read in the window
    queue.put((0, 0, 1.0, 0, 2.0, 3e9, 4e9))


def test_cpu_per_GB_divides_by_the_bytes_read_in_the_window_not_completed_files(tmp_path, monkeypatch):
    """A phase with no completed file (O_DIRECT large) still read bytes: its CPU cost per GB is per byte read."""
    (tmp_path / "large").mkdir()
    (tmp_path / "large" / "a.tfrecord").write_bytes(b"x")
    monkeypatch.setattr(probe, "_rank", _fake_rank)
    row = probe.run(tmp_path, "large", 1, 1, 4096, seconds=1.0, warmup=0.1)
    assert row["files"] == 0 and row["GBps_read"] == 4.0
    assert abs(row["cpu_s_per_GB"] - 0.5) < 1e-9            # 2 CPU s / 4 GB read (was 2 / 1e-9 with no file completed)
