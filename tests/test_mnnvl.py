"""Multi-node NVLink domains (machine.nvlink_domain; GB200 NVL72): the machine shape, its one-line errors, the
collectives NCCL's decision model runs on it, and LLM groups mapped onto the domain."""

from __future__ import annotations

import pytest
from conftest import ROOT

from simcluster import scenario
from simcluster.build import run_scenario
from simcluster.cards import load_collective, load_nvls
from simcluster.collectives.domain import domain_predict
from simcluster.collectives.fabric import predict_fabric
from simcluster.collectives.model import predict
from simcluster.collectives.nccl_search import NcclTopology, graphs
from simcluster.collectives.nccl_tuner import decide
from simcluster.collectives.nvls_domain import CHANNEL_ALGBW_Bps
from simcluster.errors import ScenarioError, SimclusterError
from simcluster.machine_models import build_cluster

MODELS = ROOT / "models"
NVL72 = ROOT / "scenarios" / "published" / "gb200-nvl72-coreweave.yaml"
LLM = ROOT / "scenarios" / "llm" / "gb200-nvl72-vs-hgx-b200.yaml"


def _machine(tmp_path, **over) -> str:
    m = {"card": str(MODELS / "collective" / "gb200-nvlink-derived.yaml"), "gpus_per_node": 4, "nodes": 36,
         "nvlink_domain": 72, "gpu": {"card": str(MODELS / "gpu" / "b200.yaml")},
         "nic": {"card": str(MODELS / "nic" / "roce-400g.yaml"), "per_node": 4},
         "fabric": {"kind": "rail-optimized"}, **over}
    m = {k: v for k, v in m.items() if v is not None}
    import yaml

    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"name": "t", "machine": m, "jobs": [{"kind": "collective_sweep", "op": "all_reduce",
                                                                         "min_size": "1G", "max_size": "1G"}]}))
    return str(path)


def test_default_domain_is_one_node_and_changes_nothing():
    m = scenario.load(ROOT / "scenarios" / "published" / "aws-p6-b200-x4.yaml").machine
    assert m.nvlink_domain == 0 and m.domain_gpus == 8 and m.domains == 4 and m.nics_per_domain == 8


def test_domain_shape(tmp_path):
    m = scenario.load(_machine(tmp_path)).machine
    assert (m.domain_gpus, m.domains, m.nics_per_domain) == (72, 2, 72)
    cluster = build_cluster(m)
    assert cluster.gpus_per_node == 72 and cluster.nodes == 2 and cluster.platform.nics_per_node == 72


@pytest.mark.parametrize("over, text", [
    ({"nvlink_domain": 70}, "not a whole number of nodes"),
    ({"nvlink_domain": 2}, "expected an integer from 4"),
    ({"nvlink_domain": 216}, "not a whole number of 216-GPU NVLink domains"),
    ({"nodes": 27}, "not a whole number of 72-GPU NVLink domains"),
    ({"nvlink_domain": "72"}, "expected an integer"),
    ({"nic": None}, "needs a NIC card and a fabric"),
])
def test_bad_domains_are_one_line_errors(tmp_path, over, text):
    with pytest.raises(ScenarioError) as exc:
        scenario.load(_machine(tmp_path, **over))
    assert text in exc.value.one_line() and "nvlink_domain" in exc.value.one_line() or text in exc.value.one_line()
    assert "\n" not in exc.value.one_line()


def test_one_rack_needs_no_nic(tmp_path):
    m = scenario.load(_machine(tmp_path, nodes=18, nic=None, fabric=None)).machine
    assert m.domains == 1


def test_nvls_channels_and_heads_on_one_blackwell_domain():
    one = graphs(NcclTopology("blackwell", 72, 1, nvls=True))
    assert one["nvls_channels"] == 24 and one["NVLS"].channels == 32      # nvls.cc SM100_NVL; NCCL_MAX_NVLS_ARITY
    two = graphs(NcclTopology("blackwell", 72, 2, None, 72, 50e9, nvls=True))
    assert two["nvls_channels"] == 32 and two["NVLS"].channels == 32
    assert graphs(NcclTopology("blackwell", 8, 2, None, 8, 50e9, nvls=True))["NVLS"].channels == 8


def test_nvls_card_carries_a_head_gpus_traffic_with_heads_capped_at_nccls_arity():
    """The GB200 NVLS card's law (session 32): a head GPU moves S (1 + 1/H) each way, H = the NVLS heads NCCL's
    search gives the domain (min(n, 32)), so the rate stops rising at 32 GPUs; 8 GPUs stay the B200 card's 466."""
    table = load_nvls(MODELS / "nvswitch" / "gb200-nvl72-nvls-derived.yaml")[0]
    assert table[8] == pytest.approx(466e9)
    for n in (36, 64, 72):
        heads = graphs(NcclTopology("blackwell", n, 1, nvls=True))["NVLS"].channels
        assert heads == 32
        assert table[n] == pytest.approx(table[8] * (1 + 1 / 8) / (1 + 1 / heads), rel=2e-4)
    assert table[36] == table[64] == table[72]


def test_one_domain_all_reduce_runs_nvls_where_nccl_picks_it():
    intra = load_collective(MODELS / "collective" / "gb200-nvlink-derived.yaml")[0]
    table, latency, _ = load_nvls(MODELS / "nvswitch" / "gb200-nvl72-nvls-derived.yaml")
    size = 2**30
    d = decide(NcclTopology("blackwell", 72, 1, nvls=True), "all_reduce", size)
    p = domain_predict(intra, "all_reduce", size, 72, "blackwell", (table, latency))
    assert d.algorithm == "NVLS" and p.algorithm == "nvls"
    rate = min(table[72], 24 * CHANNEL_ALGBW_Bps)     # the model's NCCL (2.28): 24 NVLS channels on one clique
    assert p.breakdown["nvls_algbw_Bps"] == rate and p.breakdown["nccl_channels"] == 24
    assert p.time_s == pytest.approx(latency + size / rate + 2 * 24 * 32 * 65536 / rate)   # 2 loops of C H c, c 64 KiB
    ring = domain_predict(intra, "all_reduce", size, 72, "blackwell", None)
    assert ring == predict(intra, "all_reduce", size, 72)
    assert decide(NcclTopology("blackwell", 8, 1, nvls=True), "all_reduce", 4096).algorithm == "Ring"   # 15 us < NVLS's 25
    assert domain_predict(intra, "all_reduce", 4096, 8, "blackwell", (table, latency)) == predict(intra, "all_reduce", 4096, 8)
    assert domain_predict(intra, "all_reduce", size, 36 + 4, "blackwell", (table, latency)).algorithm == "nvls"  # carried from 36
    assert domain_predict(intra, "all_reduce", size, 6, "blackwell", (table, latency)) == predict(intra, "all_reduce", size, 6)
    assert domain_predict(intra, "all_gather", size, 72, "blackwell", (table, latency)) == predict(intra, "all_gather", size, 72)


def test_one_rack_sweep_is_one_domain_and_two_racks_cross_the_network(tmp_path):
    one = run_scenario(scenario.load(NVL72)).jobs[0]
    assert "1 NVLink domain of 72 GPUs" in one.description and {p.nranks for p in one.predictions} == {72}
    two = scenario.load(_machine(tmp_path))
    p = predict_fabric(build_cluster(two.machine), "all_reduce", 2**30)
    assert p.nranks == 144 and p.breakdown["nccl_algorithm"] in ("Ring", "Tree")
    # the NVLink leg is the card at 72 ranks, the network 72 NICs of 400G per domain
    assert p.breakdown["network_Bps"] == pytest.approx(72 * 50e9, rel=0.1)


def test_training_and_concurrent_jobs_are_refused_on_a_domain(tmp_path):
    import yaml

    path = tmp_path / "s.yaml"
    doc = yaml.safe_load(open(_machine(tmp_path)))
    doc["jobs"] = [{"kind": "concurrent", "op": "all_reduce", "size": "1G", "groups": ["0-1"]}]
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ScenarioError, match="not modelled on a multi-node NVLink domain"):
        scenario.load(path)


def _llm(variant: str, path=LLM):
    from simcluster.build import run_file

    return {r.variant: r for r in run_file(path)}[variant].jobs[0]


def test_ep64_inside_a_64_gpu_domain_is_on_nvlink_and_across_hgx_nodes_on_the_fabric():
    rack, hgx = _llm("gb200-nvl72"), _llm("hgx-b200")
    assert rack.prediction.groups["ep"]["placement"] == "NVLink" and rack.prediction.groups["ep"]["nodes"] == 1
    assert hgx.prediction.groups["ep"]["placement"] == "fabric" and hgx.prediction.groups["ep"]["nodes"] == 8
    assert rack.prediction.breakdown["exposed_ep_comm"] < hgx.prediction.breakdown["exposed_ep_comm"]
    dense = _llm("gb200-nvl72", LLM.with_name("gb200-nvl72-vs-hgx-b200-dense.yaml"))
    assert dense.prediction.groups["dp"]["ranks_per_node"] == 9 and dense.prediction.groups["tp"]["placement"] == "NVLink"


def test_a_group_that_straddles_72_gpu_domains_is_refused():
    from simcluster.llm.comm import Network, place

    net = Network(None, 72, None, aligned=False)
    with pytest.raises(SimclusterError, match="does not tile the 72-GPU NVLink domain"):
        place("ep", 64, 1, 1152, net)
    assert place("tp", 8, 1, 1152, net).inside_node and place("tp", 72, 1, 1152, net).inside_node


@pytest.mark.parametrize("name", ["gb200-nvl72-vs-hgx-b200.yaml", "gb200-nvl72-vs-hgx-b200-dense.yaml"])
def test_predict_training_json_on_both_machines(name, capsys):
    import json

    from simcluster.cli import main

    assert main(["predict", "training", "--scenario", str(LLM.with_name(name)), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    text = json.dumps(out)
    assert "gb200-nvl72" in text and "hgx-b200" in text


def test_the_published_rack_is_priced_inside_one_domain():
    from simcluster.published import read_published
    from simcluster.reference.nccl import system_rows

    ref = read_published(ROOT / "calibration" / "published" / "nccl-gb200-nvl72-coreweave.yaml", "published-nccl-run")
    rows = system_rows(ref)
    assert len(rows) == 5 and all(r.detail == "nvls/Simple" for r in rows)
    assert not any(r.held_out for r in rows)   # development since session 32 (its NVLS card changed after the comparison)
