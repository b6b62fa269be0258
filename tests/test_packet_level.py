"""The packet-level reference (simcluster/packet/): the ns-3 input pins every flow to the spine the flow model's ECMP
hash chose, the patterns' flow-model times against closed forms, and (with the `packet` extra installed) a tiny ns-3
run against the flow model."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import ROOT

from simcluster.cli import main
from simcluster.network.builders import FabricSpec, machine_platform
from simcluster.packet import patterns, topology
from simcluster.packet.compare import MTU, ns3_available

B = 12.5e9


def _platform(hosts=16, per_leaf=4, spines=4, over=1.0, nics=1, kind="leaf-spine", forwarding="store-and-forward"):
    spec = FabricSpec(hosts, nics, B, kind, down_ports=per_leaf, spines=spines, oversubscription=over,
                      link_latency_s=100e-9, switch_latency_s=600e-9, forwarding=forwarding)
    return machine_platform(hosts, 0, 0.0, spec)


def _walk(net: topology.Network, flow: int) -> list[int]:
    """The ns-3 links a flow's packets take under the Network's static routes (longest prefix match)."""
    node, dest, links = net.flow_src[flow], net.flow_dst_addr[flow], []
    while node != net.flow_dst[flow]:
        best = None
        for n, d, p, link in zip(net.route_node, net.route_dest, net.route_prefix, net.route_link, strict=True):
            mask = 0 if p == 0 else (0xFFFFFFFF << (32 - p)) & 0xFFFFFFFF
            if n == node and dest & mask == d and (best is None or p > best[0]):
                best = (p, link)
        assert best is not None, f"no route at node {node}"
        links.append(best[1])
        a, b = net.link_a[best[1]], net.link_b[best[1]]
        node = b if node == a else a
        assert len(links) < 10
    return links


@pytest.mark.parametrize("kind,nics,over", [("leaf-spine", 1, 2.0), ("leaf-spine", 1, 1.0), ("rail-optimized", 2, 2.0)])
def test_ns3_routes_follow_the_flow_models_ecmp_choice(kind, nics, over):
    plat = _platform(hosts=8 if nics == 2 else 16, per_leaf=4, over=over, nics=nics, kind=kind)
    t = patterns.traffic(plat, "alltoall", 1.0)
    net = topology.network(plat, t.src, t.dst, t.nbytes)
    _, lb, sb = topology.fabric_blocks(plat)
    routes = plat.routes(t.src, t.dst)
    spines_used = set()
    for f in range(len(t.src)):
        links = _walk(net, f)
        expected = routes.link_idx[routes.flow_idx == f]
        assert len(links) == len(expected)          # same hop count: 2 inside a leaf, 4 across
        up = [int(x) for x in expected if lb.up <= x < lb.down]
        if up:
            k = (up[0] - lb.up) % lb.width
            spine = net.hosts + lb.count + k          # one plane
            assert spine in (net.link_b[links[1]], net.link_a[links[1]])   # the same spine as the flow model's hash
            spines_used.add(k)
            # the ACKs come back through that spine too: the source address names it
            assert (net.flow_src_addr[f] >> 16) & 0xFF == k + 1
    assert len(spines_used) == lb.width > 1          # the hash spreads flows over every uplink


def test_network_links_carry_the_platforms_rates_and_latencies():
    plat = _platform(over=2.0)
    net = topology.network(plat, [0], [5], [1.0])
    hosts, leaves = 16, 4
    assert net.nodes == hosts + leaves + 2                 # 2:1 with 4 ports per leaf: 2 uplinks, 2 spines
    assert net.link_bps[:hosts] == [B * 8] * hosts
    # a cross-leaf path: 4 links, 3 switches: 4 x 100 ns + 3 x 600 ns, as Routes.latency_s without the packet
    path = _walk(net, 0)
    assert sum(net.link_delay_s[x] for x in path) == pytest.approx(4 * 100e-9 + 3 * 600e-9)
    r = plat.routes(np.array([0]), np.array([5]))
    assert sum(net.link_delay_s[x] for x in path) == pytest.approx(float(r.latency_s(0.0)[0]))


def test_flow_model_side_against_closed_forms():
    plat = _platform(forwarding="cut-through")
    m = 4 * 2**20
    ring = patterns.traffic(plat, "ring", m)
    _, finish = patterns.flow_model(plat, ring, MTU)
    cross = 4 * 100e-9 + 3 * 600e-9
    assert finish.max() == pytest.approx(m / B + cross)         # a non-blocking ring: every hop at line rate
    incast = patterns.traffic(plat, "incast", m)
    _, finish = patterns.flow_model(plat, incast, MTU)
    assert len(incast.src) == patterns.INCAST_SENDERS
    local = 2 * 100e-9 + 600e-9   # the receiver's port is busy from the first (same-leaf) sender's arrival on
    assert finish.max() == pytest.approx(8 * m / B + local, rel=1e-6)   # 8 senders share the receiver's port
    steps = patterns.traffic(plat, "ring-steps", m)
    _, finish = patterns.flow_model(plat, steps, MTU)
    assert len(steps.deps) == (patterns.RING_STEPS - 1) * 16
    # each step waits for the one before it into its sender: the slowest chain is 3 hops inside a leaf, then 1 across
    assert finish.max() == pytest.approx(m / B + (patterns.RING_STEPS - 1) * local + cross)
    strided = patterns.traffic(plat, "ring-strided", m)
    assert np.all(topology.flow_spines(plat, strided.src, strided.dst) >= 0)   # every hop crosses the spines


def test_packet_level_refuses_other_inputs_and_reports_a_missing_extra(capsys):
    scenario = str(ROOT / "scenarios/whatif/100g-vs-400g.yaml")
    assert main(["validate", "--packet-level", scenario, "--card", "x.yaml"]) == 2
    assert "--card does not apply" in capsys.readouterr().err
    ok, why = ns3_available()
    if not ok:
        assert main(["validate", "--packet-level", scenario]) == 2
        assert "pip install -e '.[packet]'" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.skipif(not ns3_available()[0], reason=ns3_available()[1] or "ns-3 installed")
def test_tiny_fabric_in_ns3_against_the_flow_model():
    """4 hosts, 2 leaves, 2:1 (one uplink per leaf): a ring step and an incast of 1 MiB per flow, ns-3 against the
    flow model, no packet dropped (ns-3 import and driver: about 20 s)."""
    from simcluster.packet.compare import compare

    plat = _platform(hosts=4, per_leaf=2, spines=2, over=2.0)
    for pattern in ("ring", "incast"):
        row = compare(plat, "tiny", pattern, 2**20, 2.0)
        assert np.isfinite(row.packet_s)
        assert row.packet_s > (row.flows if pattern == "incast" else 1) * 2**20 / B   # no faster than the wire
        assert abs(row.error_pct) < 10, row
        assert row.packet_drops == 0                                 # deep queues and ECN: lossless
    from simcluster.packet import ns3_run  # the drop count is real: a 3-packet queue under a 3-to-1 incast drops

    t = patterns.traffic(plat, "incast", 2**20)
    _, finish, drops = ns3_run.run(topology.network(plat, t.src, t.dst, t.nbytes, queue_packets=3), 1.0)
    assert drops > 0


def test_scenario_traffic_sizes_and_the_summary(monkeypatch):
    """--packet-level SCENARIO: each variant's Platform, 1 MiB and the full message per flow (the DDP bucket's bytes per
    NIC in one ring all_reduce), and a mean |error| over the rows of at least 1 MiB per flow only (ns-3 stubbed)."""
    from simcluster.packet import compare as cmp

    calls = []

    def fake(platform, fabric, pattern, size, over):
        calls.append((fabric, pattern, size, platform.nics))
        packet = 1.0 if size >= 2**20 else 2.0
        return cmp.Row(fabric, pattern, platform.nics, over, size, 1, 1.1, packet, 1.1, "cut-through", 0.0)

    monkeypatch.setattr(cmp, "compare", fake)
    result = cmp.validate_scenario(ROOT / "scenarios/whatif/100g-vs-400g.yaml", ("ring", "alltoall"))
    full = 2 * 7 / 8 * 25 * 2**20      # 8 nodes, one NIC each, ResNet-50's 25 MiB bucket
    assert {(f, p, s) for f, p, s, _ in calls} == {
        (f"whatif-100g-vs-400g:{v}", p, s) for v in ("100g", "400g")
        for p, s in (("ring", 2**20), ("ring", full), ("alltoall", 2**20), ("alltoall", full / 7))}
    assert all(n == 8 for *_, n in calls)
    assert result.to_json()["mean_abs_error_pct"] == pytest.approx(10.0)
    result.rows.append(cmp.Row("x", "ring-steps", 8, 1.0, 2**18, 1, 1.0, 2.0, 1.0, "cut-through", 0.0))   # -50%, 256 KiB
    assert result.mean_abs_error_pct() == pytest.approx(10.0)
    assert "mean |error| at >= 1 MiB per flow: 10.0%" in result.text()
    result.rows.append(cmp.Row("x", "ring", 8, 1.0, 2**20, 1, 1.0, float("nan"), 1.0, "cut-through", 0.0))   # ns-3 stopped first
    assert result.to_json()["rows"][-1]["packet_level_s"] is None and result.mean_abs_error_pct() == pytest.approx(10.0)


def test_large_fabrics_run_scaled_down_flows(tmp_path, monkeypatch):
    """Above 64 NICs the full message per flow is scaled by 64 / NICs (at least 1 MiB), and the note says so."""
    from simcluster.packet import compare as cmp

    text = (ROOT / "scenarios/whatif/100g-vs-400g.yaml").read_text().replace("../../", str(ROOT) + "/")
    path = tmp_path / "big.yaml"
    path.write_text(text.replace("nodes: 8\n", "nodes: 128\n"))
    sizes = []
    monkeypatch.setattr(cmp, "compare", lambda platform, fabric, pattern, size, over: sizes.append(size)
                        or cmp.Row(fabric, pattern, platform.nics, over, size, 1, 1.0, 1.0, 1.0, "cut-through", 0.0))
    result = cmp.validate_scenario(path, ("ring",))
    full = 2 * 127 / 128 * 25 * 2**20
    assert sorted(set(sizes)) == pytest.approx([2**20, full * 64 / 128])
    assert any("128 NICs: flows scaled x0.5" in n for n in result.notes)
