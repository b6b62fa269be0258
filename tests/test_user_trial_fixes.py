"""What two new-user trials found in session 25 (a network engineer's and an LLM capacity planner's), each as it
behaves now: input refused in one line at its file, line or key, and the model defects they showed."""

from __future__ import annotations

import json

import pytest
import yaml
from conftest import ROOT
from test_bad_input import LOG, one_line_error

from simcluster.cli import main
from simcluster.collectives.in_network import COLLNET_CHUNK_BYTES, InNetwork
from simcluster.machine_models import build_cluster
from simcluster.network.builders import FabricSpec, leaf_uplinks
from simcluster.predict_collective import sweep_from_scenario
from simcluster.scenario import load, load_variants
from simcluster.strict import load_yaml

MODELS = ROOT / "models"


# --- the strict YAML reader ---------------------------------------------------------------------------------------
def test_a_key_given_twice_is_refused_at_its_second_line(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    text = (ROOT / "scenarios" / "quickstart.yaml").read_text().replace("../", str(ROOT) + "/")
    path.write_text(text + "name: again\n")
    err = one_line_error(capsys, ["run", str(path)], "key 'name' given twice")
    assert f"s.yaml:{len(text.splitlines()) + 1}:" in err


def test_ratios_are_not_base_60_numbers(tmp_path):
    """YAML 1.1 reads 3:1 as 181; the reader keeps it a string, and a fabric's oversubscription reads it as 3."""
    path = tmp_path / "d.yaml"
    path.write_text("a: 3:1\nb: 1:30\nc: 1.5\nd: 0x10\ne: 1e3\n")
    assert load_yaml(path) == {"a": "3:1", "b": "1:30", "c": 1.5, "d": 16, "e": "1e3"}
    doc = yaml.safe_load((ROOT / "scenarios" / "concurrent-jobs.yaml").read_text().replace("../", str(ROOT) + "/"))
    doc.pop("variants")
    text = yaml.safe_dump(doc).replace("oversubscription: 3", "oversubscription: 3:1")
    path.write_text(text)
    assert "3:1" in text and load(path).machine.fabric.oversubscription == 3.0
    path.write_text(text.replace("3:1", "1:3"))
    with pytest.raises(Exception, match="oversubscription: expected a ratio >= 1"):
        load(path)


# --- nccl-tests logs and calibration ----------------------------------------------------------------------------
def test_two_logs_pasted_into_one_file_are_refused_at_the_second(tmp_path, capsys):
    two = tmp_path / "two.txt"
    two.write_text(LOG.read_text() + (LOG.parent / "all_gather.txt").read_text())
    one_line_error(capsys, ["parse", str(two)], "a second nccl-tests run in one file ('# Rank 0' again")


def test_a_cut_short_log_is_not_calibrated(tmp_path, capsys):
    cut = tmp_path / "cut.txt"
    cut.write_text(LOG.read_text()[:2500])
    one_line_error(capsys, ["calibrate", str(cut), "-o", str(tmp_path / "c.yaml")], "the run was cut short")
    assert not (tmp_path / "c.yaml").exists()


def test_primitives_fit_on_small_sizes_only_is_one_line_and_a_chunked_card_notes_its_range(tmp_path, capsys):
    """A complete log of 8 B..128 KiB: the NCCL-primitives fit needs the bandwidth regime (one line, exit 2; was a scipy
    traceback); the chunked ring fit works, and a prediction past its fitted sizes says so."""
    lines = [ln for ln in LOG.read_text().splitlines()
             if not (ln.split() and ln.split()[0].isdigit() and int(ln.split()[0]) > 131072)]
    small = tmp_path / "small.txt"
    small.write_text("\n".join(lines) + "\n")
    one_line_error(capsys, ["calibrate", str(small), "--model", "nccl-primitives", "-o", str(tmp_path / "p.yaml")],
                   "the NCCL-primitives fit needs sizes past 8 MiB")
    card = tmp_path / "c.yaml"
    assert main(["calibrate", str(small), "-o", str(card)]) == 0
    capsys.readouterr()
    assert main(["predict", "collective", "--card", str(card), "--op", "all_gather", "--ranks", "2", "-b", "1M", "-e", "1G"]) == 0
    out = capsys.readouterr().out
    assert "# note: 11 of 11 sizes lie outside the card's fitted range 8 B..131072 B: extrapolated" in out
    assert "# note: the card was fitted on all_reduce; all_gather is predicted from the model's structure" in out


def test_a_multi_node_log_is_validated_against_a_scenario_not_a_card(capsys):
    log = ROOT / "calibration" / "oci-bm-gpu-h100-8x2" / "nccl-tests" / "all_reduce.txt"
    one_line_error(capsys, ["validate", str(log), "--card", str(MODELS / "collective" / "h200x4-nvlink.yaml")],
                   "the log ran on 2 nodes")
    scenario = ROOT / "scenarios" / "oci-bm-gpu-h100-8x2.yaml"
    assert main(["validate", str(log), "--scenario", str(scenario), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    predicted = {p.size_bytes: p.time_s for p in sweep_from_scenario(str(scenario), "all_reduce", "1G", "16G", 2, None)[0].predictions}
    assert [r["size_B"] for r in rows] == sorted(predicted)
    assert all(r["predicted_s"] == pytest.approx(predicted[r["size_B"]]) for r in rows)


# --- fabric -----------------------------------------------------------------------------------------------------
def test_spines_past_the_leaf_uplink_ports_add_no_path_and_slow_nothing(tmp_path):
    """A leaf of 4 ports has 4 uplinks at 1:1 and 1 at 3:1 (each at least a NIC port); 16 spines are not slower than 4."""
    assert leaf_uplinks(FabricSpec(16, 1, 1.0, "leaf-spine", 4, 16)) == 4
    assert leaf_uplinks(FabricSpec(16, 1, 1.0, "leaf-spine", 4, 16, 3.0)) == 1
    assert leaf_uplinks(FabricSpec(16, 1, 1.0, "rail-optimized", 32, 16)) == 16
    doc = yaml.safe_load((ROOT / "scenarios" / "concurrent-jobs.yaml").read_text().replace("../", str(ROOT) + "/"))
    doc.pop("variants")
    doc["jobs"] = [{"kind": "collective_sweep", "op": "all_reduce", "min_size": "1G", "max_size": "1G"}]
    busbw = {}
    for spines, over in ((4, 1), (16, 1), (1, 3), (4, 3)):
        doc["machine"]["fabric"].update(spines=spines, oversubscription=over)
        path = tmp_path / f"s{spines}-o{over}.yaml"
        path.write_text(yaml.safe_dump(doc))
        busbw[spines, over] = sweep_from_scenario(str(path), "all_reduce", "1G", "1G", 2, None)[0].predictions[0].busbw_Bps
    assert busbw[16, 1] == pytest.approx(busbw[4, 1]) and busbw[4, 3] == pytest.approx(busbw[1, 3])
    assert busbw[4, 3] == pytest.approx(busbw[4, 1])   # a ring's one crossing flow per leaf fits one 4/3-port uplink


def test_in_network_aggregation_pipelines_its_stages_and_refuses_a_slower_switch(tmp_path, capsys):
    scenario = ROOT / "scenarios" / "whatif" / "in-network-aggregation.yaml"
    label, sc = load_variants(scenario)[1]
    cluster = build_cluster(sc.machine)
    from simcluster.collectives.fabric_call import FabricCall, nvlink_rate
    from simcluster.collectives.ring_flows import ring_flows

    flows = ring_flows(cluster)
    for size in (COLLNET_CHUNK_BYTES // 4, 64 * COLLNET_CHUNK_BYTES):
        call = FabricCall(cluster, "all_reduce", size, flows.node_rate_Bps, nvlink_rate(cluster), cluster.nic.latency_s, flows)
        total, d = InNetwork().time(call)
        stages = d["node_stage_s"] + d["switch_s"]   # the in-node reduce and broadcast share NVLink: one stage (issue 41)
        if size <= COLLNET_CHUNK_BYTES:
            assert total == pytest.approx(stages)
        else:
            assert max(d["node_stage_s"], d["switch_s"]) < total < stages
    text = scenario.read_text().replace("../../", str(ROOT) + "/").replace("nic/seed000-roce-100g.yaml", "nic/roce-400g.yaml")
    bad = tmp_path / "agg.yaml"
    bad.write_text(text)
    one_line_error(capsys, ["run", str(bad)], "the aggregating switch's ports run at 100 Gb/s, slower than the NICs' 400 Gb/s")


# --- LLM jobs ---------------------------------------------------------------------------------------------------
def test_nodes_rescales_an_llm_jobs_data_parallel_degree_and_batch(capsys):
    scenario = ROOT / "scenarios" / "llm" / "llama70b-splits.yaml"
    [(label, base)] = load_variants(scenario)[:1]
    [(_, big)] = load_variants(scenario, nodes=2 * base.machine.nodes)[:1]
    a, b = base.jobs[0], big.jobs[0]
    assert (b.parallel.tp, b.parallel.pp, b.parallel.dp) == (a.parallel.tp, a.parallel.pp, 2 * a.parallel.dp)
    assert b.batch.global_batch == 2 * a.batch.global_batch
    one_line_error(capsys, ["predict", "training", "--scenario", str(scenario), "--nodes", "3"],
                   "--nodes 3: 24 GPUs do not divide by tp x pp x cp = 32")


def test_an_error_a_variant_causes_at_a_base_key_names_the_variant(tmp_path, capsys):
    text = (ROOT / "scenarios" / "llm" / "llama70b-splits.yaml").read_text().replace("../../", str(ROOT) + "/")
    text = text.replace("\njobs:\n", "\n  bad:\n    set:\n      jobs[0].parallel.virtual_stages: 40\njobs:\n", 1)
    path = tmp_path / "v.yaml"
    path.write_text(text)
    one_line_error(capsys, ["predict", "training", "--scenario", str(path)], "(while reading variant 'bad')")


def test_days_to_train_for_a_configuration_that_does_not_fit_carry_a_warning(tmp_path, capsys):
    text = (ROOT / "scenarios" / "llm" / "llama405b-16k-goodput.yaml").read_text().replace("../../", str(ROOT) + "/")
    path = tmp_path / "g.yaml"
    path.write_text(text.split("variants:")[0].replace("zero: 2,", "zero: 1,"))
    assert main(["predict", "training", "--scenario", str(path)]) == 4     # issue 43: a run that cannot start exits 4
    out = capsys.readouterr().out
    assert "DOES NOT FIT" in out and "these days are for a run that could not start" in out


# --- storage and DDP jobs ---------------------------------------------------------------------------------------
def test_max_accelerators_says_none_when_one_accelerator_misses_the_threshold(capsys):
    assert main(["storage", "max-accelerators", "--workload", str(ROOT / "scenarios" / "workloads" / "unet3d_h100.yaml"),
                 "--nvme", str(MODELS / "nvme" / "micron-9400-pro-7.68tb.yaml"), "--thread-rate", "400MBps"]) == 0
    assert "max accelerators: none: even 1 accelerator(s) stay below the 90% AU threshold" in capsys.readouterr().out


def test_zero_epochs_are_refused_at_the_key(tmp_path, capsys):
    text = (ROOT / "scenarios" / "seed000-resnet18-2servers.yaml").read_text().replace("../", str(ROOT) + "/")
    assert "epochs:" in text
    path = tmp_path / "e.yaml"
    path.write_text(text.replace("epochs: 1\n", "epochs: 0\n"))
    one_line_error(capsys, ["run", str(path)], "epochs: expected a number from")


def test_a_partly_filled_leaf_keeps_port_speed_uplinks(tmp_path):
    """6 nodes on leaves of 4 ports (4 + 2), 1:1: the second leaf's uplinks are its ports' (not its 2 NICs') share, so
    1, 2 or 4 spines give the same ring (a review found 4 spines halving it)."""
    doc = yaml.safe_load((ROOT / "scenarios" / "concurrent-jobs.yaml").read_text().replace("../", str(ROOT) + "/"))
    doc.pop("variants")
    doc["machine"]["nodes"] = 6
    doc["jobs"] = [{"kind": "collective_sweep", "op": "all_reduce", "min_size": "1G", "max_size": "1G", "algorithm": "ring"}]
    busbw = []
    for spines in (1, 2, 4):
        doc["machine"]["fabric"].update(spines=spines, oversubscription=1)
        path = tmp_path / f"s{spines}.yaml"
        path.write_text(yaml.safe_dump(doc))
        busbw.append(sweep_from_scenario(str(path), "all_reduce", "1G", "1G", 2, "ring")[0].predictions[0].busbw_Bps)
    assert busbw[1] == pytest.approx(busbw[0]) and busbw[2] == pytest.approx(busbw[0])


def test_timelines_of_several_variants_and_jobs_get_their_own_files():
    from simcluster.files import paths_per_label as _trace_paths

    assert _trace_paths("/tmp/t.json", ["a"]) == ["/tmp/t.json"]
    assert _trace_paths("/tmp/t.json", ["a", "a", "b c"]) == ["/tmp/t-a.json", "/tmp/t-a-job2.json", "/tmp/t-b_c.json"]
    assert _trace_paths("/tmp/t.json.gz", ["x", "y"]) == ["/tmp/t-x.json.gz", "/tmp/t-y.json.gz"]


def test_the_tcp_transports_host_cores_are_reported(capsys):
    """Onloaded networking's CPU cost is in the answer, not only in the library: the DDP result and the collective
    sweep name the cores TCP takes per node; RDMA takes none."""
    assert main(["predict", "training", "--scenario", str(ROOT / "scenarios/whatif/roce-vs-tcp.yaml"), "--json"]) == 0
    roce, tcp = json.loads(capsys.readouterr().out)
    assert roce["transport_cores_per_node"] == 0 and tcp["transport_cores_per_node"] > 1
    label, sc = load_variants(ROOT / "scenarios/whatif/roce-vs-tcp.yaml")[1]
    from simcluster.build import sweep_result
    from simcluster.scenario_jobs import CollectiveSweep

    job = CollectiveSweep("all_reduce", sc.machine.nodes * sc.machine.gpus_per_node, 2**30, 2**30, 2, "analytic")
    assert label == "tcp" and "TCP takes" in sweep_result(sc, job).description
