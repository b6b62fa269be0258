"""The UDP sender's count model (fit/udp_counts.py, issue 42 session 32, udp7), the runner's UDP-only size sweep, and the read-out
of the registered fourth run's folder layout (calibration/h200-transport-udp4-2026-11-29), on fake bundles made here."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from conftest import ROOT
from test_host_counts import SECOND, _run

from simcluster.errors import CalibrationError, SimclusterError
from simcluster.fit import host_stack, host_stack_readout, udp_counts
from simcluster.runner import plans

FOURTH = ROOT / "calibration" / "h200-transport-udp4-2026-11-29"
FITTED, HELD = (1024, 2048, 4096, 6144, 8192), (12288, 24576, 49152)     # README.md there
LAB = {"kind": "veth+tc", "rate": "100gbit", "mtu": 1500, "offloads": "none", "client_netns": "sc-a",
       "server_netns": "sc-b", "server": "10.77.0.2"}
BYTE = 0.15e-9                                                               # core-s per byte (the copy)
LAB_TERMS = udp_counts.UdpTerms(False, 2.0e-6, 1.5e-6, 1.4e-6, BYTE)       # a known stack (core-s per event)
LOOP_TERMS = udp_counts.UdpTerms(True, 1.7e-6, 0.0, 0.0, BYTE)
CONFIGS = {"loopback-sizes": {}, "lab-sizes-none": LAB, "lab-sizes-csum": LAB | {"offloads": "csum"},
           "lab-sizes-csum-noshaping": LAB | {"rate": "none", "offloads": "csum"},
           "lab-sizes-all-noshaping": LAB | {"rate": "none", "offloads": "all"}}


def test_fragments_follow_the_mtu_and_loopback_sends_one_packet():
    assert [udp_counts.fragments(m) for m in (*FITTED, *HELD)] == [1, 2, 3, 5, 6, 9, 17, 34]
    assert {udp_counts.fragments(m, loopback=True) for m in (*FITTED, *HELD)} == {1}
    assert LAB_TERMS.per_datagram(1024) == pytest.approx(2.0e-6 + 1.4e-6 + BYTE * 1024)          # no split: one fragment
    assert LAB_TERMS.per_datagram(2048) == pytest.approx(2.0e-6 + 1.5e-6 + 2 * 1.4e-6 + BYTE * 2048)


def test_the_fit_recovers_known_event_costs_from_1_to_8_kib_where_a_plus_b_over_m_cannot():
    lab = {float(m): LAB_TERMS.cost(m) for m in FITTED}
    loop = {float(m): LOOP_TERMS.cost(m) for m in FITTED}
    got = udp_counts.fit(lab, False, loop)
    assert got.byte == pytest.approx(BYTE) and got.frag == pytest.approx(LAB_TERMS.frag)
    assert got.split == pytest.approx(LAB_TERMS.split) and got.dgram == pytest.approx(LAB_TERMS.dgram)
    assert all(got.cost(m) == pytest.approx(LAB_TERMS.cost(m)) for m in HELD)
    old = host_stack.fit_terms(lab)                       # c(m) = a + b / m on the same sizes misses the fragment steps
    assert max(abs(old.cost(m) / LAB_TERMS.cost(m) - 1) for m in HELD) > 0.10
    assert udp_counts.fit(loop, True, None).cost(49152) == pytest.approx(LOOP_TERMS.cost(49152))


def test_the_fit_refuses_too_few_fragmented_sizes_in_one_line():
    with pytest.raises(CalibrationError, match="two of them over one fragment") as err:
        udp_counts.fit({1024.0: 1e-9, 4096.0: 1e-9, 64.0: 1e-9}, False, None)
    assert "\n" not in str(err.value)
    with pytest.raises(CalibrationError, match="two or more sizes"):
        udp_counts.fit({1024.0: 1e-9}, True, None)


def _bundle(folder, truth, terms, scatter=(0.97, 0.99, 1.0, 1.01, 1.03)) -> None:
    runs = [_run(folder, "udp_bw", m, k, 0.9 * f * terms.cost(m), 0.3 * f * terms.cost(m), truth)
            for k, f in enumerate(scatter, start=1) for m in (*FITTED, *HELD)]       # interleaved, UDP only
    manifest = json.loads((SECOND / "lab-sizes-none" / "manifest.json").read_text()) | {"runs": runs}
    (folder / "manifest.json").write_text(json.dumps(manifest))


def test_the_read_out_works_on_the_fourth_runs_udp_only_layout(tmp_path, capsys):
    for name, truth in CONFIGS.items():
        _bundle(tmp_path / name, truth, LOOP_TERMS if not truth else LAB_TERMS)
    rows = [r for name in CONFIGS for r in host_stack_readout.bundle_rows(tmp_path / name)]
    judged = [r for r in rows if r.judged]
    assert {(r.transport, r.side) for r in judged} == {("udp", "sender")} and len(judged) == 15
    assert {r.m for r in judged} == set(HELD) and all(abs(r.error) < 1e-6 for r in judged)
    assert all(r.predicted_noise > 0 for r in judged)                     # the repeats' scatter reaches the prediction
    assert host_stack_readout.main([str(tmp_path)]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("all") and "within 10%: 15/15" in last and last.endswith("target met")


def test_a_lab_without_its_runs_loopback_carries_the_copy_in_the_fragment_term(tmp_path):
    _bundle(tmp_path / "lab-sizes-none", LAB, LAB_TERMS)
    loopback, send, loop = udp_counts.bundle_inputs(tmp_path / "lab-sizes-none")
    assert not loopback and loop is None and udp_counts.fit_medians(loopback, send, loop).byte == 0.0


def test_the_runner_runs_only_the_tests_asked_for_and_refuses_others_in_one_line():
    steps = plans.qperf_size_steps(plans.Options(qperf_sizes=("1K", "48K", "1M"), qperf_repeat=1,
                                                 qperf_size_tests=("udp_bw",)))
    assert [s.run_id for s in steps] == ["udp_bw-m1024-1", "udp_bw-m49152-1"]        # 1 MiB: larger than a datagram
    default = plans.qperf_size_steps(plans.Options(qperf_sizes=("1K",), qperf_repeat=1))
    assert [s.run_id for s in default] in (["tcp_bw-m1024-1", "udp_bw-m1024-1"],
                                           ["tcp_bw-m1024-1", "udp_bw-m1024-1", "rc_bw-m1024-1", "ud_bw-m1024-1"])
    with pytest.raises(SimclusterError, match="expected one or more of tcp_bw, udp_bw"):
        plans.qperf_size_steps(plans.Options(qperf_size_tests=("tcp_lat",)))


def test_the_fourth_runs_device_script_is_the_second_runs_with_its_registered_changes():
    script = subprocess.run(["bash", str(FOURTH / "device_run.sh")], cwd=ROOT, env=os.environ | {"PRINT_ONLY": "1"},
                            capture_output=True, text=True, check=True).stdout
    base = (SECOND / "device_run.sh").read_text()
    changed = [line for line in script.splitlines() if line not in base.splitlines()]
    assert len(changed) == 4 and script.startswith("#!/bin/bash")        # the header, sizes, skip rule, timeout
    assert "--qperf-repeat 5 --qperf-sizes 1K,2K,4K,6K,8K,12K,24K,48K --qperf-size-tests udp_bw" in script
    assert "-gt 325 ]" in script and "timeout 68 python3" in script and "--pin-cpus $CLIENT,$SERVER" in script
    for name in CONFIGS:
        assert f"run {name}" in script
    readme = (FOURTH / "README.md").read_text()
    assert "python -m simcluster.fit.host_stack_readout calibration/h200-transport-udp4-2026-11-29" in readme
    assert "**12, 24, 48 KiB**" in readme and "1, 2, 4, 6, 8 KiB" in readme and udp_counts.FIT_HIGH == 8192


def test_the_fourth_runs_sizes_were_never_measured_before():
    runs = [p for p in (ROOT / "calibration").glob("**/qperf-sizes/*-m*") if FOURTH not in p.parents]
    seen = {int(p.name.split("-m")[1].split("-")[0]) for p in runs}
    assert {1024, 2048, 4096} <= seen and not {6144, 8192, *HELD} & seen
