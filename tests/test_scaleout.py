"""Issue 41 item 4: scale-out losses from stragglers (llm/scaleout.py)."""

import json
from pathlib import Path

import pytest

from simcluster.cli import main
from simcluster.llm import scaleout

ROOT = Path(__file__).resolve().parent.parent


def test_expected_max_of_normals_grows_like_sqrt_2_ln_n():
    assert scaleout.expected_max_normal(1) == 0.0
    assert scaleout.expected_max_normal(2) == pytest.approx(0.5642, abs=0.02)      # exact 1/sqrt(pi)
    assert scaleout.expected_max_normal(8) == pytest.approx(1.4236, abs=0.02)      # tabulated exact value
    values = [scaleout.expected_max_normal(2**k) for k in range(1, 15)]
    assert all(b > a for a, b in zip(values, values[1:], strict=False))
    assert values[-1] < (2 * 16384 and (2 * __import__("math").log(16384)) ** 0.5)


def test_the_term_scales_the_compute_and_is_zero_on_one_gpu():
    assert scaleout.straggler_s(2.0, 1) == 0.0
    assert scaleout.straggler_s(2.0, 1024, spread=0.02) == pytest.approx(2.0 * 0.02 * scaleout.expected_max_normal(1024))


def _llama405b(tmp_path, name, old, new):
    """scenarios/llm/llama405b-16k.yaml with its one `old` text replaced by `new`, written to tmp_path / name."""
    text = (ROOT / "scenarios/llm/llama405b-16k.yaml").read_text().replace("../../", f"{ROOT}/")
    assert text.count(old) == 1, old
    path = tmp_path / name
    path.write_text(text.replace(old, new))
    return path


def _spread_scenario(tmp_path, spread):
    return _llama405b(tmp_path, f"s{spread}.yaml", "gpu: {card:", f"gpu: {{speed_spread: {spread}, card:")


def test_a_scenario_sets_its_speed_spread_and_the_breakdown_names_the_term(tmp_path, capsys):
    steps = {}
    for spread in (0, 0.04):
        assert main(["predict", "training", "--scenario", str(_spread_scenario(tmp_path, spread)), "--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        steps[spread] = (doc["step_time_s"], doc["breakdown"]["stragglers"], doc["breakdown"]["compute"])
    assert steps[0][1] == 0.0
    assert steps[0.04][1] == pytest.approx(0.04 * scaleout.expected_max_normal(16384) * steps[0.04][2])
    assert steps[0.04][0] == pytest.approx(steps[0][0] + steps[0.04][1])


def test_a_bad_speed_spread_is_one_line_at_its_key(tmp_path, capsys):
    assert main(["predict", "training", "--scenario", str(_spread_scenario(tmp_path, -0.1))]) == 2
    err = capsys.readouterr().err
    assert "machine.gpu.speed_spread" in err and len(err.strip().splitlines()) == 1


def test_os_jitter_is_the_expected_max_of_exponentials_less_one_gpus():
    assert scaleout.os_jitter_s(1, 0.01) == 0.0
    assert scaleout.os_jitter_s(2, 0.01) == pytest.approx(0.01 * 0.5)                  # H_2 - 1
    assert scaleout.os_jitter_s(1000, 0.01) == pytest.approx(0.01 * (7.4855 - 1), rel=1e-4)


def test_hash_collisions_and_cross_group_congestion_split_the_exposed_time():
    """Interleaved rings on an oversubscribed fabric: the two counterfactuals (ideal spreading, one group alone) split
    the exposed time into its parts, which add back to it."""
    import dataclasses

    import numpy as np

    from simcluster.collectives.ring_flows import concurrent_ring_flows
    from simcluster.llm.comm import Group, Network
    from simcluster.machine_models import build_cluster
    from simcluster.network.builders import FabricSpec, machine_platform
    from simcluster.scenario import load

    cluster = build_cluster(load(ROOT / "scenarios/concurrent-jobs.yaml").machine)
    spec = FabricSpec(32, 1, 12.5e9, "leaf-spine", down_ports=8, spines=4, oversubscription=2.0)
    cluster = dataclasses.replace(cluster, platform=machine_platform(32, 0, 0.0, spec))
    sets = [np.arange(i, 32, 8) for i in range(8)]          # 8 rings of 4 nodes, every hop crossing the spines
    hashed = concurrent_ring_flows(cluster, sets)
    spread = concurrent_ring_flows(cluster, sets, spread=True)
    alone = concurrent_ring_flows(cluster, sets[:1], spread=True)
    assert min(x.node_rate_Bps for x in hashed) <= min(x.node_rate_Bps for x in spread) <= alone[0].node_rate_Bps
    assert min(x.node_rate_Bps for x in spread) < alone[0].node_rate_Bps        # the other rings share the uplinks
    net = Network(None, 1, cluster)
    dp = Group("dp", 4, 8, 1, 4, 8)
    groups = type("G", (), {"dp": dp, "pp": Group("pp", 1, 32, 1, 1)})()
    split = scaleout.fabric_split(net, groups, {"exposed_dp_comm": 1.0, "exposed_pp_comm": 0.0}, 32)
    assert split["cross_group_congestion"] > 0
    assert split["exposed_dp_comm"] + split["ecmp_collisions"] + split["cross_group_congestion"] == pytest.approx(1.0)
    # the rates are kept per cluster while it lives, and leave with it (a long sweep holds only its live clusters')
    import gc

    assert id(cluster) in scaleout._RATES
    key = id(cluster)
    del net, cluster
    gc.collect()
    assert key not in scaleout._RATES


def _jitter_scenario(tmp_path, jitter):
    return _llama405b(tmp_path, "jitter.yaml", "host: {cores: 112}", f"host: {{cores: 112, os_jitter: {jitter}}}")


def test_a_scenario_sets_its_os_jitter_and_the_step_gains_the_term(tmp_path, capsys):
    """machine.host.os_jitter: J (mean time a host loses per step); the step gains J (H_N - 1), N = 16,384 GPUs, and the
    breakdown names it; the shipped default (no key) is J = 0."""
    steps = {}
    for jitter in ("0s", "2ms"):
        assert main(["predict", "training", "--scenario", str(_jitter_scenario(tmp_path, jitter)), "--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        steps[jitter] = (doc["step_time_s"], doc["breakdown"]["os_jitter"])
    assert steps["0s"][1] == 0.0
    assert steps["2ms"][1] == pytest.approx(scaleout.os_jitter_s(16384, 2e-3))
    assert steps["2ms"][0] == pytest.approx(steps["0s"][0] + steps["2ms"][1])


@pytest.mark.parametrize("jitter, match", [("-1ms", "machine.host.os_jitter"), ("2", "machine.host.os_jitter"),
                                           ("20s", "from 0s to 10s")])
def test_a_bad_os_jitter_is_one_line_at_its_key(tmp_path, capsys, jitter, match):
    assert main(["predict", "training", "--scenario", str(_jitter_scenario(tmp_path, jitter))]) == 2
    err = capsys.readouterr().err
    assert match in err and len(err.strip().splitlines()) == 1


def test_release_spread_compares_one_configurations_eightfold_loss_across_sources():
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "studies"))
    from scaleout_fit import release_spread

    def points(per_gpu):           # (GPUs, measured tokens/s, three predictions the function must not read)
        return [(g, r * g, None, None, None) for g, r in per_gpu]

    groups = {("v1", "M", "t4 p2", "llm | x | bf16"): points([(16, 100.0), (128, 98.0), (256, 97.0)]),
              ("v2", "M", "t4 p2", "llm | x | bf16"): points([(16, 100.0), (128, 95.0)]),
              ("v2", "M", "t4 p2", "llm | x | fp8"): points([(16, 100.0), (128, 90.0)]),    # another precision: no pair
              ("v3", "M", "t8 p2", "llm | x | bf16"): points([(16, 100.0), (128, 50.0)])}   # another layout: no pair
    rows = release_spread(groups)
    assert len(rows) == 1
    assert rows[0]["gpus"] == [16, 128] and rows[0]["loss_measured_pp"] == {"v1": 2.0, "v2": 5.0}
    assert rows[0]["spread_pp"] == 3.0


def test_the_series_pattern_reads_labels_with_and_without_a_node_size():
    """studies/scaleout_fit.CONFIG reads a row's label into its series key; the MLPerf files' labels carry ', 8 a node'
    (', 8 a VM') after the GPU, which it skipped until session 60 (so their series were not read)."""
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "studies"))
    from scaleout_fit import CONFIG

    for label in ("GPT-3 175B (MLPerf gpt3), 512 x H100-SXM5-80GB, 8 a node, t4 p8 d16 c1 v12 z1 none",
                  "GPT-3 175B (MLPerf gpt3), 512 x H100 80GB, 8 a VM, t4 p8 d16 c1 v12 z1 none",
                  "GPT-3 175B (MLPerf gpt3), 512 x H100-SXM5-80GB, t4 p8 d16 c1 v12 z1 none"):
        assert CONFIG.match(label).group("name", "gpus", "t", "p", "rest") == ("GPT-3 175B (MLPerf gpt3)", "512", "4", "8",
                                                                               "c1 v12 z1 none")
    assert CONFIG.match("GPT-3 175B, 512 x H100, 8 a rack, t4 p8 d16 c1 v12 z1 none") is None


def test_fp8_amax_syncs_count_one_region_per_micro_batch_and_virtual_stage_each_way():
    """TE delayed scaling under Megatron-Core: an amax all-reduce at each FP8 autocast region's exit and one in its
    backward, a region per TransformerBlock (micro-batch x virtual stage), over the stage's tp x cp x dp ranks."""
    from simcluster.llm.framework import FRAMEWORKS, MEGATRON
    from simcluster.llm.spec import BatchSpec, ParallelSpec

    par = ParallelSpec(tp=8, pp=8, dp=32, cp=1, virtual_stages=12)
    fp8, bf16 = BatchSpec(global_batch=512, micro_batch=1, precision="fp8"), BatchSpec(global_batch=512, micro_batch=1)
    assert scaleout.amax_syncs(fp8, par, MEGATRON, 16) == (2 * 16 * 12, 8 * 32)
    assert scaleout.amax_syncs(bf16, par, MEGATRON, 16) == (0, 1)
    no_te = next(f for f in FRAMEWORKS.values() if not f.transformer_engine)
    assert scaleout.amax_syncs(fp8, par, no_te, 16) == (0, 1)


def test_fp8_amax_sync_loss_per_form_and_zero_without_a_group():
    assert scaleout.amax_sync_s(384, 1, 1e-4) == 0.0 and scaleout.amax_sync_s(0, 256, 1e-4) == 0.0
    h256 = float(sum(1 / k for k in range(1, 257)))
    assert scaleout.amax_sync_s(384, 256, 1e-4, form="fixed") == pytest.approx(384 * 1e-4 * (h256 - 1))
    assert scaleout.amax_sync_s(384, 256, 0.01, compute_s=3.0, form="white") == pytest.approx(
        384 * 0.01 * (3.0 / 384) ** 0.5 * scaleout.expected_max_normal(256))
    assert scaleout.amax_sync_s(384, 2048, 1e-4, form="fixed") > scaleout.amax_sync_s(384, 256, 1e-4, form="fixed")
    assert scaleout.amax_sync_s(384, 256, form="nccl", call_s=1e-4) == pytest.approx(384 * 1e-4)   # factor 1 x the call
    assert scaleout.amax_sync_s(384, 256, form="nccl", call_s=1e-4, factor=2.0) == pytest.approx(768 * 1e-4)
    assert scaleout.fp8_amax_s(None, (384, 256), 2048, 1.0, 3.0, form="fixed") == 0.0   # j = 0 shipped: jitter off
    with pytest.raises(ValueError, match="AMAX_SYNC_FORM"):
        scaleout.amax_sync_s(384, 256, 1e-4, form="bogus")


def test_current_scaling_fp8_pays_no_amax_all_reduce():
    """A row's "fp8-cs" (TE current scaling: each tensor's own amax, no history reduced over dp) is fp8 with
    fp8_scaling "current", and amax_syncs charges it nothing; delayed scaling (the default) is charged."""
    from simcluster.llm.framework import MEGATRON
    from simcluster.llm.spec import BatchSpec, LlmConfigError, ParallelSpec
    from simcluster.reference.llm_specs import FP8_SCALING, precision_of

    assert precision_of("FP8-CS") == "fp8" and FP8_SCALING["fp8-cs"] == "current"
    par = ParallelSpec(tp=8, pp=8, dp=32, cp=1, virtual_stages=12)
    cs = BatchSpec(global_batch=512, micro_batch=1, precision="fp8", fp8_scaling="current")
    assert scaleout.amax_syncs(cs, par, MEGATRON, 16) == (0, 1)
    assert scaleout.amax_syncs(BatchSpec(512, 1, "fp8"), par, MEGATRON, 16) == (2 * 16 * 12, 8 * 32)
    with pytest.raises(LlmConfigError, match="fp8_scaling"):
        BatchSpec(512, 1, "fp8", fp8_scaling="mxfp8")


def test_the_fp8_step_gains_the_amax_term_and_bf16_does_not(monkeypatch):
    """predict_llm adds fp8_amax_sync to the printed step (and names it in the breakdown) for fp8 only."""
    from simcluster.reference.llm import validate_published_llm

    path = ROOT / "calibration/published/llm-dgxc-benchmarking-v24.11.1-nemotron4-gpt3-h100.yaml"
    monkeypatch.setattr(scaleout, "AMAX_SYNC_FORM", "fixed")
    def rows(noise):
        monkeypatch.setattr(scaleout, "AMAX_SYNC_NOISE_S", noise)
        return {r.run: r for r in validate_published_llm(path).rows if r.predicted and "Nemotron-4 340B, 2048" in r.configuration}
    off, on = rows(0.0), rows(2e-4)
    moved = {run: on[run].predicted / off[run].predicted for run in off}
    fp8 = [run for run in off if on[run].regime.endswith("fp8")]
    assert fp8 and len(moved) == 2
    assert all(moved[run] < 0.99 for run in fp8)                                  # fp8 slower (tokens/s down)
    assert all(moved[run] == pytest.approx(1.0) for run in moved if run not in fp8)   # bf16 unchanged


def test_the_shipped_amax_term_is_the_priced_all_reduce_and_grows_with_the_group():
    """Shipped form "nccl": 2 m v all-reduces a step, each the fabric model's price over the stage's tp x cp x dp
    ranks; more ranks across more nodes cost more per call, and bf16 pays nothing."""
    from simcluster.reference.llm import validate_published_llm

    assert scaleout.AMAX_SYNC_FORM == "nccl" and scaleout.AMAX_CALL_FACTOR == 1.0
    path = ROOT / "calibration/published/llm-dgxc-benchmarking-v24.11.1-nemotron4-gpt3-h100.yaml"
    on = {r.run: r for r in validate_published_llm(path).rows if r.predicted and "Nemotron-4 340B" in r.configuration}
    saved = scaleout.AMAX_CALL_FACTOR
    try:
        scaleout.AMAX_CALL_FACTOR = 0.0
        off = {r.run: r for r in validate_published_llm(path).rows if r.predicted and "Nemotron-4 340B" in r.configuration}
    finally:
        scaleout.AMAX_CALL_FACTOR = saved
    lost = {}   # seconds per token the term adds, fp8 rows by GPU count
    for run, r in on.items():
        added = 1 / r.predicted - 1 / off[run].predicted
        if r.regime.endswith("bf16"):
            assert added == pytest.approx(0.0, abs=1e-15)
        else:
            lost[int(r.configuration.split(", ")[1].split(" x")[0])] = added * r.predicted   # share of the step
    assert sorted(lost) == [128, 256, 512, 1024, 2048]
    assert 0 < lost[128] < lost[2048] < 0.05                 # a few % of the step at most, growing with the ranks


def test_a_recipe_that_prints_fp8_but_scales_per_tensor_pays_no_amax_all_reduce():
    """Megatron-Bridge's H100 rows printed "FP8" whose presets run fp8_cs (`simcluster.recipe: fp8_scaling: current`)
    pay no fp8_amax_sync: their predictions do not move when the term's factor does."""
    from simcluster.reference.llm import validate_published_llm

    path = ROOT / "calibration/published/llm-megatron-bridge-26.04.01-dgx-h100-fp8.yaml"

    def rows(factor):
        saved, scaleout.AMAX_CALL_FACTOR = scaleout.AMAX_CALL_FACTOR, factor
        try:
            return {r.run: r.predicted for r in validate_published_llm(path).rows if r.predicted}
        finally:
            scaleout.AMAX_CALL_FACTOR = saved
    on, scaled = rows(1.0), rows(10.0)
    assert on and on == scaled


def _fp8_scenario(tmp_path, scaling):
    return _llama405b(tmp_path, f"fp8-{scaling}.yaml", "    micro_batch: 1\n",
                      f"    micro_batch: 1\n    precision: fp8\n    fp8_scaling: {scaling}\n")


def test_a_scenario_names_its_fp8_scaling_and_current_scaling_pays_no_amax_all_reduce(tmp_path, capsys):
    amax = {}
    for scaling in ("delayed", "current"):
        assert main(["predict", "training", "--scenario", str(_fp8_scenario(tmp_path, scaling)), "--json"]) == 0
        amax[scaling] = json.loads(capsys.readouterr().out)["breakdown"].get("fp8_amax_sync", 0.0)
    assert amax["delayed"] > 0 and amax["current"] == 0.0
    assert main(["predict", "training", "--scenario", str(_fp8_scenario(tmp_path, "mxfp8"))]) == 2
    err = capsys.readouterr().err
    assert "fp8_scaling" in err and "delayed, current" in err and len(err.strip().splitlines()) == 1
