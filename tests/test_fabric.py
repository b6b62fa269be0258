"""Fabric: topologies, NIC/CPU models, multi-node collectives, in-network aggregation, seed figures."""

from __future__ import annotations

import dataclasses
import json

import networkx as nx
import numpy as np
import pytest
from conftest import ROOT

from simcluster import scenario
from simcluster.cards import load_aggregation, load_collective, load_nic
from simcluster.cli import main
from simcluster.collectives.cluster import Cluster
from simcluster.collectives.fabric import predict_fabric
from simcluster.collectives.ring_flows import ring_flows
from simcluster.collectives.schedule import _btree_parents, tree_node_load
from simcluster.hardware.cpu import HostCpu
from simcluster.machine_models import build_cluster
from simcluster.network.builders import FabricSpec, machine_platform
from simcluster.network.platform import Platform, bisection_Bps

NIC = ROOT / "models" / "nic"
B = 12.5e9  # 100 Gb/s in bytes/s


def fabric(gpus_per_node: int = 1, **kw) -> Platform:
    spec = FabricSpec(**{**dict(nodes=8, nics_per_node=1, nic_Bps=B, kind="leaf-spine", down_ports=4, spines=2), **kw})
    return machine_platform(spec.nodes, gpus_per_node, 900e9, spec)


@pytest.mark.parametrize("kind", ["leaf-spine", "rail-optimized"])
def test_fabric_is_connected(kind):
    # the NICs, leaves and spines are one strongly connected fabric; every node's GPUs and NVSwitch its own domain
    platform = fabric(gpus_per_node=4, kind=kind, nics_per_node=2)
    parts = list(nx.strongly_connected_components(platform.graph()))
    assert len(parts) == 1 + platform.nodes
    nics = set(platform.endpoints("nic"))
    assert len(nics) == 16 and any(nics <= part for part in parts)
    assert all({f"n{n}.gpu{g}" for g in range(4)} | {f"n{n}.nvswitch"} in parts for n in range(platform.nodes))


def test_bisection_non_blocking_and_oversubscribed():
    # 8 NICs on 2 leaves of 4: the halves are the two leaves, every byte crosses the spines
    assert bisection_Bps(fabric()) == pytest.approx(4 * B)
    assert bisection_Bps(fabric(oversubscription=3.0)) == pytest.approx(4 * B / 3)


def test_rail_optimized_keeps_a_rail_inside_its_leaf():
    fab = fabric(kind="rail-optimized", nics_per_node=4, down_ports=8)
    src = fab.nic(np.arange(8), np.full(8, 2))
    dst = fab.nic((np.arange(8) + 1) % 8, np.full(8, 2))
    hops = fab.routes(src, dst).hops
    assert (hops == 1).all()  # same rail, same leaf: NIC -> leaf -> NIC
    cross = fab.routes(fab.nic(np.array([0]), np.array([0])), fab.nic(np.array([1]), np.array([1]))).hops
    assert cross[0] == 3  # different rails meet at a spine


def test_ecmp_is_deterministic_and_collisions_are_counted():
    fab = fabric(nodes=16, down_ports=8, spines=4)
    src, dst = np.arange(16), (np.arange(16) + 8) % 16
    a, b = fab.routes(src, dst), fab.routes(src, dst)
    assert all((getattr(a, x) == getattr(b, x)).all() for x in ("flow_idx", "link_idx", "hops"))
    # 4 nodes x 2 NICs, 2 leaves, 1 spine, 4:1: both rails' hops out of each leaf share its one
    # uplink of B and, at the far leaf, one spine downlink: 4 shared links, each colliding flow gets B / 2
    intra, _ = load_collective(ROOT / "models/collective/h200x4-nvlink.yaml")
    nic, _ = load_nic(NIC / "seed000-roce-100g.yaml")
    flows = ring_flows(Cluster(intra, nic, fabric(nodes=4, nics_per_node=2, spines=1, oversubscription=4.0), 1))
    assert flows.ecmp_collisions == 4
    rates = flows.flow_rates_Bps.reshape(4, 2)
    assert rates[[1, 3]] == pytest.approx(np.full((2, 2), B / 2))  # node 1 -> 2 and node 3 -> 0 cross the spine
    assert rates[[0, 2]] == pytest.approx(np.full((2, 2), nic.wire_limit_Bps))  # inside a leaf


def test_forcing_an_algorithm_that_does_not_apply_is_a_one_line_error(capsys):
    rc = main(["predict", "collective", "--scenario", str(ROOT / "scenarios/oci-bm-gpu-h100-8x2.yaml"),
               "--op", "all_reduce", "-b", "1M", "-e", "1M", "--algorithm", "in-network"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "in-network" in err and "Traceback" not in err


def test_binary_tree_matches_the_picture_in_nccl_trees_cc():
    # the 14-rank tree drawn in NCCL's src/graph/trees.cc: 0-8, 8-{4,12}, 4-{2,6}, 12-{10,13},
    # 2-{1,3}, 6-{5,7}, 10-{9,11}
    drawn = {8: 0, 4: 8, 12: 8, 2: 4, 6: 4, 10: 12, 13: 12, 1: 2, 3: 2, 5: 6, 7: 6, 9: 10, 11: 10}
    parents = _btree_parents(14)
    assert parents[0] == -1 and {r: int(parents[r]) for r in range(1, 14)} == drawn


@pytest.mark.parametrize("nodes, load", [(2, 1.0), (3, 1.5), (4, 2.0), (7, 2.0), (16, 2.0), (2048, 2.0)])
def test_double_binary_tree_node_load(nodes, load):
    # 2 nodes: each is the other's parent in one tree (S/2 up, S/2 down each way); from 4 nodes on some
    # node has two children in one tree and a parent in both: S/2 x (1 + 2 + 1) out
    assert tree_node_load(nodes) == load


def test_tree_is_not_faster_than_the_busiest_node_s_nics():
    # 16 nodes x 8 GPUs, one 100G NIC each, non-blocking: a large all_reduce on the double binary
    # tree sends 2 S through the busiest node's NIC, as much as a ring (2(N-1)/N S); in-network
    # aggregation sends S, so it must come out ~2x faster on the network-bound part
    intra, _ = load_collective(ROOT / "models/collective/h200x4-nvlink.yaml")
    nic, _ = load_nic(NIC / "seed000-roce-100g.yaml")
    agg, _ = load_aggregation(ROOT / "models/switch/sharp-streaming-100g.yaml")
    cluster = Cluster(intra, nic, fabric(8, nodes=16, down_ports=16, spines=4), 8, aggregation=agg)
    size = 2**30
    b_net = ring_flows(cluster).node_rate_Bps
    tree = predict_fabric(cluster, "all_reduce", size, algorithm="tree")
    ring = predict_fabric(cluster, "all_reduce", size, algorithm="ring")
    inc = predict_fabric(cluster, "all_reduce", size, algorithm="in-network")
    assert tree.time_s >= 2 * size / b_net
    assert ring.time_s >= 2 * 15 / 16 * size / b_net
    assert 1.7 < tree.time_s / inc.time_s < 2.1


def test_oversubscription_slows_a_ring_that_crosses_the_spine():
    intra, _ = load_collective(ROOT / "models/collective/h200x4-nvlink.yaml")
    nic, _ = load_nic(NIC / "seed000-roce-100g.yaml")
    # every node on its own leaf: every ring hop crosses the spine
    full = ring_flows(Cluster(intra, nic, fabric(down_ports=1, spines=1), 1)).node_rate_Bps
    over = ring_flows(Cluster(intra, nic, fabric(down_ports=1, spines=1, oversubscription=3.0), 1)).node_rate_Bps
    assert over == pytest.approx(B / 3)
    assert full == pytest.approx(nic.wire_limit_Bps)


def test_seed000_rdma_vs_tcp_ratios_from_the_cards():
    rdma, _ = load_nic(NIC / "seed000-roce-100g.yaml")
    tcp, _ = load_nic(NIC / "seed000-tcp-100g.yaml")
    ratio = rdma.rate_Bps() / tcp.rate_Bps()  # one qperf stream each
    assert ratio == pytest.approx(5.8, rel=0.02)  # seed 000: "about 5.8x"
    assert 1 - rdma.latency_s / tcp.latency_s == pytest.approx(0.60, abs=0.03)  # "about 60% lower"


def test_tcp_becomes_cpu_bound_when_cores_saturate():
    tcp, _ = load_nic(NIC / "seed000-tcp-100g.yaml")
    one = tcp.rate_Bps(streams=1)
    assert tcp.rate_Bps(streams=2) == pytest.approx(2 * one)
    assert tcp.rate_Bps(streams=16) == pytest.approx(tcp.wire_limit_Bps)  # enough cores: the wire limits
    assert tcp.rate_Bps(streams=16, cores_free=2.0) == pytest.approx(2 * one)  # only 2 cores left
    host = HostCpu(8.0)
    wants = {"tcp": tcp.cores_used(tcp.wire_limit_Bps), "loader": 6.0}
    got = host.share(wants)
    assert sum(got.values()) == pytest.approx(8.0)
    assert got["tcp"] < wants["tcp"]  # the transport no longer gets what the wire allows
    assert tcp.rate_Bps(streams=16, cores_free=got["tcp"]) < tcp.wire_limit_Bps


def test_seed004_offload_vs_onload_cpu_share():
    cores = 28.0  # the host assumed by both cards
    ib, _ = load_nic(NIC / "seed004-ib-edr-offload.yaml")
    opa, _ = load_nic(NIC / "seed004-opa-onload.yaml")
    rate_ib, rate_opa = ib.rate_Bps(streams=28, cores_free=cores), opa.rate_Bps(streams=28, cores_free=cores)
    assert rate_opa * 8 / 1e9 == pytest.approx(94.9, abs=0.5)  # "just under 95 Gb/s"
    assert ib.cores_used(12.5e9) / cores == pytest.approx(0.008, abs=0.001)  # at 100 Gb/s
    assert 1 - opa.cores_used(rate_opa) / cores == pytest.approx(0.404, abs=0.01)  # application keeps 40.4%
    assert rate_ib > rate_opa


def _aggregation(name):
    return load_aggregation(ROOT / "models" / "switch" / f"{name}.yaml")[0]


def test_seed003_cut_through_vs_store_and_forward():
    ct, sf = _aggregation("seed003-fpga-cut-through-10g"), _aggregation("seed003-sharp-store-and-forward-100g")
    # cut-through reaches wire speed: 9.62 Gb/s from 10 GbE framing (1480 / 1538), within 1%
    assert ct.throughput_Bps(100e6) * 8 / 1e9 == pytest.approx(9.62, rel=0.01)
    assert all(ct.throughput_Bps(s) * 8 / 1e9 == pytest.approx(9.62, rel=0.03) for s in (2**20, 2**24))
    # the paper has 9.62 from 64 KB on; the model's fixed latency still costs 19% there (a known miss)
    assert ct.throughput_Bps(65536) * 8 / 1e9 > 7.5
    # store-and-forward wins small messages, cut-through large; the crossover near 8 KB
    sizes = np.geomspace(256, 1e8, 200)
    sf_faster = np.array([sf.allreduce_time_s(s) < ct.allreduce_time_s(s) for s in sizes])
    crossover = sizes[np.argmin(sf_faster)]
    assert sf_faster[0] and not sf_faster[-1] and 4096 <= crossover <= 16384
    assert sf.allreduce_time_s(4096) < ct.allreduce_time_s(4096)  # "SHArP cuts latency below 5 KB"
    # ~65% lower latency at ~100 MB (ResNet-50's gradients)
    assert 1 - ct.allreduce_time_s(100e6) / sf.allreduce_time_s(100e6) == pytest.approx(0.65, abs=0.05)


def test_seed002_prediction_error_is_bounded():
    """Seed 002's busbw (446-465 GB/s) vs the prediction from cards alone. With the published NVLS
    figures (models/nvswitch/h100-nvls.yaml) NCCL's NVLSTree is chosen; capped by NCCL's own NVLS-tree
    kernel ceiling (tuning.cc perChMaxNVLSTreeBws, issue 23) it is within -0.7..+1.9% (+10..+15% without the
    cap). Not held out: this run was seen when the cap was added. Without NVLS NCCL's choice (ring)
    under-predicts by -23..-26%. This guards both errors and the algorithm choice."""
    measured = [446.28, 456.22, 461.83, 463.90, 464.57]
    sc = scenario.load(ROOT / "scenarios" / "oci-bm-gpu-h100-8x2.yaml")
    cluster = build_cluster(sc.machine)
    flows = ring_flows(cluster)
    assert flows.node_rate_Bps == pytest.approx(16 * 25e9 * 0.973)
    preds = [predict_fabric(cluster, "all_reduce", 2**30 << i, flows=flows) for i in range(len(measured))]
    assert {p.algorithm for p in preds} == {"nvls-tree"}
    errors = [p.busbw_Bps / 1e9 / m - 1 for p, m in zip(preds, measured, strict=True)]
    assert all(-0.03 < e < 0.03 for e in errors)
    without = dataclasses.replace(cluster, nvls=None)
    errors = [predict_fabric(without, "all_reduce", 2**30 << i, flows=flows).busbw_Bps / 1e9 / m - 1
              for i, m in enumerate(measured)]
    assert all(-0.30 < e < -0.15 for e in errors)


@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "sendrecv", "alltoall"])
def test_predict_collective_scenario_every_op(op, capsys):
    rc = main(["predict", "collective", "--scenario", str(ROOT / "scenarios/oci-bm-gpu-h100-8x2.yaml"),
               "--op", op, "-b", "1M", "-e", "16M", "-f", "4"])
    out = capsys.readouterr().out
    assert rc == 0
    rows = [line.split() for line in out.splitlines() if line and not line.startswith("#")]
    assert [int(r[0]) for r in rows] == [2**20, 2**22, 2**24]
    assert all(float(r[5]) > 0 for r in rows)


def test_multi_node_machine_without_nic_is_a_one_line_error(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"name: x\nmachine:\n  card: {ROOT}/models/collective/h200x4-nvlink.yaml\n  gpus_per_node: 8\n"
                   "  nodes: 2\njobs:\n  - {kind: collective_sweep, op: all_reduce}\n")
    assert main(["run", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "bad.yaml:2" in err and "nic" in err


def test_fabric_typo_is_a_one_line_error(tmp_path, capsys):
    text = (ROOT / "scenarios/oci-bm-gpu-h100-8x2.yaml").read_text().replace("switch_latency: 600ns", "switch_latency: 600nz")
    text = text.replace("../models", str(ROOT / "models"))
    bad = tmp_path / "typo.yaml"
    bad.write_text(text)
    assert main(["run", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert "machine.fabric.switch_latency" in err and len(err.splitlines()) == 1


def test_concurrent_jobs_share_the_spine(capsys):
    """Two 8-node jobs at 3:1 on leaves of 4 ports (one uplink of 4/3 ports each): packed on their own leaves they do
    not slow each other; interleaved, every other ring hop leaves the leaf, the two jobs' crossing flows share its one
    uplink (each gets half of 4 x 100G / 3), and both slow down, with the shared links reported."""
    assert main(["run", str(ROOT / "scenarios" / "concurrent-jobs.yaml"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    packed, interleaved = (v["jobs"][0]["jobs"] for v in doc["variants"])
    assert all(j["slowdown"] == pytest.approx(1.0) and j["ecmp_collisions"] == 0 for j in packed)
    uplink_half = 4 * 100e9 / 8 / 3 / 2
    for j in interleaved:
        assert j["network_shared_Bps"] == pytest.approx(uplink_half, rel=1e-6) and j["ecmp_collisions"] > 0
        assert j["slowdown"] == pytest.approx(j["network_alone_Bps"] / uplink_half, rel=0.02)


@pytest.mark.parametrize("op,groups,expect", [("all_reduce", '["0-7", "7-15"]', "two jobs"), ("all_reduce", '["0-7", "8-16"]', "0..15"),
                                              ("all_reduce", '["0-7", "x"]', "node range"),
                                              ("alltoall", '["0-15/2", "1-15/2"]', "alltoall in concurrent jobs is not modelled")])
def test_concurrent_bad_groups_are_one_line(tmp_path, capsys, op, groups, expect):
    text = (ROOT / "scenarios" / "concurrent-jobs.yaml").read_text().replace("../", str(ROOT) + "/")
    text = text.split("variants:")[0] + f"jobs:\n  - {{kind: concurrent, op: {op}, size: 1G, groups: {groups}}}\n"
    bad = tmp_path / "c.yaml"
    bad.write_text(text)
    assert main(["run", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "c.yaml" in err and expect in err
