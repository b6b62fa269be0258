"""Issue 41, fabric at scale: in-network aggregation as a tree of switches, every multi-node transfer bounded by a named
hardware limit (NVLink, the PCIe link between GPU and NIC, the NIC, the fabric), and fabrics that cannot be built
refused at their scenario key."""

from __future__ import annotations

import dataclasses
import json

import pytest
import yaml
from conftest import ROOT
from test_bad_input import one_line_error

from simcluster import scenario
from simcluster.build import machine_trust, run_concurrent
from simcluster.cards import load_aggregation
from simcluster.cli import main
from simcluster.collectives.fabric import predict_fabric
from simcluster.collectives.ring_flows import ring_flows
from simcluster.hardware import pcie
from simcluster.machine_models import build_cluster, build_domain
from simcluster.network.builders import FabricSpec, aggregation_levels, tiers_needed, trees_at_busiest_switch
from simcluster.scenario_jobs import ConcurrentJob

WHATIF = ROOT / "scenarios" / "whatif" / "in-network-aggregation.yaml"
QUANTUM2 = ROOT / "models" / "switch" / "sharp-quantum2-400g.yaml"


def whatif_machine(nodes: int):
    """The in-network what-if machine (8 H200 per node, 1 x 100G, 16-port leaves, the streaming card) at `nodes`."""
    _, sc = scenario.load_variants(WHATIF)[1]
    return dataclasses.replace(sc.machine, nodes=nodes)


# --- the tree ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("nodes, levels", [(2, 1), (16, 1), (17, 2), (128, 2), (512, 2), (513, 3), (1024, 3), (8192, 3),
                                           (16384, 4)])
def test_tree_levels_follow_the_radix(nodes, levels):
    # 16-port leaves (down_ports), 32-port spines: one leaf holds 16 nodes, a spine joins 32 leaves (512 nodes), each
    # further tier of 32-port switches (16 down) 16 times as many: ceil(log16(nodes)) levels past one leaf
    spec = FabricSpec(nodes, 1, 12.5e9, "leaf-spine", down_ports=16, spines=4)
    assert aggregation_levels(spec, nodes) == levels
    assert tiers_needed(spec) == levels


def test_in_network_small_message_time_grows_with_the_trees_levels():
    times, levels = [], []
    for nodes in (2, 16, 128, 1024, 16384):
        cluster = build_cluster(whatif_machine(nodes))
        p = predict_fabric(cluster, "all_reduce", 64 << 10, "in-network")
        times.append(p.time_s)
        levels.append(p.breakdown["tree_levels"])
    assert levels == [1, 1, 2, 3, 4]
    assert times[0] == pytest.approx(times[1])                 # both fit one leaf
    assert times[1] < times[2] < times[3] < times[4]          # each level: a hop up and down, a frame, a threshold
    hop = 2 * (100e-9 + 600e-9) + 2 * 4126 / 12.5e9          # the fabric's link + switch latency, both ways, 2 frames
    assert times[3] - times[2] == pytest.approx(hop, rel=1e-6)


def test_store_and_forward_pays_its_buffer_at_every_level():
    sf, _ = load_aggregation(ROOT / "models/switch/seed003-sharp-store-and-forward-100g.yaml")
    one, two = sf.allreduce_time_s(4096), sf.allreduce_time_s(4096, levels=2, hop_latency_s=1e-6)
    ops = 4096 / sf.buffer_bytes
    assert two - one == pytest.approx(ops * (2e-6 + 2 * sf.buffer_bytes / sf.payload_Bps + sf.buffer_bytes / sf.aggregation_Bps))


def test_trees_beyond_the_switch_limit_share_its_aggregation():
    # a leaf-spine leaf carries every rail of its nodes: 8 NICs per node = 8 trees on a switch that runs one (Quantum)
    spec = FabricSpec(16, 8, 50e9, "leaf-spine", down_ports=32, spines=16)
    assert trees_at_busiest_switch(spec, 16) == 8
    assert trees_at_busiest_switch(dataclasses.replace(spec, kind="rail-optimized"), 16) == 1
    # above the leaves a plane's trees (8 rails x 4 concurrent jobs) spread over the 16 spines a leaf reaches
    rails = FabricSpec(64, 8, 50e9, "rail-optimized", down_ports=32, spines=16)
    assert aggregation_levels(rails, 64) == 2 and trees_at_busiest_switch(rails, 64, jobs=4) == 2
    agg, _ = load_aggregation(ROOT / "models/switch/sharp-streaming-100g.yaml")
    assert agg.trees_per_switch == 1
    assert agg.tree_rate_Bps(8) == pytest.approx(agg.aggregation_Bps / 8)
    terms = agg.terms(2**30, trees=8)
    assert terms["binds"] == "trees" and terms["rate_Bps"] == pytest.approx(agg.aggregation_Bps / 8)


def test_concurrent_jobs_count_each_others_trees():
    # two 8-node jobs on 4-port leaves with one uplink each (3:1): both jobs' trees meet at the one spine a leaf
    # reaches; the streaming card's switches run one tree at a time, so together each tree gets half the ALU
    m = scenario.load(ROOT / "scenarios" / "concurrent-jobs.yaml").machine
    agg, _ = load_aggregation(ROOT / "models/switch/sharp-streaming-100g.yaml")
    cluster = dataclasses.replace(build_cluster(m), aggregation=agg)
    job = ConcurrentJob("all_reduce", 1 << 30, (tuple(range(8)), tuple(range(8, 16))), "in-network")
    run = run_concurrent(cluster, job, machine_trust(m)).runs[0]
    assert run.alone.breakdown["trees_per_switch"] == 1 and run.shared.breakdown["trees_per_switch"] == 2
    assert run.shared.breakdown["switch_rate_Bps"] == pytest.approx(agg.aggregation_Bps / 2)
    assert run.shared.breakdown["binding_limit"].startswith("switch aggregation shared: 2 trees")
    assert run.shared.time_s > 1.9 * run.alone.time_s


def test_seed003_single_switch_forms_are_unchanged():
    ct, _ = load_aggregation(ROOT / "models/switch/seed003-fpga-cut-through-10g.yaml")
    frame = ct.frame_wire_bytes / ct.line_rate_Bps
    for size in (1024, 65536, 100e6):
        seed_form = ct.op_latency_s + ct.threshold_frames * frame + size / min(ct.payload_Bps, ct.aggregation_Bps) + frame
        assert ct.allreduce_time_s(size) == pytest.approx(seed_form)
    sc = scenario.load(ROOT / "scenarios" / "seed003-in-network-aggregation.yaml")
    p = predict_fabric(build_cluster(sc.machine), "all_reduce", 100 << 20, "in-network")
    assert p.breakdown["tree_levels"] == 1 and p.time_s == pytest.approx(ct.allreduce_time_s(100 << 20))


# --- the whole never beats its part -----------------------------------------------------------------------------
SHIPPED = ["published/nccl1221-h100-roce-x4.yaml", "oci-bm-gpu-h100-8x2.yaml", "published/h100-ib-x4-nccltests309.yaml",
           "published/gcp-a3ultra-h200-x2.yaml", "published/aws-p5en-x4.yaml", "published/aws-p6-b200-x4.yaml",
           "published/gcp-a4-b200-x2.yaml"]


@pytest.mark.parametrize("path", SHIPPED)
def test_a_multi_node_all_reduce_never_moves_data_faster_than_the_node_s_own(path):
    """Every size from 8 B to 64 GiB, 2 to 128 nodes, NCCL's choice and (with a 400G aggregation card) forced in-network
    aggregation: algbw across nodes <= the node's own all_reduce algbw (NVLS where the node has it). Before issue 41
    in-network aggregation moved 379 GB/s on 16 x 8 H200 where one node moves 275."""
    machine = scenario.load(ROOT / "scenarios" / path).machine
    agg, _ = load_aggregation(QUANTUM2)
    domain = build_domain(machine)
    sizes = [8 << (3 * i) for i in range(12)]
    own = {s: domain.predict("all_reduce", s).algbw_Bps for s in sizes}
    for nodes in (2, 16, 128):
        cluster = build_cluster(dataclasses.replace(machine, nodes=nodes))
        flows = ring_flows(cluster)
        runs = [(cluster, None), (dataclasses.replace(cluster, aggregation=agg), None),
                (dataclasses.replace(cluster, aggregation=agg), "in-network")]
        for view, algorithm in runs:
            for s in sizes:
                p = predict_fabric(view, "all_reduce", s, algorithm, flows)
                assert p.algbw_Bps <= own[s] * (1 + 1e-9), (nodes, algorithm, s, p.algorithm, p.algbw_Bps, own[s])


def test_nvls_with_in_network_aggregation_is_bound_by_the_node_s_nvls():
    machine = scenario.load(ROOT / "scenarios/published/h100-ib-x4-nccltests309.yaml").machine
    agg, _ = load_aggregation(QUANTUM2)
    cluster = dataclasses.replace(build_cluster(dataclasses.replace(machine, nodes=16)), aggregation=agg)
    p = predict_fabric(cluster, "all_reduce", 8 << 30, "in-network")
    own = build_domain(machine).predict("all_reduce", 8 << 30)
    assert p.algbw_Bps <= own.algbw_Bps and p.algbw_Bps > 0.99 * own.algbw_Bps     # NVLS binds, not the switch
    assert p.breakdown["binding_limit"].startswith("NVLink SHARP")


# --- hardware limits, named -------------------------------------------------------------------------------------
def test_pcie_payload_rates():
    assert pcie.parse("gen4x16").payload_Bps / 1e9 == pytest.approx(26.5, abs=0.1)
    assert pcie.parse("Gen5 x16").payload_Bps / 1e9 == pytest.approx(53.0, abs=0.1)
    assert pcie.parse("gen5x8").payload_Bps == pytest.approx(pcie.parse("gen5x16").payload_Bps / 2)
    for bad in ("gen5", "gen7x16", "gen5x12", 16, None):
        with pytest.raises(ValueError):
            pcie.parse(bad)


def _machine_with_nic(path: str, nic: str, nodes: int = 16):
    m = scenario.load(ROOT / "scenarios" / path).machine
    return dataclasses.replace(m, nodes=nodes, nic=dataclasses.replace(m.nic, card=ROOT / "models" / "nic" / nic))


def test_800g_nics_behind_gen5_x16_are_bound_by_pcie_and_the_answer_says_so():
    h100 = _machine_with_nic("published/nccl1221-h100-roce-x4.yaml", "roce-800g.yaml")
    cluster = build_cluster(h100)
    flows = ring_flows(cluster)
    assert flows.limit == "PCIe Gen5 x16 between GPU and NIC"
    assert flows.node_rate_Bps == pytest.approx(8 * pcie.parse("gen5x16").payload_Bps)
    a2a = predict_fabric(cluster, "alltoall", 1 << 30, flows=flows)
    assert a2a.breakdown["binding_limit"] == "PCIe Gen5 x16 between GPU and NIC"
    # 400G: the NIC binds below PCIe; 800G: PCIe binds below the NIC; so the two differ by a named limit
    c400 = build_cluster(_machine_with_nic("published/nccl1221-h100-roce-x4.yaml", "roce-400g.yaml"))
    f400 = ring_flows(c400)
    assert f400.limit.startswith("NIC line rate (400 Gb/s")
    a400 = predict_fabric(c400, "alltoall", 1 << 30, flows=f400)
    assert a400.time_s > a2a.time_s
    # the scenario can state a path that is narrower than the cards' (or wider: a Gen6 board)
    gen6 = dataclasses.replace(h100, nic=dataclasses.replace(h100.nic, pcie="gen6x16"))
    assert ring_flows(build_cluster(gen6)).limit.startswith("NIC line rate (800 Gb/s")


def test_every_multi_node_answer_names_its_binding_limit_per_size(capsys):
    assert main(["predict", "collective", "--scenario", str(ROOT / "scenarios/published/nccl1221-h100-roce-x4.yaml"),
                 "--op", "all_reduce", "-b", "8", "-e", "4G", "-f", "64"]) == 0
    out = capsys.readouterr().out
    block = out.split("# binding limit per size")[1].split("\n#\n")[0].splitlines()[1:]     # to the table's closing '#'
    assert "# trust " in out                                                                   # the bands follow it
    assert len(block) == 5 and all(line.startswith("# ") for line in block)      # 8 B, 512 B, 32 KiB, 2 MiB, 128 MiB
    assert "latency" in block[0] and "NVLS-tree kernel" in block[-1]
    assert "NIC line rate (400 Gb/s x 0.973 payload) binds it" in out
    rows = [line for line in out.splitlines() if line and not line.startswith("#")]
    assert len(rows) == 5                      # the nccl-tests rows are untouched: the limits are comment lines
    # `simcluster run` prints it on each row and writes it in the JSON rows
    assert main(["run", str(ROOT / "scenarios/oci-bm-gpu-h100-8x2.yaml")]) == 0
    assert capsys.readouterr().out.count("binds: NVLS-tree kernel") == 5
    assert main(["run", str(ROOT / "scenarios/oci-bm-gpu-h100-8x2.yaml"), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["jobs"][0]["rows"]
    assert {r["binding_limit"] for r in rows} == {"NVLS-tree kernel (SMs of its channels, NCCL's per-channel rate)"}


def test_an_oversubscribed_leaf_uplink_is_named():
    # every node on its own leaf, 3:1: every ring hop climbs a leaf's one uplink of a third of a port
    m = scenario.load(ROOT / "scenarios" / "concurrent-jobs.yaml").machine
    m = dataclasses.replace(m, fabric=dataclasses.replace(m.fabric, down_ports=1))
    flows = ring_flows(build_cluster(m))
    assert flows.limit == "leaf uplinks (3:1 oversubscription)"
    assert flows.node_rate_Bps == pytest.approx(12.5e9 / 3)


# --- fabrics that cannot be built -------------------------------------------------------------------------------
def _write(tmp_path, doc) -> str:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def _whatif_doc(nodes: int) -> dict:
    text = WHATIF.read_text().replace("../../", str(ROOT) + "/")
    doc = yaml.safe_load(text)
    doc["machine"]["nodes"] = nodes
    doc["machine"]["aggregation"] = {"card": str(ROOT / "models/switch/sharp-streaming-100g.yaml")}
    doc.pop("variants")
    doc["jobs"] = [{"kind": "collective_sweep", "op": "all_reduce", "min_size": "64K", "max_size": "64K"}]
    return doc


def test_a_spine_radix_too_small_for_the_nodes_is_refused_at_its_key(tmp_path, capsys):
    doc = _whatif_doc(1024)
    doc["machine"]["fabric"].update(tiers=2)            # 64 leaves of 16 ports; a 32-port spine joins 32
    one_line_error(capsys, ["run", _write(tmp_path, doc)], "machine.fabric.tiers: 2 switch tiers of 32-port spines cannot "
                   "join the 64 leaves")
    doc["machine"]["fabric"].update(spine_ports=64)      # a spine with a port per leaf holds them
    assert main(["run", _write(tmp_path, doc)]) == 0
    capsys.readouterr()


def test_a_tree_deeper_than_the_switches_build_is_refused(tmp_path, capsys):
    card = yaml.safe_load((ROOT / "models/switch/sharp-streaming-100g.yaml").read_text())
    card["params"]["max_levels"] = 2
    (tmp_path / "agg.yaml").write_text(yaml.safe_dump(card))
    doc = _whatif_doc(1024)                              # 3 levels
    doc["machine"]["aggregation"] = {"card": str(tmp_path / "agg.yaml")}
    one_line_error(capsys, ["run", _write(tmp_path, doc)], "needs 3 switch levels; the card's switches build at most 2 "
                   "(machine.aggregation.card)")


def test_a_bad_pcie_link_is_refused_at_its_key(tmp_path, capsys):
    doc = _whatif_doc(16)
    doc["machine"]["nic"]["pcie"] = "gen5x12"
    one_line_error(capsys, ["run", _write(tmp_path, doc)], "machine.nic.pcie")
    nic = yaml.safe_load((ROOT / "models/nic/roce-400g.yaml").read_text())
    nic["params"]["pcie"] = "pcie5"
    (tmp_path / "nic.yaml").write_text(yaml.safe_dump(nic))
    doc = _whatif_doc(16)
    doc["machine"]["nic"] = {"card": str(tmp_path / "nic.yaml"), "per_node": 1}
    doc["machine"].pop("aggregation")
    one_line_error(capsys, ["run", _write(tmp_path, doc)], "params.pcie: expected a PCIe link as gen")
