"""In-network (SHARP) all_reduce on a group view (collectives/in_network.group_nics; session 52 mendB52, review B52
finding 2): llm/comm prices a group across nodes on a copy of the Cluster whose gpus_per_node is the group's ranks a
node. Such a group streams through its own K g / G_wired NICs, each behind the PCIe path as the board wires it, and
no NIC faster than its own line rate.

Expected numbers by hand: sharp-quantum2-400g streams at min(port payload 400e9/8 x 4096/4126, ALU 380e9/8) =
47.5e9 B/s; a 200 Gb/s NIC under it at 200e9/8 x 4096/4126 = 24.82e9 B/s; 8 NICs a node, 8 GPUs wired, Gen5 x16
GPU ports (53.0e9 B/s payload, above both).
"""

from __future__ import annotations

import dataclasses

import pytest
from conftest import ROOT

from simcluster.cards import load_aggregation, load_collective, load_nic
from simcluster.collectives.cluster import Cluster
from simcluster.collectives.fabric import predict_fabric
from simcluster.hardware import pcie
from simcluster.heldout.registration import moe52_facts
from simcluster.network.builders import FabricSpec, machine_platform

S = 2**30
ALU = 380e9 / 8
NIC200 = 200e9 / 8 * 4096 / 4126


def cluster(nic_card: str, nodes: int = 8) -> Cluster:
    intra, _ = load_collective(ROOT / "models/collective/h200x4-nvlink.yaml")
    nic, _ = load_nic(ROOT / f"models/nic/{nic_card}.yaml")
    agg, _ = load_aggregation(ROOT / "models/switch/sharp-quantum2-400g.yaml")
    spec = FabricSpec(nodes=nodes, nics_per_node=8, nic_Bps=nic.line_rate_Bps, kind="rail-optimized", down_ports=32,
                      spines=4)
    platform = machine_platform(nodes, 8, intra.link_bandwidth_Bps, spec)
    return Cluster(intra, nic, platform, 8, aggregation=agg, gpu_pcie=pcie.parse("gen5x16"))


def innet(c: Cluster, ranks_a_node: int):
    view = dataclasses.replace(c, gpus_per_node=ranks_a_node, job_nodes=c.platform.nodes)
    return predict_fabric(view, "all_reduce", S, "in-network")


def stream_s(p) -> float:
    return p.breakdown["switch_s"] - p.breakdown["switch_latency_s"]


def test_one_rank_a_node_streams_through_its_own_nic_only():
    # 1 rank a node: one NIC carries all of S. Before, the view read as 8 NICs at 1/8 of the GPU's port each.
    p = innet(cluster("ib-ndr-400g"), 1)
    assert stream_s(p) == pytest.approx(S / ALU, rel=1e-9)
    assert p.breakdown["binding_limit"] == "switch aggregation ALU (380 Gb/s per tree)"
    q = innet(cluster("ib-ndr-400g"), 2)            # 2 ranks a node: 2 NICs, S / 2 each
    assert stream_s(q) == pytest.approx(S / 2 / ALU, rel=1e-9)
    with moe52_facts(False):                        # the switch off: the view's 8 NICs at a port / 8 each
        old = innet(cluster("ib-ndr-400g"), 1)
        port = pcie.parse("gen5x16").payload_Bps
        assert stream_s(old) == pytest.approx(S / 8 / (port / 8), rel=1e-9)


def test_a_nic_slower_than_the_switch_binds_and_200g_differs_from_400g():
    slow, fast = innet(cluster("ib-hdr-200g"), 1), innet(cluster("ib-ndr-400g"), 1)
    assert stream_s(slow) == pytest.approx(S / NIC200, rel=1e-9)
    assert stream_s(slow) >= S / (200e9 / 8)        # at least S at the NIC's line rate (review B52: 44 ms, not 20)
    assert slow.breakdown["binding_limit"] == "NIC line rate (200 Gb/s, below the switch's 400)"
    assert slow.time_s > 1.8 * fast.time_s
    # the whole node (8 ranks a node) is unchanged by the group rule; the 200G NIC still caps each NIC's S / 8
    whole = predict_fabric(cluster("ib-hdr-200g"), "all_reduce", S, "in-network")
    assert whole.breakdown["switch_s"] - whole.breakdown["switch_latency_s"] == pytest.approx(S / 8 / NIC200, rel=1e-9)


def test_a_matched_nic_and_the_whole_node_are_unchanged():
    # 400G NICs under a 400G switch with all 8 ranks a node: S / 8 a NIC at the ALU's rate, as before the mend
    p = predict_fabric(cluster("ib-ndr-400g"), "all_reduce", S, "in-network")
    assert p.breakdown["switch_s"] - p.breakdown["switch_latency_s"] == pytest.approx(S / 8 / ALU, rel=1e-9)
    with moe52_facts(False):
        q = predict_fabric(cluster("ib-ndr-400g"), "all_reduce", S, "in-network")
    assert q.time_s == p.time_s


def test_the_switch_is_settled_when_the_cluster_is_built_and_governs_the_nic_cap():
    # mendF52 (final read 52, item 3): a Cluster reads NICS_AS_WIRED once, when built; its views keep it
    built_on = cluster("ib-hdr-200g")
    with moe52_facts(False):
        built_off = cluster("ib-hdr-200g")
        kept = innet(built_on, 1)                   # built before the switch flipped: the new pricing still
    assert built_on.nics_as_wired and not built_off.nics_as_wired
    assert kept.time_s == innet(cluster("ib-hdr-200g"), 1).time_s
    old = innet(built_off, 1)                       # the old pricing whole: no NIC line-rate cap, the view's 8 NICs
    assert "below the switch's" not in old.breakdown["binding_limit"]
    assert stream_s(old) < stream_s(kept)
