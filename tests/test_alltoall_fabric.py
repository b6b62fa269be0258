"""alltoall and sendrecv across nodes: NCCL's point-to-point traffic priced on the fabric (collectives/alltoall.py).

Every expected number below is computed by hand from the equations in docs/models/fabric.md, not read off a run:
a 400G RoCE NIC card carries r = 400e9 / 8 x 0.973 = 48.65e9 B/s; an alltoall of S bytes per rank on N nodes of
G = 8 GPUs sends S (n - G) / n of each GPU's bytes across the network, through its own NIC (8 NICs per node).
"""

from __future__ import annotations

import dataclasses

import pytest
from conftest import ROOT

from simcluster.cards import load_collective, load_nic
from simcluster.collectives.alltoall import node_shifts, p2p_rounds
from simcluster.collectives.cluster import Cluster
from simcluster.collectives.fabric import predict_fabric
from simcluster.collectives.ring_flows import ring_flows
from simcluster.errors import SimclusterError
from simcluster.network.builders import FabricSpec, machine_platform

S = 2**30
R = 400e9 / 8 * 0.973          # the roce-400g card's payload rate, bytes/s
PORT = 400e9 / 8               # its line rate: the platform's link capacity per NIC


def cluster(nodes: int, kind: str = "rail-optimized", down_ports: int = 32, oversubscription: float = 1.0,
            pxn: bool = True) -> Cluster:
    intra, _ = load_collective(ROOT / "models/collective/h200x4-nvlink.yaml")
    nic, _ = load_nic(ROOT / "models/nic/roce-400g.yaml")
    spec = FabricSpec(nodes=nodes, nics_per_node=8, nic_Bps=PORT, kind=kind, down_ports=down_ports, spines=4,
                      oversubscription=oversubscription)
    platform = machine_platform(nodes, 8, intra.link_bandwidth_Bps, spec)
    return Cluster(intra, nic, platform, 8, pxn=pxn)


def alltoall(c: Cluster, size: int = S):
    return predict_fabric(c, "alltoall", size)


@pytest.mark.parametrize("nodes, fraction", [(2, 8 / 16), (4, 24 / 32)])
def test_network_term_is_each_gpus_remote_bytes_over_its_own_nic(nodes, fraction):
    # non-blocking rail-optimized fabric: phi = 1, the NIC bounds the call (2 x 8: S/2 per GPU; 4 x 8: 3S/4)
    p = alltoall(cluster(nodes))
    assert p.algorithm == "alltoall" and p.protocol == "Simple"
    assert p.breakdown["fabric_excess"] == 1.0
    assert p.breakdown["network_s"] == pytest.approx(fraction * S / R, rel=1e-12)
    assert p.breakdown["network_s"] > p.breakdown["nvlink_s"]
    # busbw = S/T x (n-1)/n: at 2 nodes about twice one NIC (nccl-tests#130: N/(N-1) x a GPU's network rate)
    assert p.busbw_Bps == pytest.approx(R / fraction * (8 * nodes - 1) / (8 * nodes), rel=0.01)


def test_rail_fabric_without_pxn_crosses_rails_through_the_spines():
    # 2 x 8, a rail leaf holds the two nodes' NIC j (down_ports 2), 2:1 oversubscribed: a leaf's uplinks carry
    # 2 x 50 GB/s / 2 = 50 GB/s. Without PXN each NIC sends 7/8 of its bytes to other rails: 2 x 7/8 x r up.
    # With PXN every flow stays on its rail leaf: the NICs bound it.
    pxn = alltoall(cluster(2, down_ports=2, oversubscription=2.0))
    off = alltoall(cluster(2, down_ports=2, oversubscription=2.0, pxn=False))
    assert pxn.breakdown["fabric_excess"] == 1.0
    assert off.breakdown["fabric_excess"] == pytest.approx(2 * 7 / 8 * R / (2 * PORT / 2), rel=1e-9)   # 1.7029
    assert off.breakdown["network_s"] == pytest.approx(S / 2 / R * 1.75 * R / PORT, rel=1e-9)


def test_four_nodes_on_two_rail_leaves_oversubscribed():
    # 4 x 8, rail leaves of 2 nodes, PXN: of the node shifts 1, 2, 3 half, all and half of the pairs leave the
    # leaf (2/3 on average); a leaf's uplinks carry 2 NICs x 2/3 x r against 2 x 50 GB/s / oversubscription
    for over, excess in ((1.0, 1.0), (2.0, 2 * 2 / 3 * R / PORT)):
        p = alltoall(cluster(4, down_ports=2, oversubscription=over))
        assert p.breakdown["fabric_excess"] == pytest.approx(excess, rel=1e-9)
        assert p.breakdown["network_s"] == pytest.approx(0.75 * S / R * excess, rel=1e-9)


@pytest.mark.parametrize("nodes", [2, 4])
def test_leaf_spine_one_node_per_leaf_sends_everything_through_the_spine(nodes):
    # leaf-spine, 8 ports per leaf: each node is one leaf, all remote bytes go up: 8 r against 8 x 50 GB/s / 2
    p = alltoall(cluster(nodes, kind="leaf-spine", down_ports=8, oversubscription=2.0))
    assert p.breakdown["fabric_excess"] == pytest.approx(8 * R / (8 * PORT / 2), rel=1e-9)     # 1.946
    remote = (8 * nodes - 8) / (8 * nodes)
    assert p.breakdown["network_s"] == pytest.approx(remote * S / R * 2 * R / PORT, rel=1e-9)


def test_sendrecv_across_nodes_moves_through_one_nic():
    # nccl-tests' sendrecv on 2 x 8: the two node-crossing pairs send S each through one NIC
    c = cluster(2)
    p = predict_fabric(c, "sendrecv", S)
    assert p.algorithm == "p2p"
    assert p.breakdown["bandwidth_Bps"] == pytest.approx(R, rel=1e-9)
    assert p.time_s == pytest.approx(c.intra.base_latency_s + S / R + p.breakdown["step_latency_inter_s"], rel=1e-9)


def test_one_node_keeps_the_ring_path():
    # a one-node view of the fabric prices p2p ops as before (the ring form); only calls across nodes change
    c = dataclasses.replace(cluster(2), job_nodes=1)
    assert predict_fabric(c, "alltoall", S).algorithm == "ring"


def test_impossible_combinations_are_one_line_errors():
    c = cluster(2)
    with pytest.raises(SimclusterError, match="does not apply to alltoall"):
        predict_fabric(c, "alltoall", S, "ring")        # NCCL never runs alltoall as a ring
    with pytest.raises(SimclusterError, match="does not apply to all_reduce"):
        predict_fabric(c, "all_reduce", S, "alltoall")
    too_many = dataclasses.replace(c, job_nodes=3)
    with pytest.raises(SimclusterError, match="alltoall over 3 nodes on a machine of 2"):
        predict_fabric(too_many, "alltoall", S, None, ring_flows(c))


def test_node_shifts_and_rounds():
    assert list(node_shifts(4, 10)) == [1, 2, 3]
    many = node_shifts(2048, 2048 * 8)          # 16,384 GPUs with PXN: 16 shifts spread over 1..2047
    assert len(many) == 16 and many[0] == 1 and many[-1] == 2047
    assert p2p_rounds(16, 16) == 1              # 15 peers, 8 per channel x 16 channels: one round
    assert p2p_rounds(16384, 24) == 64          # 16,383 peers / (8 x 32)


def test_deterministic():
    a, b = alltoall(cluster(4, down_ports=2, oversubscription=2.0)), alltoall(cluster(4, down_ports=2, oversubscription=2.0))
    assert a.time_s == b.time_s


def test_a_group_view_with_fewer_ranks_a_node_keeps_each_gpus_own_nic():
    # session 52 moe52: llm/comm prices an EP group of 2 ranks a node (EP 8, 4 apart, on 4 nodes) on a copy of the
    # Cluster with gpus_per_node 2. Behind a Gen5 x16 GPU port (53.0e9 B/s payload, above R) each GPU keeps its own
    # 400G NIC: R per GPU, (n - G) / n = 6/8 of S over it. Before moe52 the copy read as 2 GPU ports for 8 NICs: each NIC
    # at a quarter of a port, K r / G_node = 8 x 53.0e9 / 4 / 8 per GPU.
    from simcluster.hardware import pcie
    from simcluster.heldout.registration import moe52_facts

    port = pcie.parse("gen5x16").payload_Bps
    full = dataclasses.replace(cluster(4), gpu_pcie=pcie.parse("gen5x16"))
    view = dataclasses.replace(full, gpus_per_node=2, job_nodes=4)
    size = 25_165_824
    p = predict_fabric(view, "alltoall", size)
    assert p.breakdown["network_Bps_per_gpu"] == pytest.approx(R, rel=1e-12)
    assert p.breakdown["network_s"] == pytest.approx(size * 6 / 8 / R, rel=1e-12)
    assert p.breakdown["binding_limit"].startswith("NIC line rate (400 Gb/s")
    with moe52_facts(False):                    # a Cluster reads the switch when built (mendF52): build it inside
        old = dataclasses.replace(cluster(4), gpu_pcie=pcie.parse("gen5x16"), gpus_per_node=2, job_nodes=4)
        q = predict_fabric(old, "alltoall", size)
        assert q.breakdown["network_Bps_per_gpu"] == pytest.approx(port / 4, rel=1e-12)
        assert q.breakdown["binding_limit"] == "PCIe Gen5 x16 between GPU and NIC (one GPU's port for 4 NICs)"
        # the whole node (G = 8 ranks a node) is the same either way: one NIC per GPU, R
        assert predict_fabric(full, "alltoall", size).breakdown["network_Bps_per_gpu"] == pytest.approx(R, rel=1e-12)
    # the rings' node share reads the Cluster's own limit, unchanged by the switch; a view keeps its Cluster's setting
    assert view.nic_limit == old.nic_limit
    with moe52_facts(False):
        assert predict_fabric(dataclasses.replace(full, gpus_per_node=2, job_nodes=4), "alltoall", size).time_s == p.time_s
