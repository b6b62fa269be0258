"""The MoE router and dispatcher preprocess issued call by call where a recipe does not CUDA-graph them
(llm/moe_graphs.py; issue 44, session 37 moe)."""

from dataclasses import replace

import pytest
from conftest import ROOT, one_line_refusal

from simcluster.cards import load_collective
from simcluster.errors import SimclusterError
from simcluster.hardware.gpu import load_gpu
from simcluster.llm import moe_graphs, moe_sync, ops
from simcluster.llm.comm import Network
from simcluster.llm.framework import MEGATRON
from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec
from simcluster.llm.work import build_work
from simcluster.published import read_published
from simcluster.reference.llm import framework_of, llm_usage

GPU = ROOT / "models/gpu/h100-sxm.yaml"
NET = ROOT / "models/collective/h200x4-primitives.yaml"
PUBLISHED = ROOT / "calibration/published"
QWEN_LIKE = dict(layers=4, hidden=2048, ffn=6144, heads=32, kv_heads=4, vocab=32768, seq=512, attn_head_dim=128, qk_norm=True,
                 experts=128, top_k=8, expert_ffn=768)
UNGRAPHED = replace(MEGATRON, moe_graphs=False)


def test_captured_is_the_default_and_only_false_adds_calls():
    assert MEGATRON.moe_graphs and moe_graphs.ungraphed_calls(MEGATRON) == 0
    assert moe_graphs.ungraphed_calls(UNGRAPHED) == moe_graphs.UNGRAPHED_CALLS > 0


def test_ungraphed_calls_add_at_most_their_host_time_and_all_of_it_when_host_bound():
    gpu, _ = load_gpu(GPU)
    fwd = [ops.memory("rmsnorm", 1e3), ops.gemm("router", 64, 8, 64), ops.permutation("permute", 1e3),
           ops.gemm("expert_up", 64, 64, 64, 16), ops.gemm("expert_down", 64, 64, 64, 16)]
    bwd = [ops.memory("rmsnorm.bwd", 2e3)]
    extra = moe_graphs.UNGRAPHED_CALLS * moe_graphs.HOST_CALL_S
    for c, ep in ((100e-6, 0.0), (1e-3, 0.0), (100e-6, 2.0)):
        graphed = moe_sync.sync_host_s(gpu, fwd, bwd, "bf16", ep, ep, 4, c, MEGATRON)
        assert graphed == moe_sync.sync_host_s(gpu, fwd, bwd, "bf16", ep, ep, 4, c)   # the default: captured, nothing moves
        f, b = moe_sync.sync_host_s(gpu, fwd, bwd, "bf16", ep, ep, 4, c, UNGRAPHED)
        assert b == graphed[1]   # the backward has no sync and no preprocess
        assert graphed[0] <= f <= graphed[0] + extra + 1e-15
        if c == 1e-3:   # every call's host time above its kernel's: the host is behind to the sync, all of it shows but
            # the router's own kernel, which now runs while the host issues the calls after it
            seg = moe_sync.forward_segment(gpu, fwd, "bf16", ep)
            assert f == pytest.approx(graphed[0] + extra - seg[-1], rel=1e-9)
        if ep == 2.0:   # a second of dispatch and combine in the segment: the host gets ahead and the calls hide
            assert f == graphed[0]
    assert moe_sync.sync_host_s(gpu, fwd, bwd, "bf16", 0.0, 0.0, 4, 0.0, UNGRAPHED) == (0.0, 0.0)


def test_the_step_moves_only_for_an_ungraphed_moe_layer_without_a2a_overlap():
    gpu, _ = load_gpu(GPU)
    net = Network(load_collective(NET)[0], 4)

    def host(model, par, fw):
        w = build_work(model, par, BatchSpec(4, 1, "bf16"), gpu, net, fw=fw)
        return w.stages[0].forward[0].parts["host"]

    moe, dense = TransformerSpec(**QWEN_LIKE), TransformerSpec(**{k: v for k, v in QWEN_LIKE.items() if k not in ("experts", "top_k", "expert_ffn")})
    assert host(dense, ParallelSpec(dp=4), UNGRAPHED) == host(dense, ParallelSpec(dp=4), MEGATRON)
    assert host(moe, ParallelSpec(dp=4, ep=4), UNGRAPHED) > host(moe, ParallelSpec(dp=4, ep=4), MEGATRON)
    overlap = ParallelSpec(dp=4, ep=4, moe_a2a_overlap=True)
    assert host(moe, overlap, UNGRAPHED) == host(moe, overlap, MEGATRON) == 0.0


def test_the_published_files_state_it_and_a_bad_value_is_one_line(tmp_path):
    for stem, graphed in (("llm-megatron-bridge-26.04-26.06-dgx-h100-moe", False), ("llm-megatron-bridge-26.02.01-26.04-dgx-h100-moe", False),
                          ("llm-megatron-bridge-26.02-26.04.01-dgx-h100-gpt-oss", False), ("llm-megatron-bridge-skills-qwen3-30b-h100-bf16", True),
                          ("llm-dgxc-benchmarking-v25.08-deepseek-v3-h100", True)):
        ref = read_published(PUBLISHED / f"{stem}.yaml", "published-llm-run")
        assert {framework_of(ref, r).moe_graphs for r in ref.runs} == {graphed}, stem

    def bad(doc):
        doc["simcluster"]["recipe"]["moe_graphs"] = "sometimes"

    def read(path):
        llm_usage(read_published(path, "published-llm-run"))

    text = one_line_refusal(read, PUBLISHED / "llm-megatron-bridge-26.04-26.06-dgx-h100-moe.yaml", bad, tmp_path, SimclusterError)
    assert "moe_graphs" in text


QWEN3_30B = {"layers": 48, "hidden": 2048, "ffn": 6144, "heads": 32, "kv_heads": 4, "vocab": 151936, "seq": 4096,
             "attn_head_dim": 128, "qk_norm": True, "experts": 128, "top_k": 8, "expert_ffn": 768}


def _qwen3_ep16(tmp_path, framework: str | None, name: str, a2a: bool = False):
    """A Qwen3 30B-A3B EP 16 HybridEP job on two DGX-H100 nodes (the 26.04 rows' layout, 2 micro-batches a GPU): its
    layers are short, so the host is behind at every forward sync and ungraphed calls show whole."""
    import json

    machine = (ROOT / "scenarios/llm/deepseek-v3-ep.yaml").read_text().replace("../../", f"{ROOT}/")
    machine = machine[machine.index("machine:"):machine.index("variants:")].replace("nodes: 32", "nodes: 2")
    job = {"kind": "llm_training", "model": QWEN3_30B, "global_batch": 32, "micro_batch": 1, "precision": "bf16",
           "parallel": {"tp": 1, "pp": 1, "dp": 16, "ep": 16, "moe_dispatcher": "deepep", "moe_a2a_overlap": a2a}}
    text = f"name: qwen3-ep16\n{machine}jobs:\n  - " + json.dumps(job)
    if framework:
        text = text[:-1] + f', "framework": {framework}}}'
    path = tmp_path / name
    path.write_text(text + "\n")
    return path


def test_a_scenario_sets_moe_graphs_in_its_framework_block(tmp_path):
    """`framework: {moe_graphs: false}` sets FrameworkSpec.moe_graphs; on a Qwen3 30B EP 16 job the step grows by the
    ungraphed calls' host time, every forward MoE layer pass; refused where it prices nothing (a dense model) and where
    it changes nothing (A2A overlap)."""
    import json

    from simcluster import scenario
    from simcluster.build import run_file
    from simcluster.heldout.registration import before_adopt49

    block = '{"name": "megatron", "moe_graphs": false}'
    default, ungraphed = _qwen3_ep16(tmp_path, None, "graphed.yaml"), _qwen3_ep16(tmp_path, block, "ungraphed.yaml")
    on, off = scenario.load(default).jobs[0], scenario.load(ungraphed).jobs[0]
    assert on.moe_graphs is None and on.framework_spec().moe_graphs
    assert off.moe_graphs is False and off.framework_spec().moe_graphs is False
    with before_adopt49():   # the router term off: the calls' host time against the router GEMM's own kernel
        steps = [next(iter(run_file(p))).jobs[0].prediction.step_time_s for p in (default, ungraphed)]
    passes = 32 // 16 * QWEN3_30B["layers"]   # micro-batches a GPU x MoE layers (pp 1)
    expected = passes * moe_graphs.UNGRAPHED_CALLS * moe_graphs.HOST_CALL_S
    assert steps[1] - steps[0] == pytest.approx(expected, rel=0.1)   # all of it shows (less the router's own kernel)
    # adopted (session 49): the measured router and permutation kernels run longer on the GPU than the ungraphed
    # calls' host time, which hides behind them on this row (never a faster step)
    adopted = [next(iter(run_file(p))).jobs[0].prediction.step_time_s for p in (default, ungraphed)]
    assert adopted[1] >= adopted[0] > steps[0]
    overlap = _qwen3_ep16(tmp_path, block, "overlap.yaml", a2a=True)
    with pytest.raises(SimclusterError, match=r"framework\.moe_graphs: changes nothing under parallel\.moe_a2a_overlap"):
        scenario.load(overlap)
    dense = {k: v for k, v in QWEN3_30B.items() if k not in ("experts", "top_k", "expert_ffn")}
    bad = tmp_path / "bad.yaml"
    bad.write_text(ungraphed.read_text().replace(json.dumps(QWEN3_30B), json.dumps(dense))
                   .replace('"ep": 16, "moe_dispatcher": "deepep", "moe_a2a_overlap": false', '"ep": 1'))
    with pytest.raises(SimclusterError, match=r"framework\.moe_graphs: prices Megatron-Core's MoE router"):
        scenario.load(bad)


def test_the_moe_caveat_states_the_graphs_assumption_and_the_extrapolated_cost():
    from simcluster.llm.caveats import caveats

    gpu, _ = load_gpu(GPU)
    moe, par = TransformerSpec(**QWEN_LIKE), ParallelSpec(dp=8, ep=8)
    (graphed,), (ungraphed,) = caveats(moe, par, MEGATRON, gpu), caveats(moe, par, UNGRAPHED, gpu)
    assert "assumed CUDA-graphed" in graphed and "moe_graphs: false" in graphed
    assert f"{moe_graphs.UNGRAPHED_CALLS} more host calls" in ungraphed and "extrapolated" in ungraphed
    (overlap,) = caveats(moe, ParallelSpec(dp=8, ep=8, moe_a2a_overlap=True), MEGATRON, gpu)
    assert "CUDA-graphed" not in overlap   # no host term there, nothing assumed


def test_a_scenario_sets_moe_router_fusion_in_its_framework_block(tmp_path):
    """`framework: {moe_router_fusion: false}` (review B52 finding 5) runs Megatron-Core's unfused router
    (llm/moe_router_unfused.py): the GPU router op grows by its measured extra, so the step grows; the default stays
    fused, as the published files'; a bad value, a dense model and a framework outside the term are one-line refusals."""
    import json

    from simcluster import scenario
    from simcluster.build import run_file

    default = _qwen3_ep16(tmp_path, None, "fused.yaml")
    unfused = _qwen3_ep16(tmp_path, '{"name": "megatron", "moe_router_fusion": false}', "unfused.yaml")
    on, off = scenario.load(default).jobs[0], scenario.load(unfused).jobs[0]
    assert on.moe_router_fusion is None and on.framework_spec().moe_router_fusion is True
    assert off.moe_router_fusion is False and off.framework_spec().moe_router_fusion is False
    steps = [next(iter(run_file(p))).jobs[0].prediction.step_time_s for p in (default, unfused)]
    assert steps[1] > steps[0]
    bad = tmp_path / "bad.yaml"
    bad.write_text(unfused.read_text().replace('"moe_router_fusion": false', '"moe_router_fusion": "maybe"'))
    with pytest.raises(SimclusterError, match=r"moe_router_fusion") as info:
        scenario.load(bad)
    assert "\n" not in str(info.value)
    dense = {k: v for k, v in QWEN3_30B.items() if k not in ("experts", "top_k", "expert_ffn")}
    bad.write_text(unfused.read_text().replace(json.dumps(QWEN3_30B), json.dumps(dense))
                   .replace('"ep": 16, "moe_dispatcher": "deepep", "moe_a2a_overlap": false', '"ep": 1'))
    with pytest.raises(SimclusterError, match=r"framework\.moe_router_fusion: prices Megatron-Core's MoE router"):
        scenario.load(bad)
