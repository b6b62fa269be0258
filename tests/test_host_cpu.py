"""The runner's first use on any machine gives a card: a loopback qperf collection is CPU-bound (no wire between
client and server), so `calibrate` writes the host's onload cost (host-cpu card) instead of refusing the bundle;
a scenario's machine.host.card then sets what a TCP stream costs its hosts."""

import dataclasses
import shutil

import pytest
from conftest import ROOT

from simcluster.cards import load_host_cpu
from simcluster.cli import main
from simcluster.machine_models import machine_nic
from simcluster.scenario import load_variants


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("qperf") is None, reason="qperf is not installed (.ci/run installs it)")
def test_loopback_qperf_gives_a_host_cpu_card_that_a_scenario_uses(tmp_path, capsys):
    bundle, cards = tmp_path / "bundle", tmp_path / "cards"
    assert main(["collect", "--tools", "qperf", "--out", str(bundle), "--qperf-time", "2", "--qperf-repeat", "2"]) == 0
    code = main(["calibrate", str(bundle), "-o", str(cards)])
    err = capsys.readouterr().err
    assert code in (0, 3), err
    host, card = load_host_cpu(cards / "host-cpu-tcp.yaml")
    assert card["provenance"]["traces"] and host.tcp_stack_latency_s > 0
    # a stream that used one core moves 1 / cost bytes per second: the cost is that of the measured stream
    assert 1e-11 < host.tcp_cpu_s_per_byte < 1e-7
    scenario = tmp_path / "scenarios" / "tcp.yaml"
    scenario.parent.mkdir()
    (tmp_path / "models").symlink_to(ROOT / "models")
    text = (ROOT / "scenarios" / "whatif" / "roce-vs-tcp.yaml").read_text()
    scenario.write_text(text.replace("../../models", "../models"))
    tcp = dict(load_variants(scenario))["tcp"].machine
    before, _ = machine_nic(tcp)
    nic, _ = machine_nic(dataclasses.replace(tcp, host_card=cards / "host-cpu-tcp.yaml"))
    assert before.transport == nic.transport == "tcp" and before.cpu_s_per_byte != nic.cpu_s_per_byte
    assert nic.cpu_s_per_byte == host.tcp_cpu_s_per_byte
    assert nic.rate_Bps(1) == pytest.approx(min(nic.wire_limit_Bps, 1 / host.tcp_cpu_s_per_byte))
