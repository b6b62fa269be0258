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
    assert cluster.nccl.stated == (2, 26, 2) and cluster.nic_via_cpu   # tuner51: the patch is kept (nccl_versions.py)
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


def test_the_unvalidated_shape_prints_no_band(tmp_path):
    """Cold review A51 item 6: where the large-domain note fires, the trust lines and --json say unvalidated with no band
    (the regime's band only as not applied); at 8 GPUs per domain the same regime keeps its band."""
    from simcluster.predict_collective import sweep_from_scenario

    (rack,) = sweep_from_scenario(_scenario(tmp_path, None, nodes=36, domain=72), "all_reduce", "4G", "16G", 2, None)
    assert rack.machine_trust.unvalidated.startswith("across NVLink domains of 72 GPUs")
    lines = rack.trust_lines()
    assert lines and all("unvalidated, no band: across NVLink domains of 72 GPUs" in ln and "not applied" in ln
                         and "(80% band)" not in ln for ln in lines)
    for row in rack.to_json()["rows"]:
        v = row["validation"]
        assert v["status"] == "unvalidated" and "measured_over_predicted_time" not in v and "band_from" not in v
        assert v["unvalidated_why"] == rack.machine_trust.unvalidated and len(v["regime_band_not_applied"]) == 2
        assert row["time_s_band"] is row["busbw_Bps_band"] is row["algbw_Bps_band"] is None
    (tray,) = sweep_from_scenario(_scenario(tmp_path, None), "all_reduce", "4G", "16G", 2, None)
    assert not tray.machine_trust.unvalidated and all("no band" not in ln for ln in tray.trust_lines())
    assert all(row["time_s_band"] is not None and "unvalidated_why" not in row["validation"] for row in tray.to_json()["rows"])


def test_every_gb200_tray_with_nics_says_they_hang_off_the_cpu():
    """Cold review A51 item 9: every GB200 machine (the gb200 NVLink card) of a shipped scenario that has NICs sets
    machine.nic.via_cpu, and no other machine does (the HGX B200 variants); the 20-rack scenario states its rows' NCCL,
    so predict collective prices the version validate does."""
    paths = sorted({*(ROOT / "scenarios").rglob("*gb200*.yaml")})
    seen = 0
    for path in paths:
        for label, sc in scenario.load_variants(str(path)):
            m = sc.machine
            if m.nic is None:
                continue
            gb200 = Path(str(m.card)).name.startswith("gb200-")
            assert m.nic.via_cpu == gb200, f"{path.name} {label}: via_cpu {m.nic.via_cpu}"
            seen += gb200
    assert seen >= 6
    file_nccl = yaml.safe_load(MULTIRACK.read_text())["system"]["nccl"].split()[0]
    assert file_nccl == "2.26.2" and scenario.load_variants(str(SCENARIO))[0][1].machine.nccl == file_nccl


def test_the_large_domain_note_says_its_rows_are_gb200s(tmp_path):
    """Cold review A51 item 14: the note names its rows as GB200's; on another GPU's machine of large domains (here the
    B200 NVLink card, 16-GPU domains) it adds that no row of that GPU exists, so the facts quoted are GB200's alone."""
    from simcluster.predict_collective import sweep_from_scenario

    (rack,) = sweep_from_scenario(_scenario(tmp_path, None, nodes=36, domain=72), "all_reduce", "1G", "1G", 2, None)
    (note,) = [n for n in rack.notes if n.startswith("across NVLink domains")]
    assert "(GB200 rows only: CoreWeave's NVL72 at 2 and 20 racks)" in note
    doc = copy.deepcopy(BASE)
    doc["machine"].update(nodes=16, nvlink_domain=16, card=str(ROOT / "models/collective/b200-nvlink-derived.yaml"))
    path = tmp_path / "b200.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    (other,) = sweep_from_scenario(str(path), "all_reduce", "1G", "1G", 2, None)
    (note,) = [n for n in other.notes if n.startswith("across NVLink domains of 16 GPUs: unvalidated")]
    assert "none of any B200 machine, so what follows is GB200's alone" in note
