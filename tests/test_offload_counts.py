"""The batching rules (fit/offload_counts.py: TSO/GRO, loopback UDP's two skb regimes), the UDP receiver's count model
(fit/udp_receiver_counts.py) and their read-out (fit/offload_readout.py) on fake bundles of the registered fifth run's
layout (calibration/h200-transport-sizes5-2026-11-29), made here with known terms."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from conftest import ROOT
from test_host_counts import SECOND

from simcluster.errors import CalibrationError
from simcluster.fit import offload_counts as oc
from simcluster.fit import offload_readout, udp_counts
from simcluster.fit import udp_receiver_counts as rc

FIFTH = ROOT / "calibration" / "h200-transport-sizes5-2026-11-29"
K = 1024
TCP_SIZES = tuple(m * K for m in (1, 2, 4, 20, 40, 96, 160, 320, 640))     # README.md there
UDP_SIZES = tuple(m * K for m in (1, 2, 4, 7, 14, 20, 28, 40, 60))
HELD = {"tcp": {20 * K, 40 * K, 96 * K, 160 * K}, "loop": {14 * K, 28 * K, 40 * K}, "rx": {14 * K, 20 * K, 28 * K, 40 * K}}
LAB = {"kind": "veth+tc", "rate": "none", "mtu": 1500, "offloads": "all", "client_netns": "sc-a", "server_netns": "sc-b",
       "server": "10.77.0.2"}
TSO = oc.TsoTerms(2e-6, 3e-6, 8e-6, 0.2e-9)
LOOP = oc.PagedLoopback(udp_counts.UdpTerms(True, 1.8e-6, 0.0, 0.0, 0.22e-9), 3.0e-6, 0.1e-9)
LAB_SEND = udp_counts.UdpTerms(False, 1.5e-6, 1.5e-6, 1.2e-6, 0.22e-9)
RX_LAB = rc.ReceiverTerms(False, 0.4e-6, 2.5e-6, 0.5e-6, 0.0, 7e-6)
RX_LOOP = rc.ReceiverTerms(True, 0.6e-6, 2.4e-6, 0.0, 0.09e-9, 4.5e-6)


def test_the_counts_follow_the_kernel_rules():
    assert oc.LINEAR_MAX == 16005                 # SKB_MAX_ALLOC (16384 - 320) less the UDP/IP headers and head room
    assert [oc.skbs(m) for m in TCP_SIZES] == [1, 1, 1, 1, 1, 2, 3, 6, 11]
    assert [oc.gso_acks(m) for m in TCP_SIZES] == [0.5, 1, 1, 1, 1, 1, 1.5, 3, 5.5]
    assert oc.tso_fit_sizes(TCP_SIZES) == [1 * K, 2 * K, 4 * K, 320 * K, 640 * K]
    assert oc.paged_fit_sizes(UDP_SIZES) == [20 * K, 60 * K] and LOOP.cost(14 * K) == LOOP.linear.cost(14 * K)
    assert RX_LAB.wakes(4 * K, 4e-6) == pytest.approx((4e-6 - RX_LAB.base(4 * K)) / 9.5e-6)   # below 1: batches
    assert RX_LAB.wakes(40 * K, 40e-6) == 1.0 and RX_LAB.wakes(1 * K, 0.5e-6) == 0.0


def test_the_fits_recover_known_terms_and_predict_between():
    tso = oc.fit_tso({float(m): TSO.cost(m) for m in TCP_SIZES})
    assert all(tso.cost(m) == pytest.approx(TSO.cost(m), rel=1e-6) for m in HELD["tcp"])
    loop = oc.fit_paged_loopback({float(m): LOOP.cost(m) for m in UDP_SIZES})
    assert loop.byte == pytest.approx(LOOP.byte) and loop.dgram == pytest.approx(LOOP.dgram)
    assert all(loop.cost(m) == pytest.approx(LOOP.cost(m)) for m in HELD["loop"])
    sender = {m: 1.1 * LAB_SEND.per_datagram(m) for m in UDP_SIZES}
    points = {float(m): rc.Point(RX_LAB.per_datagram(m, s), RX_LAB.wakes(m, s), s) for m, s in sender.items()}
    got = rc.fit(points, False)
    assert got.latency == pytest.approx(RX_LAB.latency) and got.frag == pytest.approx(RX_LAB.frag)
    assert all(got.per_datagram(m, sender[m]) == pytest.approx(RX_LAB.per_datagram(m, sender[m])) for m in HELD["rx"])


def test_the_fits_refuse_missing_sizes_in_one_line():
    with pytest.raises(CalibrationError, match="two or more sizes in 1-4 KiB and 2 above") as err:
        oc.fit_tso({1024.0: 1e-9, 2048.0: 1e-9, 4096.0: 1e-9, 65536.0: 1e-9})
    assert "\n" not in str(err.value)
    with pytest.raises(CalibrationError, match="two sizes above 16005 B"):
        oc.fit_paged_loopback({1024.0: 1e-9, 2048.0: 1e-9, 32768.0: 1e-9})
    with pytest.raises(CalibrationError, match="woke less than"):
        rc.fit({float(m): rc.Point(1e-6, 1.0, 5e-6) for m in (1024, 2048, 4096, 60 * K)}, False)


def _run(folder, test: str, m: int, k: int, client_s: float, server_s: float, truth: dict, switches: float,
         segs: tuple[int, int] = (0, 0), count: int = 20000) -> dict:
    """One 1-second qperf run moving `count` messages of m bytes (client_s, server_s: CPU seconds per message)."""
    run_id = f"{test}-m{m}-{k}"
    (folder / "qperf-sizes" / run_id).mkdir(parents=True)
    mbps = count * m / 1e6
    bw = f"    bw              =   {mbps} MB/sec\n" if test == "tcp_bw" else \
        f"    send_bw         =   {mbps} MB/sec\n    recv_bw         =   {mbps} MB/sec\n"
    (folder / "qperf-sizes" / run_id / "stdout.txt").write_text(
        f"{test}:\n{bw}    msg_size        =     {m} bytes\n    time            =     1 sec\n")
    packets = [{"netns": "sc-b", "before": {"tcp_in_segs": 0, "tcp_out_segs": 0},
                "after": {"tcp_in_segs": segs[0] * count, "tcp_out_segs": segs[1] * count}}]
    return {"tool": "qperf-sizes", "run_id": run_id, "path": f"qperf-sizes/{run_id}", "status": "ok", "exit_code": 0,
            "argv": ["qperf"], "meta": {"test": test, "msg_size": m, "ground_truth": truth}, "ksoftirqd_cpu_s": 0.0,
            "client_cpu_s": client_s * count, "server_cpu_s": server_s * count,
            "child_cpu_s": (client_s + server_s) * count, "server_switches": round(switches * count),
            "packets": packets if truth else []}


def _bundle(folder, truth: dict, kind: str, scatter=(0.97, 0.99, 1.0, 1.01, 1.03)) -> None:
    runs = []
    for k, f in enumerate(scatter, start=1):
        for m in TCP_SIZES if kind == "tcp" else UDP_SIZES:
            if kind == "tcp":
                c = f * TSO.per_message(m)
                runs.append(_run(folder, "tcp_bw", m, k, 0.6 * c, 0.4 * c, truth, 1, (oc.skbs(m), int(oc.gso_acks(m)))))
                continue
            send, rx = (LOOP, RX_LOOP) if kind == "loop" else (LAB_SEND, RX_LAB)
            s = send.per_datagram(m)           # the sender is CPU-bound: its CPU per datagram is its time per datagram
            runs.append(_run(folder, "udp_bw", m, k, f * s, f * rx.per_datagram(m, s), truth, rx.wakes(m, s),
                             count=round(1 / s)))      # a CPU-bound sender: its datagrams per second are 1 / s
    manifest = json.loads((SECOND / "lab-sizes-none" / "manifest.json").read_text()) | {"runs": runs}
    (folder / "manifest.json").write_text(json.dumps(manifest))


def test_the_read_out_judges_the_registered_rows_on_the_fifth_runs_layout(tmp_path, capsys):
    _bundle(tmp_path / "loopback-sizes", {}, "loop")
    _bundle(tmp_path / "lab-sizes-all-noshaping", LAB, "tcp")
    _bundle(tmp_path / "lab-sizes-csum-noshaping", LAB | {"offloads": "csum"}, "lab")
    assert offload_readout.main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    rows = [r for b in sorted(tmp_path.iterdir()) for r in offload_readout.bundle_rows(b, [])]
    got = {(r.config, r.side, int(r.m)) for r in rows}
    assert got == ({("lab-sizes-all-noshaping", "both", m) for m in HELD["tcp"]}
                   | {("loopback-sizes", "sender", m) for m in HELD["loop"]}
                   | {(c, "receiver", m) for c in ("loopback-sizes", "lab-sizes-csum-noshaping") for m in HELD["rx"]})
    assert max(abs(r.error) for r in rows if r.side != "receiver") < 1e-6
    # the receiver's W comes from the sender's count model fitted on <= 8 KiB (here exact): only rounding remains
    assert max(abs(r.error) for r in rows if r.side == "receiver") < 2e-3
    assert "super-packets/msg" in out and "receiver wakes/datagram" in out and out.count("target met") == 1


def test_the_fifth_runs_device_script_is_the_second_runs_with_its_registered_changes():
    script = subprocess.run(["bash", str(FIFTH / "device_run.sh")], cwd=ROOT, env=os.environ | {"PRINT_ONLY": "1"},
                            capture_output=True, text=True, check=True).stdout
    base = (SECOND / "device_run.sh").read_text().splitlines()
    changed = [line for line in script.splitlines() if line not in base]
    assert len(changed) == 8 and script.startswith("#!/bin/bash")   # header, common, skip rule, timeout, 4 run lines
    runs = [line for line in script.splitlines() if line.startswith("run ")]
    assert [line.split()[1] for line in runs] == ["loopback-sizes", "lab-sizes-all-noshaping",
                                                  "lab-sizes-csum-noshaping", "lab-sizes-none"]
    tcp = ",".join(f"{m // K}K" for m in TCP_SIZES)
    udp = ",".join(f"{m // K}K" for m in UDP_SIZES)
    assert f"--lab-offloads all --qperf-sizes {tcp} --qperf-size-tests tcp_bw" in runs[1]
    assert all(f"--qperf-sizes {udp} --qperf-size-tests udp_bw" in r for r in (runs[0], *runs[2:]))
    assert "-gt 410 ]" in script and "timeout 80 python3" in script and "--pin-cpus $CLIENT,$SERVER" in script
    readme = (FIFTH / "README.md").read_text()
    assert "python -m simcluster.fit.offload_readout calibration/h200-transport-sizes5-2026-11-29" in readme


def test_the_fifth_runs_held_out_sizes_were_never_measured_before():
    runs = [p for p in (ROOT / "calibration").glob("**/qperf-sizes/*-m*") if FIFTH not in p.parents]
    seen = {int(p.name.split("-m")[1].split("-")[0]) for p in runs}
    assert {1024, 2048, 4096} <= seen and not set().union(*HELD.values(), {60 * K, 7 * K}) & seen
