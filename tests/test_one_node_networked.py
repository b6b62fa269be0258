"""A one-node call on a machine with NICs never touches a NIC (issue 41, session 41, treeib): the fabric ring prices
it on NVLink alone (its ring flows carry nothing, B_net = 0: the first validate run of the Together B200 file divided by
it), and the published nccl reader takes a one-node row of a multi-node scenario as NCCL's one node, the rule
`predict collective` uses on a one-node scenario (collectives/domain.domain_algorithm)."""

from __future__ import annotations

import math

import pytest
from conftest import ROOT

from simcluster.collectives.domain import NvlinkDomain
from simcluster.collectives.fabric import predict_fabric
from simcluster.errors import SimclusterError
from simcluster.machine_models import build_cluster
from simcluster.reference import nccl
from simcluster.scenario import load_variants

SCENARIO = ROOT / "scenarios/published/b200-ib-8x400g-x64-together.yaml"
GiB = 2**30


@pytest.fixture(scope="module")
def one_node():
    machine = load_variants(SCENARIO, 1)[0][1].machine
    assert machine.nodes == 1 and machine.nic is not None     # a networked machine cut to one node
    return build_cluster(machine)


@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "reduce_scatter", "broadcast"])
def test_the_fabric_ring_on_one_node_is_nvlink_bound(one_node, op):
    p = predict_fabric(one_node, op, 4 * GiB, "ring")
    assert math.isfinite(p.time_s) and p.time_s > 0
    assert p.breakdown["binding_limit"].startswith("NVLink")
    assert p.breakdown["bandwidth_Bps"] == p.breakdown["nvlink_Bps"] > 0
    assert "network_call_setup_s" not in p.breakdown


def test_nccls_choice_on_one_networked_node_is_priced(one_node):
    p = predict_fabric(one_node, "all_reduce", 4 * GiB)
    assert math.isfinite(p.busbw_Bps) and p.busbw_Bps > 0


def test_a_one_node_ring_costs_what_two_nodes_cost_inside_the_node_only(one_node):
    """The same ring on two nodes adds the network; on one node the NVLink term alone sets the time."""
    two = build_cluster(load_variants(SCENARIO, 2)[0][1].machine)
    t1 = predict_fabric(one_node, "all_reduce", 4 * GiB, "ring").time_s
    t2 = predict_fabric(two, "all_reduce", 4 * GiB, "ring").time_s
    assert t1 < t2


def test_the_reader_takes_a_one_node_row_as_one_nvlink_domain():
    cluster = nccl._cluster(SCENARIO, 1)
    assert isinstance(cluster, NvlinkDomain)
    busbw, ran = nccl._predict(cluster, "all_reduce", [4 * GiB], [None], [])
    assert busbw > 0 and math.isfinite(busbw)
    with pytest.raises(SimclusterError, match="forced on one NVLink domain") as err:   # the scenario has an NVLS card
        nccl._predict(cluster, "all_reduce", [4 * GiB], ["ring"], [])
    assert "\n" not in str(err.value)
    assert not isinstance(nccl._cluster(SCENARIO, 2), NvlinkDomain)


def test_a_one_node_row_in_a_published_file_reads_without_a_traceback(tmp_path):
    text = (ROOT / "calibration/published/nccl-b200-ib-x64-together-scaling.yaml").read_text()
    text = text.replace("../../scenarios/published/", str(ROOT / "scenarios/published") + "/")
    row = ('  - {op: all_reduce, algorithm: "NCCL_ALGO=Ring (forced)", nodes: 2, ranks: 16, size: 32GiB, bytes: 34359738368, '
           'time_us: null, algbw_GBps: null, busbw_GBps: 388.41}\n')
    assert row in text
    one = row.replace("nodes: 2, ranks: 16", "nodes: 1, ranks: 8").replace('algorithm: "NCCL_ALGO=Ring (forced)", ', "")
    path = tmp_path / "nccl-one-node.yaml"
    path.write_text(text.replace(row, one + row, 1))
    rows = nccl.system_rows(nccl.read_nccl_file(path))
    assert rows[0].run == 0 and rows[0].predicted > 0 and "8 B200" in rows[0].configuration
    forced = path.read_text().replace(one, row.replace("nodes: 2, ranks: 16", "nodes: 1, ranks: 8"), 1)
    path.write_text(forced)
    with pytest.raises(SimclusterError) as err:
        nccl.system_rows(nccl.read_nccl_file(path))
    assert "forced on one NVLink domain" in str(err.value) and "ZeroDivisionError" not in str(err.value)
