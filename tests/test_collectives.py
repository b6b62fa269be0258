"""Collective schedules: closed forms, and the DES agreeing with the closed form."""

import pytest

from simcluster.collectives import des
from simcluster.collectives.chunked_ring import ChunkedRingParams
from simcluster.collectives.model import predict
from simcluster.collectives.protocol import ProtocolParams
from simcluster.network.builders import single_node, single_switch

B = 100e9


def _params(latency=0.0, chunk=4 * 2**20):
    return ChunkedRingParams(B, {"Simple": ProtocolParams("Simple", 0.0, latency, 1.0, chunk)})


@pytest.mark.parametrize("n", [2, 4, 8, 16])
def test_large_ring_all_reduce_matches_bandwidth_bound(n):
    size = 2**30
    bound = 2 * (n - 1) / n * size / B
    assert predict(_params(latency=0.1e-6), "all_reduce", size, n).time_s == pytest.approx(bound, rel=0.01)
    simulated = des.simulate(_params(latency=0.1e-6, chunk=size / n / 8), single_node(n, B), "all_reduce", size, "Simple")
    assert simulated.time_s == pytest.approx(bound, rel=0.01)


@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "sendrecv",
                                "alltoall"])
@pytest.mark.parametrize("n", [2, 4])
def test_des_equals_closed_form_without_contention(op, n):
    params = ChunkedRingParams(B, {"LL": ProtocolParams("LL", 5e-6, 0.6e-6, 0.5, 64 * 1024)})
    size = 16 * 2**20  # whole number of chunks per segment
    closed = predict(params, op, size, n)
    simulated = des.simulate(params, single_node(n, B), op, size, "LL")
    assert simulated.time_s == pytest.approx(closed.time_s, rel=1e-9)


def test_busbw_is_wire_bytes_over_time():
    p = predict(_params(), "all_gather", 2**30, 4)
    assert p.busbw_Bps == pytest.approx(B, rel=0.01)


def test_contention_slows_a_ring_sharing_its_links():
    # a long transfer h0 -> h1 shares the ring's h0 -> h1 hop: that hop runs at half rate
    topo = single_switch(4, B)
    params = _params(chunk=2**20)
    alone = des.simulate(params, topo, "all_gather", 64 * 2**20, "Simple")
    from simcluster.engine import Simulation
    from simcluster.network.flows import FlowNetwork

    sim = Simulation()
    net = FlowNetwork(sim, topo)
    blocker = net.transfer("h0", "h1", 10 * 2**30)  # a long transfer on h0's port
    shared = des.simulate(params, topo, "all_gather", 64 * 2**20, "Simple", net=net)
    assert shared.time_s > alone.time_s * 1.5
    assert not blocker.triggered


def test_protocol_choice_is_size_based():
    params = ChunkedRingParams(B, {"LL": ProtocolParams("LL", 5e-6, 0.6e-6, 0.5, 64 * 1024),
                                  "Simple": ProtocolParams("Simple", 20e-6, 3.4e-6, 1.0, 2**20)})
    assert predict(params, "all_reduce", 1024, 2).protocol == "LL"
    assert predict(params, "all_reduce", 2**30, 2).protocol == "Simple"
