"""The one platform description (network/platform.py, network/builders.py): layout, routing, latency, the
scenario machine's platform, and the CPU vendor NCCL's tuner reads from the machine."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import ROOT

from simcluster import scenario
from simcluster.collectives.nccl_search import NcclTopology
from simcluster.collectives.nccl_tuner import decide, tuning_table
from simcluster.errors import ScenarioError, SimclusterError
from simcluster.machine_models import build_platform
from simcluster.network.builders import FabricSpec, chain, machine_platform, single_node, single_switch

B, L, S = 50e9, 50e-9, 600e-9


def _machine(nodes=64, nics=8, **kw):
    spec = FabricSpec(nodes, nics, B, **{"down_ports": 32, "spines": 16, "link_latency_s": L, "switch_latency_s": S, **kw})
    return machine_platform(nodes, 8, 900e9, spec)


def test_machine_layout_fabric_first_then_nvlink():
    p = _machine(nodes=64, nics=8)          # rail-optimized: 8 rails x 2 leaves of 32 nodes
    nics, leaves, gpus = 64 * 8, 16, 64 * 8
    assert (p.nics, p.leaves) == (nics, leaves)
    assert p.spine_links == (2 * nics, 2 * nics + 2 * leaves * 16)
    assert p.nvlink_links == (p.spine_links[1], p.spine_links[1] + 2 * gpus) and p.links == p.nvlink_links[1]
    assert (p.capacity[:2 * nics] == B).all() and (p.capacity[p.nvlink_links[0]:] == 900e9).all()
    # a leaf's 32 NICs' worth of uplink, split over 16 spines
    assert np.allclose(p.capacity[slice(*p.spine_links)], 32 * B / 16)
    assert p.endpoints("nic")[:2] == ["n0.nic0", "n0.nic1"] and p.gpus[8] == "n1.gpu0"


def test_up_down_routing_with_one_spine_each_way():
    p = _machine(nodes=64, nics=8)
    # n0.nic0 -> n1.nic0: same rail, same leaf; n0.nic0 -> n40.nic0: same rail, other leaf; ECMP picks one spine
    r = p.routes(p.nic(np.array([0, 0]), np.array([0, 0])), p.nic(np.array([1, 40]), np.array([0, 0])))
    assert list(r.hops) == [1, 3]
    far = np.sort(r.link_idx[r.flow_idx == 1])
    up, down = far[2], far[3]              # [NIC up, NIC down, leaf -> spine, spine -> leaf]
    first, end = p.spine_links
    assert first <= up < down < end
    spine_up, spine_down = (up - first) % 16, (down - first) % 16
    assert spine_up == spine_down                      # up and down through the same spine
    tagged = {int(np.sort(p.routes([0], [40 * 8], tag=t).link_idx)[2] - first) % 16 for t in range(64)}
    assert len(tagged) > 8                             # the flow tag spreads flows over the spines
    # latency: (hops + 1) links and hops switches, cut-through
    assert r.latency_s(4096.0) == pytest.approx([2 * L + S, 4 * L + 3 * S], rel=1e-12)


def test_store_and_forward_waits_for_the_packet_on_each_switch_s_ingress_link():
    p = _machine(nodes=64, nics=8, oversubscription=2.0, forwarding="store-and-forward")
    r = p.routes([0], [40 * 8])
    uplink = 32 * B / 2 / 16
    expected = 4 * L + 3 * S + 4096.0 / B + 4096.0 / uplink + 4096.0 / uplink
    assert r.latency_s(4096.0)[0] == pytest.approx(expected, rel=1e-12)


def test_no_path_between_planes_or_from_a_gpu_to_a_nic():
    p = _machine(nodes=4, nics=2, kind="leaf-spine", planes=2)
    with pytest.raises(ValueError, match="no path"):
        p.routes([0], [1])                              # NIC 0 in plane 0, NIC 1 in plane 1
    with pytest.raises(ValueError, match="no path"):
        p.routes([0], [p.vertex("n0.gpu0")])


def test_nvlink_domain_and_the_teaching_builders_route_as_their_pictures():
    node = single_node(4, 900e9)
    links, latency = node.path("n0.gpu0", "n0.gpu3", 4096.0)
    assert len(links) == 2 and latency == 0.0 and node.gpus == [f"n0.gpu{g}" for g in range(4)]
    assert node.path("n0.gpu1", "n0.gpu1", 4096.0) == ([], 0.0)
    hosts = single_switch(3, 10e9, 1e-6, 0.3e-6)
    assert hosts.path("h0", "h2", 4096.0)[1] == pytest.approx(2e-6 + 0.3e-6)
    for hops in (1, 2, 5):
        line = chain(hops, 10e9, 1e-6, 0.3e-6, "store-and-forward")
        links, latency = line.path("a", "b", 4096.0)
        assert len(links) == hops and latency == pytest.approx(hops * 1e-6 + (hops - 1) * (0.3e-6 + 4096.0 / 10e9))
    with pytest.raises(ValueError, match="forwarding"):
        chain(2, 10e9, forwarding="wormhole")


def test_with_link_rate_changes_only_the_span_given():
    node = single_node(2, 900e9)
    faster = node.with_link_rate(node.nvlink_links, 1.2e12)
    assert (faster.capacity == 1.2e12).all() and (node.capacity == 900e9).all()


def test_the_scenario_machine_s_platform_is_its_nodes_gpus_nics_and_fabric():
    sc = scenario.load(ROOT / "scenarios" / "oci-bm-gpu-h100-8x2.yaml")
    m = sc.machine
    p = build_platform(m, 900e9)
    assert (p.nodes, p.gpus_per_node, p.nics_per_node) == (m.nodes, m.gpus_per_node, m.nic.per_node)
    assert len(p.gpus) == m.nodes * m.gpus_per_node and len(p.endpoints("nic")) == m.nodes * m.nic.per_node
    one = build_platform(scenario.load(ROOT / "scenarios" / "quickstart.yaml").machine, 665e9)
    assert one.nics == 0 and one.gpus == ["n0.gpu0", "n0.gpu1"]


def test_cpu_vendor_as_nccl_reads_it():
    intel, amd, arm = (NcclTopology("hopper", 8, 2, None, 8, 50e9, cpu_vendor=v) for v in ("intel", "amd", "arm"))
    # tuning.cc: across nodes LL's ceiling is the AMD row for AMD hosts, the Intel row for every other CPU; the
    # network step overhead 2 us on x86 AMD, 1 us elsewhere
    assert tuning_table(arm) == tuning_table(intel) != tuning_table(amd)
    assert tuning_table(amd)["all_reduce"]["Ring"]["LL"][1] < tuning_table(intel)["all_reduce"]["Ring"]["LL"][1]
    assert tuning_table(amd)["all_gather"]["Ring"]["Simple"][0] > tuning_table(intel)["all_gather"]["Ring"]["Simple"][0]
    one_node = [NcclTopology("hopper", 8, 1, cpu_vendor=v) for v in ("intel", "amd")]
    assert tuning_table(one_node[0]) == tuning_table(one_node[1])   # one node: the GPU's row, no network
    assert decide(intel, "all_reduce", 2**20) == decide(arm, "all_reduce", 2**20)
    with pytest.raises(SimclusterError, match="unknown CPU vendor"):
        NcclTopology("hopper", 8, 2, None, 8, 50e9, cpu_vendor="power")


def test_cpu_vendor_is_a_strict_scenario_key(tmp_path):
    text = (ROOT / "scenarios" / "oci-bm-gpu-h100-8x2.yaml").read_text()
    assert "host: {cores: 112}" in text
    good = tmp_path / "amd.yaml"
    good.write_text(text.replace("host: {cores: 112}", "host: {cores: 112, cpu_vendor: amd}"))
    good_dir = ROOT / "scenarios"
    good.write_text(good.read_text().replace("../", f"{good_dir}/../"))
    assert scenario.load(good).machine.cpu_vendor == "amd"
    assert scenario.load(ROOT / "scenarios" / "oci-bm-gpu-h100-8x2.yaml").machine.cpu_vendor == "intel"
    bad = tmp_path / "bad.yaml"
    bad.write_text(good.read_text().replace("cpu_vendor: amd", "cpu_vendor: sparc"))
    with pytest.raises(ScenarioError, match="cpu_vendor") as err:
        scenario.load(bad)
    assert "\n" not in str(err.value)
