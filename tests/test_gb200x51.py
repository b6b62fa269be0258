"""Session 51 (issue 41, helper gb200x51): LL128 across nodes where the NIC hangs off the CPU (machine.nic.via_cpu,
GB200's trays), by the NCCL version (nccl_constants.LL128_VIA_CPU_FROM: off before 2.27, as tuning.cc / paths.cc read at
v2.26.2-1 and v2.27.3-1), and studies/gb200x51_shape.py printing its committed output."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, load_script

from simcluster import scenario
from simcluster.collectives.fabric import predict_fabric
from simcluster.collectives.nccl_tuner import decide
from simcluster.errors import ScenarioError
from simcluster.machine_models import build_cluster
from simcluster.reference import nccl

MULTIRACK = ROOT / "calibration" / "published" / "nccl-gb200-nvl72-multirack-coreweave.yaml"
SCENARIO = ROOT / "scenarios" / "published" / "gb200-nvl72-multirack-coreweave.yaml"
BASE = {"name": "m", "machine": {"card": str(ROOT / "models/collective/gb200-nvlink-derived.yaml"), "gpus_per_node": 4,
                                 "nodes": 8, "nvlink_domain": 8, "gpu": {"card": str(ROOT / "models/gpu/b200.yaml")},
                                 "nic": {"card": str(ROOT / "models/nic/ib-ndr-400g.yaml"), "per_node": 4},
                                 "fabric": {"kind": "rail-optimized", "down_ports": 64, "spines": 32},
                                 "host": {"cores": 72, "cpu_vendor": "arm"}},
        "jobs": [{"kind": "collective_sweep", "op": "all_reduce"}]}


def _cluster(tmp_path: Path, via_cpu=None, nccl=None, nodes=8):
    doc = copy.deepcopy(BASE)
    doc["machine"]["nodes"] = nodes
    if nodes <= 2:
        doc["machine"]["nvlink_domain"] = 4 * nodes
    if via_cpu is not None:
        doc["machine"]["nic"]["via_cpu"] = via_cpu
    if nccl is not None:
        doc["machine"]["nccl"] = nccl
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return build_cluster(scenario.load(path).machine)


@pytest.mark.parametrize("via_cpu, nccl, ll128", [
    (True, "2.26.2", False),    # PHB: tuning.cc enables LL128 only up to PXN
    (True, "2.26.6", False),
    (True, "2.27.3", True),     # P2C and NCCL_LL128_C2C=1
    (True, "2.28.3", True),
    (True, None, True),         # no version stated: the model's NCCL (2.28.3)
    (False, "2.26.2", True),    # a NIC behind a PCIe switch: unchanged
    (None, "2.26.2", True),     # the key's default is false
])
def test_ll128_across_nodes_by_the_nic_path_and_the_nccl_version(tmp_path, via_cpu, nccl, ll128):
    cluster = _cluster(tmp_path, via_cpu, nccl)
    assert cluster.nodes == 4 and cluster.nic_via_cpu is bool(via_cpu)
    assert ("LL128" in cluster.nccl_topology.protocols) is ll128
    assert {"LL", "Simple"} <= set(cluster.nccl_topology.protocols)


def test_forced_ll128_is_skipped_where_the_version_cannot_run_it(tmp_path):
    cluster = _cluster(tmp_path, True, "2.26.2")
    p = predict_fabric(cluster, "all_reduce", 16 << 30, "ring", None, "LL128")
    assert p.protocol == "Simple" and p.breakdown["chooser_protocol_skipped"] == "LL128"
    lifted = predict_fabric(dataclasses.replace(cluster, nic_via_cpu=False), "all_reduce", 16 << 30, "ring", None, "LL128")
    assert lifted.protocol == "LL128" and "chooser_protocol_skipped" not in lifted.breakdown


def test_a_bad_via_cpu_is_one_line_at_its_key(tmp_path):
    with pytest.raises(ScenarioError) as exc:
        _cluster(tmp_path, "yes", "2.26.2")
    line = exc.value.one_line()
    assert "s.yaml:" in line and ": machine.nic.via_cpu: " in line and "expected true or false" in line and "\n" not in line, line


def test_the_20_rack_rows_run_no_ll128_as_ncll_2_26_2_does():
    """The CoreWeave 20-rack file (NCCL 2.26.2, NVLS off): its scenario says via_cpu, so NCCL's decision model (as the
    check runs it) never picks LL128 there; with the rule lifted it picks ring / LL128 from 4 GiB (the pre-session-51 price)."""
    ref = nccl.read_nccl_file(MULTIRACK)
    assert yaml.safe_load(SCENARIO.read_text())["machine"]["nic"]["via_cpu"] is True
    cluster = dataclasses.replace(nccl._stated_nccl(nccl._cluster(SCENARIO, 360), ref), nvls=None)
    assert cluster.nccl_version == (2, 26, 2) and cluster.nic_via_cpu   # tuner51: the patch is kept (nccl_versions.py)
    chosen = [decide(cluster.nccl_topology, "all_reduce", int(r["bytes"])) for r in ref.runs]
    lifted = [decide(dataclasses.replace(cluster, nic_via_cpu=False).nccl_topology, "all_reduce", int(r["bytes"])) for r in ref.runs]
    assert all(d.protocol != "LL128" for d in chosen)
    assert [d.protocol for d in lifted][3:] == ["LL128"] * 3
    assert ref.development_for("held_out_systems")


def test_the_study_prints_its_committed_output(capsys):
    study = load_script("studies/gb200x51_shape.py")
    study.main()
    assert capsys.readouterr().out == (ROOT / "studies" / "gb200x51_shape.txt").read_text()


def _scenario(tmp_path: Path, nccl: str | None, nodes: int = 8, domain: int = 8) -> str:
    doc = copy.deepcopy(BASE)
    doc["machine"].update(nodes=nodes, nvlink_domain=domain)
    doc["machine"]["nic"]["via_cpu"] = True
    if nccl is not None:
        doc["machine"]["nccl"] = nccl
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(path)


def test_predict_collective_names_the_protocol_rule_and_the_unvalidated_shape(tmp_path):
    """`predict collective`: LL128 excluded and why (text note, --json nccl_protocols) under NCCL 2.26 with via_cpu, not
    under 2.28; across NVLink domains above 8 GPUs the answer says it is unvalidated, at 8 GPUs per domain it does not."""
    from simcluster.predict_collective import sweep_from_scenario

    (old,) = sweep_from_scenario(_scenario(tmp_path, "2.26.2"), "all_reduce", "1G", "1G", 2, None)
    doc = old.to_json()
    assert doc["nccl_protocols"]["excluded"] == ["LL128"] and "machine.nic.via_cpu" in doc["nccl_protocols"]["source"]
    assert any("LL128 excluded by NCCL 2.26" in n for n in doc["notes"])
    assert not any("unvalidated" in n for n in doc["notes"])            # 8 GPUs per domain: nccl#1801's shape, held out
    (new,) = sweep_from_scenario(_scenario(tmp_path, "2.28.3"), "all_reduce", "1G", "1G", 2, None)
    assert "nccl_protocols" not in new.to_json()
    (rack,) = sweep_from_scenario(_scenario(tmp_path, None, nodes=36, domain=72), "all_reduce", "1G", "1G", 2, None)
    assert any(n.startswith("across NVLink domains of 72 GPUs: unvalidated") for n in rack.notes)
