"""The count model of one TCP stream's host cost (fit/host_counts.py, issue 42 session 32) and the read-out of the
registered third sweep's folder layout (calibration/h200-transport-sizes3-2026-11-29), on fake bundles made here."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from conftest import ROOT

from simcluster.fit import host_counts, host_stack, host_stack_readout

SECOND = ROOT / "calibration" / "h200-transport-sizes2-2026-11-28"
THIRD = ROOT / "calibration" / "h200-transport-sizes3-2026-11-29"
SIZES = (1024, 2048, 4096, 16384, 32768, 131072, 524288)       # the third sweep's (README.md there)
LAB = {"kind": "veth+tc", "rate": "100gbit", "mtu": 1500, "offloads": "none", "client_netns": "sc-a",
       "server_netns": "sc-b", "server": "10.77.0.2"}
TERMS = host_counts.CountTerms(host_counts.MSS, 5e-6, 2.5e-6, 9e-6, 0.0)    # a known lab stack (core-s per event)
UDP_PER_DATAGRAM, UDP_PER_FRAGMENT = 3e-6, 2.5e-6


def test_counts_follow_the_segment_size_and_the_ack_rule():
    assert [host_counts.packets(m, host_counts.MSS) for m in (1024, 2048, 4096, 65536)] == [1, 2, 3, 46]
    assert host_counts.packets(1 << 20, host_counts.GSO) == 17 and host_counts.packets(4096, host_counts.LOOPBACK) == 1
    assert [host_counts.fragments(m) for m in (1024, 1472, 2048, 4096, 16384)] == [1, 1, 2, 3, 12]
    assert host_counts.acks(1024, host_counts.MSS) == 0.5 and host_counts.acks(2048, host_counts.MSS) == 1.0
    assert host_counts.acks(4096, host_counts.MSS) == host_counts.ACKS_PER_PUSH               # a burst: per push
    assert host_counts.acks(1 << 20, host_counts.MSS) == pytest.approx(16 * host_counts.ACKS_PER_PUSH)
    assert host_counts.segment_size("lab unshaped offloads=all") == host_counts.GSO
    assert host_counts.segment_size("lab offloads=all-resegmented") == host_counts.MSS         # tbf re-segments


def test_the_fit_recovers_known_event_costs_from_1_to_4_kib_and_the_udp_train():
    tcp = {m: TERMS.cost(m) for m in (1024.0, 2048.0, 4096.0)}
    udp = {m: UDP_PER_DATAGRAM + UDP_PER_FRAGMENT * host_counts.fragments(m) for m in host_counts.TRAIN}
    got = host_counts.fit(tcp, host_counts.MSS, udp)
    assert got.pkt == pytest.approx(TERMS.pkt) and got.msg == pytest.approx(TERMS.msg) and got.ack == pytest.approx(TERMS.ack)
    assert got.cost(1 << 20) == pytest.approx(TERMS.cost(1 << 20))
    # the old model (a + b / m through the same three sizes) extrapolates the small sizes' per-byte margin
    old = host_stack.fit_terms(tcp)
    assert old.cost(1 << 20) / TERMS.cost(1 << 20) - 1 > 0.3


def test_the_fit_refuses_a_run_without_the_udp_train_in_one_line():
    from simcluster.errors import CalibrationError

    with pytest.raises(CalibrationError, match="udp_bw at 4096 and 16384"):
        host_counts.fit({1024.0: 1e-8, 4096.0: 5e-9}, host_counts.MSS, {4096.0: 1e-5})


def test_on_the_second_sweep_the_count_model_beats_a_plus_b_over_m_everywhere():
    """Development (the model was built reading this sweep): TCP both sides at 64 KiB-1 MiB."""
    for name in ("lab-sizes-none", "lab-sizes-csum", "lab-sizes-csum-noshaping", "lab-sizes-all-noshaping", "loopback-sizes"):
        rows = [r for r in host_stack_readout.bundle_rows(SECOND / name) if r.judged and r.transport == "tcp"]
        assert sorted(r.m for r in rows) == [65536, 262144, 1048576]
        samples, _ = host_stack.bundle_samples(SECOND / name)
        _, old = host_stack.held_out(host_stack.medians(samples)[("tcp", "both")], low=host_stack.TCP_FIT_MIN)
        old_error = statistics.mean(abs(r["error"]) for r in old if r["m"] > 16384)
        assert statistics.mean(abs(r.error) for r in rows) < min(0.3, old_error / 1.5)


def _run(folder: Path, test: str, m: int, k: int, client: float, server: float, truth: dict) -> dict:
    run_id = f"{test}-m{m}-{k}"
    (folder / "qperf-sizes" / run_id).mkdir(parents=True)
    rate = 500e6
    bw = f"    bw              =   {rate / 1e6:.0f} MB/sec\n" if test == "tcp_bw" else \
        f"    send_bw         =   {rate / 1e6:.0f} MB/sec\n    recv_bw         =   {rate / 1e6:.0f} MB/sec\n"
    (folder / "qperf-sizes" / run_id / "stdout.txt").write_text(
        f"{test}:\n{bw}    msg_size        =     {m} bytes\n    time            =     1 sec\n")
    cpu = {"client_cpu_s": client * rate, "server_cpu_s": server * rate}     # per-byte cost x bytes of a 1 s run
    return {"tool": "qperf-sizes", "run_id": run_id, "path": f"qperf-sizes/{run_id}", "status": "ok", "exit_code": 0,
            "argv": ["qperf"], "meta": {"test": test, "msg_size": m, "ground_truth": truth}, "ksoftirqd_cpu_s": 0.0,
            "child_cpu_s": sum(cpu.values()), **cpu}


def _bundle(folder: Path, truth: dict, scatter: tuple[float, ...] = (0.97, 0.99, 1.0, 1.01, 1.03)) -> None:
    runs = []
    for k, f in enumerate(scatter, start=1):                 # repeats interleaved, as the device script runs them
        for m in SIZES:
            runs.append(_run(folder, "tcp_bw", m, k, 0.6 * f * TERMS.cost(m), 0.4 * f * TERMS.cost(m), truth))
            if m <= 65507:
                per_byte = (UDP_PER_DATAGRAM + UDP_PER_FRAGMENT * host_counts.fragments(m)) / m
                runs.append(_run(folder, "udp_bw", m, k, 0.7 * f * per_byte, 0.3 * f * per_byte, truth))
    manifest = json.loads((SECOND / "lab-sizes-none" / "manifest.json").read_text()) | {"runs": runs}
    (folder / "manifest.json").write_text(json.dumps(manifest))


def test_the_read_out_works_on_the_third_sweeps_layout(tmp_path, capsys):
    """A folder of configuration bundles with the third sweep's sizes: 32 KiB, 128 KiB and 512 KiB judged for TCP (16 KiB,
    whose UDP train the TCP fit reads, printed, not judged), 16 and 32 KiB for the UDP sender (its fit reads <= 4 KiB)."""
    _bundle(tmp_path / "lab-sizes-none", LAB)
    _bundle(tmp_path / "lab-sizes-csum", LAB | {"offloads": "csum"})
    rows = host_stack_readout.bundle_rows(tmp_path / "lab-sizes-none")
    tcp = {r.m: r for r in rows if r.transport == "tcp"}
    assert sorted(m for m, r in tcp.items() if r.judged) == [32768, 131072, 524288] and not tcp[16384].judged
    assert all(abs(r.error) < 1e-9 for r in tcp.values())                  # the model that made the data predicts it
    assert [r.m for r in rows if r.judged and r.transport == "udp"] == [16384, 32768]
    assert host_stack_readout.main([str(tmp_path)]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("all") and "within 10%: 10/10" in last and last.endswith("target met")   # 2 x (3 TCP + 2 UDP)


def test_a_gso_lab_takes_its_per_byte_cost_from_the_same_runs_loopback(tmp_path):
    _bundle(tmp_path / "lab-sizes-all-noshaping", LAB | {"rate": "none", "offloads": "all"})
    alone = host_stack_readout.bundle_rows(tmp_path / "lab-sizes-all-noshaping")
    assert not [r for r in alone if r.transport == "tcp"]           # no loopback beside it: no TCP row, not a guess
    notes: list[str] = []
    host_stack_readout.bundle_rows(tmp_path / "lab-sizes-all-noshaping", notes=notes)
    assert len(notes) == 1 and "TCP not predicted: " in notes[0]    # said, not silent
    _bundle(tmp_path / "loopback-sizes", {})
    seg, tcp, udp, loop = host_counts.bundle_inputs(tmp_path / "lab-sizes-all-noshaping")
    assert seg == host_counts.GSO and loop is not None
    terms = host_counts.fit_medians(seg, tcp, udp, loop)
    assert terms.byte == pytest.approx(UDP_PER_FRAGMENT * 9 / (16384 - 4096))  # the loopback train's slope per byte


def test_the_third_runs_held_out_sizes_were_never_measured_and_its_fit_inputs_are_fixed():
    """tests/test_host_stack_readout.py checks its device script against its README, as the second run's."""
    assert "--qperf-sizes 1K,2K,4K,16K,32K,128K,512K" in (THIRD / "device_run.sh").read_text()
    runs = [p for p in (ROOT / "calibration").glob("**/qperf-sizes/*-m*") if THIRD not in p.parents]   # before it
    seen = {int(p.name.split("-m")[1].split("-")[0]) for p in runs}
    assert {1024, 4096, 16384, 1048576} <= seen and not {32768, 131072, 524288} & seen
    assert host_counts.FIT_INPUTS == {1024.0, 2048.0, 4096.0, 16384.0}


def test_the_counts_command_prints_measured_and_predicted_acks_and_wakeups(capsys):
    assert host_counts.main([str(SECOND / "lab-sizes-none")]) == 0
    out = capsys.readouterr().out
    row = next(line.split() for line in out.splitlines() if line.startswith("lab-sizes-none") and " 1048576 " in line)
    assert row[2:4] == ["22.25", "22.40"] and row[6] == "16.00"       # ACKs per 1 MiB message, measured vs rule
    assert host_counts.main([]) == 2 and "expected FOLDER" in capsys.readouterr().err
    assert host_counts.measured_counts(SECOND / "loopback-sizes") == {}          # one host's counters: no split


def test_the_third_runs_registered_cross_run_predictions_are_what_the_model_gives():
    """README.md there, "Predictions made before the run" 2: the second sweep's fitted terms at 32, 128 and 512 KiB (s/GB);
    a change of the model after registration shows here."""
    readme = (THIRD / "README.md").read_text()
    for name in ("loopback-sizes", "lab-sizes-none", "lab-sizes-csum", "lab-sizes-csum-noshaping", "lab-sizes-all-noshaping"):
        terms = host_counts.fit_medians(*host_counts.bundle_inputs(SECOND / name))
        row = next(line for line in readme.splitlines() if line.strip().startswith(f"| {name} |"))
        assert row.split("|")[-4:-1] == [f" {terms.cost(m) * 1e9:.3f} " for m in (32768, 131072, 524288)]


@pytest.mark.parametrize("damage", ["no after", "text count", "no server entry counters"])
def test_a_damaged_counter_in_the_manifest_is_one_line_naming_the_manifest_run_and_key(tmp_path, capsys, damage):
    import shutil

    bundle = tmp_path / "lab-sizes-none"
    shutil.copytree(SECOND / "lab-sizes-none", bundle)
    manifest = json.loads((bundle / "manifest.json").read_text())
    run = next(r for r in manifest["runs"] if (r.get("meta") or {}).get("test") == "tcp_bw" and r.get("packets"))
    server = run["meta"]["ground_truth"]["server_netns"]
    entry = next(p for p in run["packets"] if p.get("netns") == server)
    if damage == "no after":
        del entry["after"]
    elif damage == "text count":
        entry["before"]["tcp_out_segs"] = "many"
    else:
        entry["before"] = None
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    assert host_counts.main([str(bundle)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert str(bundle / "manifest.json") in err and repr(run["run_id"]) in err
    assert "tcp_out_segs" in err and ("after" if damage == "no after" else "before") in err
