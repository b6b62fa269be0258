"""Flow-level transfers: store-and-forward vs cut-through over h hops, and link sharing."""

import pytest

from simcluster.engine import Simulation
from simcluster.network.builders import chain, single_switch
from simcluster.network.flows import FlowNetwork

B, PROP, SW, PKT, M = 10e9, 1e-6, 0.3e-6, 4096.0, 1e6


def _transfer_time(topo, nbytes, packet):
    sim = Simulation()
    net = FlowNetwork(sim, topo, packet_bytes=packet)
    sim.run(until=net.transfer("a", "b", nbytes))
    return sim.now


@pytest.mark.parametrize("hops", [1, 2, 3, 5])
def test_cut_through_formula(hops):
    topo = chain(hops, B, PROP, SW, "cut-through")
    expected = hops * PROP + (hops - 1) * SW + M / B
    assert _transfer_time(topo, M, PKT) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("hops", [1, 2, 3, 5])
def test_store_and_forward_formula(hops):
    topo = chain(hops, B, PROP, SW, "store-and-forward")
    expected = hops * PROP + (hops - 1) * (SW + PKT / B) + M / B
    assert _transfer_time(topo, M, PKT) == pytest.approx(expected, rel=1e-9)


def test_two_flows_into_one_port_share_it():
    topo = single_switch(3, B)
    sim = Simulation()
    net = FlowNetwork(sim, topo)
    done = [net.transfer("h0", "h2", M), net.transfer("h1", "h2", M)]
    sim.run(until=sim.env.all_of(done))
    assert sim.now == pytest.approx(2 * M / B, rel=1e-9)


def test_a_flow_ending_speeds_up_the_other():
    topo = single_switch(3, B)
    sim = Simulation()
    net = FlowNetwork(sim, topo)
    short, long_ = net.transfer("h0", "h2", M), net.transfer("h1", "h2", 3 * M)
    sim.run(until=short)
    assert sim.now == pytest.approx(2 * M / B)
    sim.run(until=long_)
    assert sim.now == pytest.approx(4 * M / B)  # 1 MB at half rate, then 2 MB at full rate
