"""A NIC card's nccl_protocols: the NCCL protocols its network plugin lets NCCL run (session 42, ncclsys).
aws-ofi-nccl sets NCCL_PROTO=simple on p4d.24xlarge / p4de.24xlarge (src/platform-aws.c, force_proto_simple), so the
efa-100g card, used by the p4d / p4de scenarios only, says [Simple]."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import ROOT

from simcluster import scenario
from simcluster.cards import load_nic, nic_params, nic_params_yaml
from simcluster.collectives.fabric import predict_fabric
from simcluster.collectives.nccl_search import NcclTopology
from simcluster.collectives.nccl_tuner import best_protocol, decide
from simcluster.errors import ModelCardError, SimclusterError
from simcluster.machine_models import build_cluster

MiB = 2**20


def _p4de():
    return build_cluster(scenario.load(ROOT / "scenarios" / "published" / "aws-p4de-24xlarge-x2.yaml").machine)


def test_p4d_cards_let_nccl_run_simple_only():
    nic, card = load_nic(ROOT / "models" / "nic" / "efa-100g.yaml")
    assert nic.nccl_protocols == ("Simple",)
    assert "platform-aws.c" in str(card["provenance"])
    cluster = _p4de()
    for size in (64 * 1024, MiB, 64 * MiB, 128 * MiB, 2048 * MiB):
        assert decide(cluster.nccl_topology, "all_reduce", size).protocol == "Simple"
        assert predict_fabric(cluster, "all_reduce", size).protocol == "Simple"
        assert predict_fabric(cluster, "all_reduce", size, algorithm="tree").protocol == "Simple"
    # without the plugin's restriction NCCL's tuner would take LL128 for the 64 MiB tree (the rows' +41..+52% before)
    free = dataclasses.replace(cluster, nic=dataclasses.replace(cluster.nic, nccl_protocols=None))
    assert decide(free.nccl_topology, "all_reduce", 64 * MiB).protocol == "LL128"
    slow, fast = predict_fabric(cluster, "all_reduce", 64 * MiB), predict_fabric(free, "all_reduce", 64 * MiB)
    assert slow.time_s > fast.time_s


def test_other_cards_keep_every_protocol():
    for name in ("efa-400g.yaml", "efa-multirail-400g.yaml", "ib-ndr-400g.yaml"):
        assert load_nic(ROOT / "models" / "nic" / name)[0].nccl_protocols is None
    topo = NcclTopology("ampere", 8, 2, None, 4, 12.5e9)
    assert best_protocol(dataclasses.replace(topo, protocols=("Simple",)), "all_reduce", "Tree", 64 * MiB) == "Simple"


def test_bad_protocols_are_refused_in_one_line():
    card = {"kind": "nic", "name": "x", "params": {"transport": "rdma", "line_rate": "100Gbps", "efficiency": 0.9,
                                                   "latency": "20us", "cpu_per_byte": "0s/GB", "message_size": "64KiB",
                                                   "nccl_protocols": ["LL256"]}}
    with pytest.raises(ModelCardError, match="nccl_protocols"):
        nic_params(card, "x.yaml")
    card["params"]["nccl_protocols"] = []
    with pytest.raises(ModelCardError, match="nccl_protocols"):
        nic_params(card, "x.yaml")
    card["params"]["nccl_protocols"] = ["Simple"]
    assert nic_params_yaml(nic_params(card, "x.yaml"))["nccl_protocols"] == ["Simple"]
    with pytest.raises(SimclusterError, match="protocols"):
        NcclTopology("ampere", 8, 2, None, 4, 12.5e9, protocols=("LL256",))


def test_predict_collective_says_when_the_nic_card_restricts_the_protocols():
    """review C 42: `predict collective` on an EFA p4d / p4de scenario names the restriction (text note, --json key
    with its source); a scenario whose NIC card leaves every protocol says nothing of it."""
    from simcluster.predict_collective import sweep_from_scenario

    (p4de,) = sweep_from_scenario(str(ROOT / "scenarios/published/aws-p4de-24xlarge-x2.yaml"), "all_reduce", "64M", "64M",
                                  2, None)
    doc = p4de.to_json()
    assert doc["nccl_protocols"]["protocols"] == ["Simple"] and doc["nccl_protocols"]["excluded"] == ["LL", "LL128"]
    assert "models/nic/efa-100g.yaml" in doc["nccl_protocols"]["source"]
    assert any("Simple only (LL, LL128 excluded by the NIC card's nccl_protocols" in n for n in doc["notes"])
    assert any("LL, LL128 excluded" in line for line in p4de.header_lines("0"))
    (p5,) = sweep_from_scenario(str(ROOT / "scenarios/published/aws-p5-48xlarge-x2.yaml"), "all_reduce", "64M", "64M", 2, None)
    assert "nccl_protocols" not in p5.to_json() and not any("excluded" in n for n in p5.notes)
