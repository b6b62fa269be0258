"""The registered read-out of a repeated qperf size sweep (issue 42, calibration/h200-transport-sizes2-2026-11-28) and the
runner's declared client and server cores."""

from __future__ import annotations

import statistics

import pytest
from conftest import ROOT

from simcluster import cli_args
from simcluster.errors import SimclusterError
from simcluster.fit import host_counts, host_stack, host_stack_readout
from simcluster.runner import plans

FIRST = ROOT / "calibration" / "h200-transport-sizes-2026-11-28"
SECOND = ROOT / "calibration" / "h200-transport-sizes2-2026-11-28"


def test_bracket_and_noise_of_the_median():
    five = [1.0, 1.2, 0.9, 1.1, 3.0]                     # sorted 0.9 1.0 1.1 1.2 3.0: the outlier does not move it
    assert host_stack_readout.bracket(five) == (1.0, 1.2)
    assert host_stack_readout.noise(five) == pytest.approx(0.1 / 1.1)
    assert host_stack_readout.bracket([2.0, 1.0]) == (1.0, 2.0)
    assert host_stack_readout.noise([1.0, 3.0]) == pytest.approx(0.5)
    assert host_stack_readout.noise([1.0]) != host_stack_readout.noise([1.0])   # nan


def test_prediction_noise_is_zero_without_scatter_and_grows_with_it():
    a, b = 0.3e-9, 1.2e-6
    exact = {m: [a + b / m] * 5 for m in (1024.0, 2048.0, 4096.0)}
    assert host_stack_readout.prediction_noise(exact, 1 << 20) == pytest.approx(0.0, abs=1e-12)
    scattered = {m: [(a + b / m) * f for f in (0.9, 0.95, 1.0, 1.05, 1.1)] for m in exact}
    wide = {m: [(a + b / m) * f for f in (0.8, 0.9, 1.0, 1.1, 1.2)] for m in exact}
    small = host_stack_readout.prediction_noise(scattered, 1 << 20)
    assert 0.05 < small < host_stack_readout.prediction_noise(wide, 1 << 20)


def test_the_read_out_of_the_first_bundle_is_the_count_models_held_out_check():
    bundle = FIRST / "lab-sizes-none"
    rows = host_stack_readout.bundle_rows(bundle)
    judged = [r for r in rows if r.judged]
    # the UDP sender's count model (fit/udp_counts.py) needs two fragmented sizes <= 8 KiB: the first sweep's lab bundles
    # have only 4 KiB (no 2 KiB), so no UDP sender row is judged there (not guessed)
    assert {(r.transport, r.side) for r in judged} == {("tcp", "both")}
    assert sorted(r.m for r in judged if r.transport == "tcp") == [65536, 262144, 1048576]   # 16 KiB: the TCP fit read UDP's
    assert [r.m for r in host_stack_readout.bundle_rows(FIRST / "loopback-sizes") if r.judged and r.transport == "udp"] \
        == [16384]                                                            # loopback: one packet, dgram + byte x m
    terms = host_counts.fit_medians(*host_counts.bundle_inputs(bundle))
    samples, _ = host_stack.bundle_samples(bundle)
    medians = host_stack.medians(samples)[("tcp", "both")]
    for r in (r for r in judged if r.transport == "tcp"):
        assert r.median == medians[r.m] and r.predicted == pytest.approx(terms.cost(r.m))
        assert r.n == 2 and r.spread > 0


def test_the_read_out_prints_every_configuration_and_the_verdict(capsys):
    assert host_stack_readout.main([str(FIRST)]) == 0
    out = capsys.readouterr().out
    for name in ("loopback-sizes", "lab-sizes-none", "lab-sizes-csum", "lab-sizes-csum-noshaping", "lab-sizes-all-noshaping"):
        assert f"{name:26s} mean |error|" in out
    last = out.strip().splitlines()[-1]
    assert last.startswith("all") and "within 10%: 0/16" in last and last.endswith("target not met")
    rows = [r for b in host_stack.sweep_bundles([FIRST]) for r in host_stack_readout.bundle_rows(b) if r.judged]
    assert f"mean |error| {statistics.mean(abs(r.error) for r in rows):6.1%}" in last


def test_the_registered_second_run_as_registered_and_as_reread_with_the_count_model(capsys):
    """calibration/h200-transport-sizes2-2026-11-28, read once under its registered rule (c = a + b / m on 1-4 KiB):
    115.1% mean |error| over 25 judged rows, 1 within 10% (README.md, Result). Re-read as development with the count
    model (session 32, which read this sweep) and the UDP sender's count model (session 32 again, udp7, which read it too): 20 rows
    (TCP's 16 KiB is now a fit input), 19.0%, 4 within 10%."""
    old = []
    for bundle in host_stack.sweep_bundles([SECOND]):
        samples, _ = host_stack.bundle_samples(bundle)
        for (transport, side), costs in host_stack.medians(samples).items():
            if (transport, side) in host_stack_readout.JUDGED:
                low = host_stack.TCP_FIT_MIN if transport == "tcp" else 0.0
                old += [abs(r["error"]) for r in host_stack.held_out(costs, low=low)[1]]
    assert len(old) == 25 and f"{statistics.mean(old):.1%}" == "115.1%" and sum(e <= 0.1 for e in old) == 1
    assert host_stack_readout.main([str(SECOND)]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("all") and "mean |error|  19.0%" in last and "within 10%: 4/20" in last
    assert last.endswith("target not met")


def test_the_read_out_refuses_a_folder_without_bundles_in_one_line(capsys, tmp_path):
    assert host_stack_readout.main([str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no qperf-sizes bundle" in err
    assert host_stack_readout.main(["--bogus"]) == 2


@pytest.mark.parametrize("folder, sizes", [(SECOND, "1K,2K,4K,16K,64K,256K,1M"),
                                           (SECOND.parent / "h200-transport-sizes3-2026-11-29", "1K,2K,4K,16K,32K,128K,512K")])
def test_the_registered_device_script_runs_the_rule_of_its_readme(folder, sizes):
    import os
    import subprocess

    script = (folder / "device_run.sh").read_text()
    if folder != SECOND:      # the third runs the second's script with its sizes and skip time changed: read what it runs
        script = subprocess.run(["bash", str(folder / "device_run.sh")], cwd=ROOT, env=os.environ | {"PRINT_ONLY": "1"},
                                capture_output=True, text=True, check=True).stdout
        assert script.startswith("#!/bin/bash") and "-gt 475 ]" in script
    readme = (folder / "README.md").read_text()
    assert "--qperf-repeat 5" in script and f"--qperf-sizes {sizes}" in script
    assert "--pin-cpus $CLIENT,$SERVER" in script
    for name in ("loopback-sizes", "lab-sizes-none", "lab-sizes-csum", "lab-sizes-csum-noshaping", "lab-sizes-all-noshaping"):
        assert f"run {name}" in script
    assert "1, 2 and 4 KiB" in readme
    assert f"python -m simcluster.fit.host_stack_readout {folder.relative_to(ROOT).as_posix()}" in readme
    assert host_stack.SPLIT == 4096 and host_stack.TCP_FIT_MIN == 1024      # the rule's fit range, as registered


def test_client_and_server_get_their_declared_cores():
    steps = plans.qperf_size_steps(plans.Options(pin=True, pin_cpus=(2, 5), qperf_sizes=("4K",), qperf_repeat=1))
    tcp = steps[0]
    assert tcp.argv[:3] == ["taskset", "-c", "2"] and tcp.server_argv[:3] == ["taskset", "-c", "5"]
    assert tcp.meta["pin_cpus"] == [2, 5]
    plain = plans.qperf_size_steps(plans.Options(qperf_sizes=("4K",), qperf_repeat=1))[0]
    assert plain.argv[0] == "qperf" and plain.meta["pin_cpus"] is None
    assert cli_args._pin_cpus("2,3") == (2, 3) and cli_args._pin_cpus(None) == (0, 0)
    with pytest.raises(SimclusterError, match="--pin-cpus '2'"):
        cli_args._pin_cpus("2")


def test_a_pinned_run_records_its_cores_busy_time(tmp_path):
    from simcluster.runner import collect

    step = collect.Step("qperf-sizes", "t", ["python3", "-c", "sum(range(3_000_000))"], meta={"pin_cpus": [0, 0]})
    entry = collect.run_step(tmp_path, step)
    before, after = entry["proc_stat"]["before"], entry["proc_stat"]["after"]
    assert set(after) == {"busy", "total", "hz", "cpu0"}
    assert after["cpu0"]["total"] >= before["cpu0"]["total"] and after["cpu0"]["softirq"] >= before["cpu0"]["softirq"]
    plain = collect.run_step(tmp_path / "b", collect.Step("qperf-sizes", "t", ["true"], meta={}))
    assert "cpu0" not in plain["proc_stat"]["after"]


def test_a_bundle_without_held_out_rows_is_one_line_not_an_empty_table(capsys, monkeypatch):
    monkeypatch.setattr(host_stack_readout, "bundle_rows", lambda bundle, **kw: [])
    assert host_stack_readout.main([str(FIRST)]) == 2
    assert "no held-out row" in capsys.readouterr().err
