"""HSDP (parallel.dp_shard: shard inside a group, replicate across) on the ZeRO-3 path (llm/hsdp.py, issue 44): the split
of the collectives between the shard and replica groups by hand, memory sharded by the shard group, the refusals at
their keys, shard == dp as exactly ZeRO-3, the published reader's `sharding: HSDP`, and the scenario from the CLI."""

from __future__ import annotations

import json
import pathlib

import pytest

from simcluster.build import llm_network
from simcluster.cli import main
from simcluster.errors import ScenarioError, SimclusterError
from simcluster.hardware.gpu import load_gpu
from simcluster.llm import comm, hsdp
from simcluster.llm.framework import FMS_FSDP, FRAMEWORKS, MEGATRON, TORCHTITAN_FSDP2
from simcluster.llm.memory import GiB, memory_per_gpu
from simcluster.llm.param_counts import layer_params
from simcluster.llm.predict import predict_llm
from simcluster.llm.spec import BatchSpec, LlmConfigError, ParallelSpec, TransformerSpec
from simcluster.llm.spec_check import check_framework
from simcluster.reference.llm_specs import spec_of
from simcluster.scenario import load

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "scenarios/llm/fsdp-hsdp-7b.yaml"
LLAMA2_7B = TransformerSpec(32, 4096, 11008, 32, 32, 32000, 4096)
BATCH = BatchSpec(256, 2)
HSDP, FULL = ParallelSpec(dp=128, zero=3, dp_shard=8), ParallelSpec(dp=128, zero=3)


@pytest.fixture(scope="module")
def machine():
    return load(SCENARIO).machine        # 16 nodes x 8 H100, one 400G NIC per GPU


def _net(machine):
    return llm_network(machine)


# --- the collectives, by hand -------------------------------------------------------------------------------------------
def test_the_gathers_and_scatters_stay_in_the_shard_group_and_the_shards_are_all_reduced_across(machine, monkeypatch):
    """dp 16 = 2 nodes x 8, shard 8, 4 layers of 2,000 parameters (8,000), torchtitan's dtypes (gather bf16, reduce fp32).
    Per layer: all_gather of 2,000 x 2 = 4,000 bytes and reduce_scatter of 2,000 x 4 = 8,000 bytes over the node's 8
    ranks; all_reduce of the rank's shard, 2,000 / 8 x 4 = 1,000 bytes, over the 2 replicas (one per node)."""
    calls = []

    def fake(net, group, op, size_bytes):
        calls.append((group.name, group.size, group.nodes, op, size_bytes))
        return size_bytes * 1e-9                 # 1 ns a byte: the totals below are bytes x 1e-9

    monkeypatch.setattr(comm, "collective_s", fake)
    net, par = _net(machine), ParallelSpec(dp=16, zero=3, dp_shard=8)
    z = hsdp.zero3_calls(net, comm.groups(par, net), par, TORCHTITAN_FSDP2, 8000.0, 0.0, 4)
    assert sorted(set(calls)) == [("dp_replicate", 2, 2, "all_reduce", 1000.0), ("dp_shard", 8, 1, "all_gather", 4000.0),
                                  ("dp_shard", 8, 1, "reduce_scatter", 8000.0)]
    assert (z.gather_s, z.scatter_s, z.replica_s) == pytest.approx((16e-6, 32e-6, 4e-6))
    assert [x for s in z.backward_streams() for x in s] == pytest.approx([0.0, 48e-6, 8e-6, 4e-6])   # the all_reduces one reduce_scatter behind
    assert z.tail_s == pytest.approx(9e-6) and z.backward_total_s == pytest.approx(52e-6)
    calls.clear()   # FULL_SHARD over the 16 ranks: the same gathers and scatters over both nodes, no all_reduce
    full = ParallelSpec(dp=16, zero=3)
    z = hsdp.zero3_calls(net, comm.groups(full, net), full, TORCHTITAN_FSDP2, 8000.0, 0.0, 4)
    assert sorted(set(calls)) == [("dp", 16, 2, "all_gather", 4000.0), ("dp", 16, 2, "reduce_scatter", 8000.0)]
    assert z.replica_s == 0 and [x for s in z.backward_streams() for x in s] == pytest.approx([0.0, 48e-6])


def test_the_groups_are_placed_as_hybrid_shard_builds_them(machine):
    """FSDP1's intra-node group (the node's 8 GPUs: NVLink) and inter-node group (one rank per node: the fabric, each of the
    node's 8 groups on 1/8 of its NICs); a shard group larger than a node crosses the fabric too."""
    net = _net(machine)
    shard, replica = hsdp.shard_groups(HSDP, net)
    assert (shard.size, shard.nodes, shard.inside_node) == (8, 1, True)
    assert (replica.size, replica.ranks_per_node, replica.nodes) == (16, 1, 16)
    wide, across = hsdp.shard_groups(ParallelSpec(dp=128, zero=3, dp_shard=16), net)
    assert (wide.nodes, across.size, across.ranks_per_node) == (2, 8, 1)
    assert hsdp.describe(FULL, net) == {} and set(hsdp.describe(HSDP, net)) == {"dp_shard", "dp_replicate"}


def test_the_fp32_all_reduce_is_twice_the_bf16_one(machine):
    """fms-fsdp reduces in bf16 (grad_bytes 2), torchtitan in fp32 (4): the replica group's all_reduce moves twice the bytes."""
    net = _net(machine)
    g = comm.groups(HSDP, net)
    params = layer_params(LLAMA2_7B, HSDP).total * 32
    bf16, fp32 = (hsdp.zero3_calls(net, g, HSDP, fw, params, 0.0, 32) for fw in (FMS_FSDP, TORCHTITAN_FSDP2))
    assert bf16.gather_s == fp32.gather_s and fp32.replica_s > 1.5 * bf16.replica_s


# --- memory ------------------------------------------------------------------------------------------------------------
def test_parameters_gradients_and_optimizer_state_are_sharded_by_the_shard_group():
    p = LLAMA2_7B.parameter_count()
    gathered = 2 * 2.0 * layer_params(LLAMA2_7B, HSDP).total     # the layer it runs and the one it prefetches, bf16
    for par, shard in ((HSDP, 8), (FULL, 128)):
        mem = memory_per_gpu(LLAMA2_7B, par, BATCH, 80 * GiB, TORCHTITAN_FSDP2)
        assert mem.parameters == pytest.approx(2.0 * p / shard + gathered)
        assert mem.gradients == pytest.approx(4.0 * p / shard)
        assert mem.optimizer == pytest.approx(10.0 * p / shard)


# --- shard == dp is ZeRO-3 ----------------------------------------------------------------------------------------------
def test_a_shard_of_the_whole_dp_group_is_exactly_full_shard(machine):
    gpu = load_gpu(machine.gpu_card)[0]

    def run(par):
        r = predict_llm(LLAMA2_7B, par, BATCH, gpu, _net(machine), 128, trace=False, framework=TORCHTITAN_FSDP2)
        return r.step_time_s, r.breakdown, r.memory_per_gpu_GiB

    assert run(ParallelSpec(dp=128, zero=3, dp_shard=128)) == run(FULL)
    hybrid = run(HSDP)
    assert hybrid != run(FULL) and hybrid[2]["optimizer"] == pytest.approx(16 * run(FULL)[2]["optimizer"])


# --- refusals ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs,key,words", [
    ({"dp": 16, "zero": 3, "dp_shard": 3}, "parallel.dp_shard", "divisor of dp"),
    ({"dp": 16, "zero": 3, "dp_shard": 32}, "parallel.dp_shard", "divisor of dp"),
    ({"dp": 16, "zero": 3, "dp_shard": -8}, "parallel.dp_shard", "divisor of dp"),
    ({"dp": 16, "zero": 1, "dp_shard": 8}, "parallel.dp_shard", "needs zero 3"),
    ({"dp": 16, "zero": 3, "dp_shard": 8, "cp": 2}, "parallel.cp", "not modelled"),
    ({"dp": 16, "zero": 3, "dp_shard": 8, "ep": 2}, "parallel.ep", "not modelled"),
])
def test_a_bad_shard_is_refused_at_its_key(kwargs, key, words):
    with pytest.raises(LlmConfigError, match=words) as err:
        ParallelSpec(**kwargs)
    assert err.value.key == key


def test_only_the_fsdp_trainers_run_hsdp():
    check_framework(HSDP, TORCHTITAN_FSDP2)
    check_framework(ParallelSpec(dp=16, zero=3, dp_shard=16), MEGATRON)     # shard == dp: plain ZeRO-3
    with pytest.raises(LlmConfigError, match="FSDP trainers only") as err:
        check_framework(HSDP, MEGATRON)
    assert err.value.key == "parallel.dp_shard"
    tp_hsdp = ParallelSpec(tp=2, dp=64, zero=3, dp_shard=8)   # FSDP1's HYBRID_SHARD groups are a node's GPUs: no TP inside
    check_framework(tp_hsdp, TORCHTITAN_FSDP2)
    check_framework(ParallelSpec(tp=2, dp=64, zero=3), FRAMEWORKS["fms-fsdp"])   # FULL_SHARD beside TP: not refused here
    for name in ("fms-fsdp", "composer-fsdp"):
        with pytest.raises(LlmConfigError, match="torchtitan-fsdp2 only") as err:
            check_framework(tp_hsdp, FRAMEWORKS[name])
        assert err.value.key == "parallel.dp_shard"


def _scenario(tmp_path, parallel: str, framework: str) -> pathlib.Path:
    """The shipped scenario with its HSDP job's (jobs[1]) parallel settings and framework replaced."""
    text = SCENARIO.read_text().replace("../../", f"{ROOT}/")
    hsdp_job = text.index("# HSDP: shard groups")
    job = text[hsdp_job:].replace("{dp: 128, zero: 3, dp_shard: 8}", parallel, 1).replace("torchtitan-fsdp2", framework, 1)
    path = tmp_path / "s.yaml"
    path.write_text(text[:hsdp_job] + job)
    return path


@pytest.mark.parametrize("parallel,framework,words", [
    ("{dp: 128, zero: 3, dp_shard: 8}", "megatron", "FSDP trainers only"),
    ("{dp: 128, zero: 3, dp_shard: 8}", "torch", "FSDP trainers only"),
    ("{dp: 128, zero: 3, dp_shard: 6}", "fms-fsdp", "divisor of dp"),
    ("{dp: 128, zero: 2, dp_shard: 8}", "fms-fsdp", "needs zero 3"),
    ("{tp: 2, dp: 64, zero: 3, dp_shard: 8}", "fms-fsdp", "torchtitan-fsdp2 only"),
    ("{tp: 2, dp: 64, zero: 3, dp_shard: 8}", "composer-fsdp", "torchtitan-fsdp2 only"),
])
def test_a_scenario_names_the_key_in_one_line(tmp_path, parallel, framework, words):
    with pytest.raises(ScenarioError, match=rf"jobs\[1\]\.parallel\.dp_shard: .*{words}") as err:
        load(_scenario(tmp_path, parallel, framework))
    assert "\n" not in str(err.value).split(" (hint")[0].strip()


# --- the published reader and the scenario -----------------------------------------------------------------------------
def test_a_printed_hsdp_row_shards_over_the_node():
    run = {"model": {"layers": 32, "hidden": 4096, "ffn": 11008, "heads": 32, "vocab": 32000, "seq": 4096},
           "parallel": {"tp": 1, "pp": 1, "dp": 96, "zero": 3, "sharding": "HSDP"}, "batch": {"global_batch": 192, "micro_batch": 2}}
    (_, par, _), _, _ = spec_of(run, {})
    assert (par.dp_shard, par.shard) == (8, 8)
    run["parallel"] |= {"tp": 2, "dp": 48}   # under TP a node holds 8 / tp data-parallel ranks
    assert spec_of(run, {})[0][1].shard == 4
    run["parallel"] |= {"tp": 1}   # a machine of 4 GPUs a node (system.gpus_per_node, session 47): its node's 4
    assert spec_of(run, {}, node_gpus=4)[0][1].shard == 4
    run["parallel"] |= {"tp": 1, "dp": 96, "sharding": "FSDP"}
    assert spec_of(run, {})[0][1].shard == 96
    run["parallel"]["sharding"] = "ZeRO++"
    with pytest.raises(SimclusterError, match="sharding"):
        spec_of(run, {})


def test_the_scenario_runs_from_the_cli(capsys):
    assert main(["run", str(SCENARIO), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for variant in out["variants"]:
        full, hybrid = variant["jobs"]
        assert "dp_shard" not in full["groups"]
        assert hybrid["groups"]["dp_shard"]["placement"] == "NVLink" and hybrid["groups"]["dp_replicate"]["placement"] == "fabric"
        assert hybrid["memory_per_gpu_GiB"]["optimizer"] == pytest.approx(16 * full["memory_per_gpu_GiB"]["optimizer"])
