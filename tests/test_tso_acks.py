"""The push ACK rule (hardware/transport_counts.push_acks), its development read (fit/tso_acks.py), the sixth sweep's
registration (calibration/h200-transport-sizes6-2026-11-29: the read-out takes the push rule there, the fifth's rule
elsewhere) and the runner's TcpExt counters (runner/collect.packet_counters)."""

from __future__ import annotations

import json
import os
import subprocess
from types import SimpleNamespace

import pytest
from conftest import ROOT
from test_host_counts import SECOND
from test_offload_counts import LAB, _run

from simcluster.fit import offload_counts as oc
from simcluster.fit import offload_readout, tso_acks
from simcluster.hardware.transport_counts import GSO, push_acks
from simcluster.runner import collect

SIXTH = ROOT / "calibration" / "h200-transport-sizes6-2026-11-29"
K = 1024
SIZES = tuple(m * K for m in (1, 2, 4, 10, 36, 56, 80, 112, 200, 320, 640))      # device_run.sh there
HELD = {m * K for m in (10, 36, 56, 80, 112, 200)}
PUSH = oc.TsoTerms(2e-6, 1e-6, 10e-6, 0.2e-9, acks=push_acks)


def test_the_push_rule_counts_one_per_write_and_one_per_two_super_packets_of_bytes():
    assert push_acks(1 * K) == 0.5                         # one wire segment: half an ACK (every second write's)
    assert push_acks(2 * K) == 1.0                         # two wire segments: one
    assert push_acks(40 * K) == pytest.approx(1 + 40 * K / (2 * GSO))
    assert push_acks(640 * K) == pytest.approx(1 + 640 * K / (2 * GSO))
    assert [push_acks(m) > oc.gso_acks(m) for m in (20 * K, 96 * K, 160 * K)] == [True, True, True]


def test_the_fit_takes_the_ack_rule_and_recovers_known_terms():
    got = oc.fit_tso({float(m): PUSH.cost(m) for m in SIZES}, acks=push_acks)
    assert got.acks is push_acks and got.ack == pytest.approx(PUSH.ack, rel=1e-6)
    assert all(got.cost(m) == pytest.approx(PUSH.cost(m), rel=1e-6) for m in HELD)
    registered = oc.fit_tso({float(m): PUSH.cost(m) for m in SIZES})
    assert max(abs(registered.cost(m) / PUSH.cost(m) - 1) for m in HELD) > 0.05   # the wrong count shows


def _sweep(folder, scatter=(0.97, 0.99, 1.0, 1.01, 1.03)) -> None:
    """A TSO/GRO bundle of the sixth sweep's sizes whose cost and ACKs follow PUSH."""
    runs = []
    for k, f in enumerate(scatter, start=1):
        for m in SIZES:
            c = f * PUSH.per_message(m)
            runs.append(_run(folder, "tcp_bw", m, k, 0.6 * c, 0.4 * c, LAB, 1, (oc.skbs(m), round(push_acks(m)))))
    manifest = json.loads((SECOND / "lab-sizes-none" / "manifest.json").read_text()) | {"runs": runs}
    (folder / "manifest.json").write_text(json.dumps(manifest))


def test_the_read_out_takes_the_push_rule_in_the_sixth_sweep_only(tmp_path):
    sixth, other = tmp_path / SIXTH.name / "lab-sizes-all-noshaping", tmp_path / "other" / "lab-sizes-all-noshaping"
    for bundle in (sixth, other):
        _sweep(bundle)
    rows = offload_readout.bundle_rows(sixth, [])
    assert {int(r.m) for r in rows} == HELD and max(abs(r.error) for r in rows) < 1e-6
    assert max(abs(r.error) for r in offload_readout.bundle_rows(other, [])) > 0.05   # the fifth's rule there
    assert offload_readout.tso_ack_rule(sixth) is push_acks and offload_readout.tso_ack_rule(other) is oc.gso_acks


def test_the_development_read_prints_both_rules_before_and_after(tmp_path, capsys):
    _sweep(tmp_path / "lab-sizes-all-noshaping")
    assert tso_acks.main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "cost, predicted sizes, every sweep" in out and "-> " in out
    assert tso_acks.main(["--predict", "10K,1M"]) == 2 and "\n" not in capsys.readouterr().err.strip()
    target = tmp_path / "p.txt"
    assert tso_acks.main(["--predict", "10K,36K", "--register", str(target), str(tmp_path)]) == 0
    assert "1.08" in target.read_text()
    assert tso_acks.main(["--predict", "10K", "--register", str(target), str(tmp_path)]) == 2   # never overwritten


@pytest.mark.parametrize("sizes", ["0,10K", "-4K", "10K,0K"])
def test_predict_rejects_sizes_of_zero_or_fewer_bytes_in_one_line(sizes, tmp_path, capsys):
    _sweep(tmp_path / "lab-sizes-all-noshaping")
    assert tso_acks.main(["--predict", sizes, str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "above 0 bytes" in err and "Traceback" not in err


def test_the_development_numbers_on_the_h200_sweeps():
    """The before -> after of the push rule on every TSO/GRO row of the H200 sweeps (development, findings Session 34)."""
    out = tso_acks.folder_report([ROOT / "calibration" / f"h200-transport-{s}" for s in
                                  ("sizes-2026-11-28", "sizes2-2026-11-28", "sizes3-2026-11-29", "sizes5-2026-11-29")])
    lines = {line.split("  ")[0]: " ".join(line.split()) for line in out.splitlines()}
    assert lines["cost, predicted sizes, every sweep"].endswith("13.2% (3/10 within 10%) -> 9.3% (7/10 within 10%)")
    assert lines["ACKs, predicted sizes, own-core sweeps"].endswith("22.0% (2/8 within 10%) -> 12.2% (5/8 within 10%)")


def test_the_sixth_sweep_is_registered_with_never_measured_held_out_sizes():
    script = subprocess.run(["bash", str(SIXTH / "device_run.sh")], cwd=ROOT, env=os.environ | {"PRINT_ONLY": "1"},
                            capture_output=True, text=True, check=True).stdout
    runs = [line for line in script.splitlines() if line.startswith("run ")]
    sizes = ",".join(f"{m // K}K" for m in SIZES)
    assert [r.split()[1] for r in runs] == ["lab-sizes-all-noshaping", "lab-sizes-all-noshaping-2"]
    assert all(f"--lab-offloads all --qperf-sizes {sizes} --qperf-size-tests tcp_bw" in r for r in runs)
    assert oc.tso_fit_sizes(SIZES) == [1 * K, 2 * K, 4 * K, 320 * K, 640 * K]
    seen = {int(p.name.split("-m")[1].split("-")[0]) for p in (ROOT / "calibration").glob("**/qperf-sizes/*-m*")
            if SIXTH not in p.parents}
    assert {1024, 2048, 4096} <= seen and not HELD & seen
    readme = (SIXTH / "README.md").read_text()
    assert "python -m simcluster.fit.offload_readout calibration/h200-transport-sizes6-2026-11-29" in readme
    assert "1.08" in (SIXTH / "predictions.txt").read_text()


def test_the_runner_reads_the_tcpext_counters_beside_snmp(monkeypatch):
    text = ("Tcp: InSegs OutSegs\nTcp: 10 20\nUdp: InDatagrams\nUdp: 3\n"
            "TcpExt: DelayedACKs TCPHPHits TCPBacklogCoalesce Other\nTcpExt: 4 5 6 7\n")
    monkeypatch.setattr(collect.subprocess, "run", lambda argv, **_: SimpleNamespace(stdout=text, argv=argv))
    got = collect.packet_counters(None)
    assert got == {"tcp_in_segs": 10, "tcp_out_segs": 20, "udp_in": 3, "tcp_delayed_acks": 4, "tcp_hp_hits": 5,
                   "tcp_backlog_coalesce": 6}


@pytest.mark.parametrize(("module", "readout"), [(offload_readout, "readout-offload.txt"),
                                                 (tso_acks, "readout-tso-acks.txt")])
def test_the_sixth_sweeps_registered_read_is_the_committed_read_out(module, readout, capsys):
    """The read-outs the sizes6 README's Result quotes (its 12 registered rows, verdict and the ACK counts) are what the
    commands print today: a change that moves them fails here (review B #7)."""
    assert module.main([str(SIXTH)]) == 0
    assert capsys.readouterr().out == (SIXTH / readout).read_text()
