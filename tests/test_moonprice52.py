"""Megatron-Core's unfused MoE router priced from calibration/h200x1-moonrouter52-2026-12-01 (llm/moe_router_unfused.py,
heldout/moonprice52.py; issue 44, session 52 moonprice52)."""

import json
from dataclasses import replace

import pytest
from conftest import ROOT

from simcluster.errors import SimclusterError
from simcluster.hardware.gpu import load_gpu
from simcluster.heldout import moonprice52
from simcluster.heldout.registration import moonprice52_facts
from simcluster.llm import moe_graphs, moe_router_term, moe_router_unfused, op_price, ops
from simcluster.llm.framework import MEGATRON
from simcluster.published import published_files, read_published
from simcluster.reference.llm import framework_of, llm_usage, predict_run

H100, H200 = ROOT / "models/gpu/h100-sxm.yaml", ROOT / "models/gpu/h200-sxm.yaml"
PUBLISHED = ROOT / "calibration/published"
MOONLIGHT = "llm-megatron-bridge-skills-moonlight16b-h100-bf16.yaml"
UNFUSED = replace(MEGATRON, moe_graphs=False, moe_router_fusion=False)


def test_the_shipped_file_is_the_bundles_runs_netted():
    assert moe_router_unfused.FILE.read_text() == moonprice52.document_text()
    d = moe_router_unfused.read()
    runs = json.loads((moonprice52.BUNDLE / "runs" / moonprice52.TRACE).read_text())["records"]
    rec = {(r["pass"], r["clock"]): r for r in runs if r["impl"] == "mcore-recipe"}
    gpu = load_gpu(H200)[0]
    assert d["router_f_s"] == pytest.approx(rec[("fwd", "kernels")]["time_s"] - gpu.gemm_time_s(2048, 64, 2048, dtype="bf16"))
    assert d["host_fwd_s"] == rec[("fwd", "host")]["time_s"] and d["kernels_fwd"] == rec[("fwd", "kernels")]["n_kernels"] == 55
    assert d["router_b_s"] > 0 and d["router_f_s"] > 0


def one_line(err, word):
    assert "\n" not in str(err) and word in str(err)


def test_bad_bundle_paths_are_one_line(tmp_path):
    for path, word in ((tmp_path, "missing"), (ROOT / "README.md", "a file, expected")):
        with pytest.raises(SimclusterError) as e:
            moonprice52.document(path)
        one_line(e.value, word)
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / moonprice52.TRACE).write_text("{}")
    with pytest.raises(SimclusterError) as e:
        moonprice52.document(tmp_path)
    one_line(e.value, "not a studies/moonrouter52_device.py output")
    with pytest.raises(SimclusterError, match="not the unfused router's figures"):
        moe_router_unfused.read(tmp_path / "runs" / moonprice52.TRACE)


def test_a_corrupt_shipped_data_file_is_one_line_naming_it(tmp_path, monkeypatch):
    # final read 52 item 8: FILE / TABLE_FILE are read when called (not bound at import), and a corrupt one is a one-line
    # SimclusterError naming the file (the CLI prints it as one line), not a traceback
    bad = tmp_path / "corrupt.json"
    bad.write_text('{"tokens": ')
    monkeypatch.setattr(moe_router_unfused, "FILE", bad)
    monkeypatch.setattr(moe_router_unfused, "_DOC", None)
    with pytest.raises(SimclusterError) as e:
        moe_router_unfused.router_extra_s(load_gpu(H200)[0], 2048, 64, backward=False)
    assert str(bad) in str(e.value) and "\n" not in str(e.value) and "unfused router's figures" in str(e.value)
    monkeypatch.setattr(moe_router_term, "TABLE_FILE", bad)
    with pytest.raises(SimclusterError) as e:
        moe_router_term.read_table()
    assert str(e.value).startswith(f"{bad}: not the MoE router term's table") and "\n" not in str(e.value)


def test_only_a_false_moe_router_fusion_marks_and_the_switch_turns_it_off():
    assert MEGATRON.moe_router_fusion and not moe_router_unfused.marks(MEGATRON)
    assert moe_router_unfused.marks(UNFUSED)
    with moonprice52_facts(False):
        assert not moe_router_unfused.marks(UNFUSED)
    assert moe_router_unfused.marks(UNFUSED)


def test_gpu_extra_scales_by_elements_and_hbm_and_replaces_the_table_row():
    h200, h100 = load_gpu(H200)[0], load_gpu(H100)[0]
    d = moe_router_unfused.figures()
    assert moe_router_unfused.router_extra_s(h200, 2048, 64, False) == pytest.approx(d["router_f_s"])
    assert moe_router_unfused.router_extra_s(h200, 4096, 64, True) == pytest.approx(2 * d["router_b_s"])
    assert moe_router_unfused.router_extra_s(h100, 2048, 64, False) == pytest.approx(
        d["router_f_s"] * h200.hbm_bandwidth_Bps / h100.hbm_bandwidth_Bps)
    op = ops.gemm("router", 2048, 64, 2048)
    fused, unfused = replace(op, term=moe_router_term.RouterTerm.TABLE), replace(op, term=moe_router_term.RouterTerm.UNFUSED)
    t = h200.gemm_time_s(2048, 64, 2048, dtype="bf16")
    assert moe_router_term.adjust(h200, unfused, t) == pytest.approx(t + d["router_f_s"])
    assert moe_router_term.adjust(h200, fused, t) < moe_router_term.adjust(h200, unfused, t)   # 2.6 x the torch chain
    assert all(o.term is moe_router_term.RouterTerm.UNFUSED for o in op_price.gemm_backward(unfused))


def test_host_of_the_ungraphed_unfused_router_is_the_bundles_per_kernel():
    d = moe_router_unfused.figures()
    seg = [1e-5, 2e-5]
    _, issue = moe_graphs.with_ungraphed(seg, 1e-4, UNFUSED)
    router = issue[len(seg):len(seg) + 54]
    assert len(issue) == len(seg) + 54 + moe_graphs.PREPROCESS_CALLS == len(seg) + moe_graphs.ungraphed_calls(UNFUSED)
    assert router.sum() == pytest.approx(d["host_fwd_s"] * 54 / 55)
    _, fused = moe_graphs.with_ungraphed(seg, 1e-4, replace(UNFUSED, moe_router_fusion=True))
    assert len(fused) == len(seg) + moe_graphs.UNGRAPHED_CALLS
    _, graphed = moe_graphs.with_ungraphed(seg, 1e-4, replace(UNFUSED, moe_graphs=True))
    assert list(graphed) == [1e-4, 1e-4]   # one graph launch: the unfused router's calls are inside it


def _llm_files():
    for path in published_files(None, "llm-"):
        yield path.name, read_published(path, "published-llm-run")


def test_the_moonlight_file_alone_states_the_unfused_router():
    """Session 52 moonprice52's reading (docs/models/llm-findings.md): Moonlight's recipe sets moe_router_fusion False
    (Megatron-Bridge 600d069b moonlight_16b.py L225); the one other published LLM file read as unfused is session 53
    moe53's AWS Qwen3-30B file (its `recipe: moe_router_fusion: false`, Megatron-Bridge v0.4.2 recipes/qwen/qwen3_moe.py
    L76, as the file cites; review B53, red on main since its merge)."""
    ref = read_published(PUBLISHED / MOONLIGHT, "published-llm-run")
    usage = llm_usage(ref)
    for i, run in enumerate(ref.runs):
        assert not framework_of(ref, run, i, usage.frameworks).moe_router_fusion
    marked = []
    for name, ref in _llm_files():
        usage = llm_usage(ref)
        marked += [name for i, run in enumerate(ref.runs) if not framework_of(ref, run, i, usage.frameworks).moe_router_fusion]
    assert set(marked) == {MOONLIGHT, "llm-awsome-megatron-bridge-qwen3-30b-p5-h100.yaml"}


def test_moonlight_rows_slow_down_and_the_switch_restores_them():
    ref = read_published(PUBLISHED / MOONLIGHT, "published-llm-run")
    usage = llm_usage(ref)
    now = predict_run(ref, usage, 0, ref.runs[0])
    with moonprice52_facts(False):
        then = predict_run(ref, usage, 0, ref.runs[0])
    assert now.result.step_time_s > then.result.step_time_s
    assert predict_run(ref, usage, 0, ref.runs[0]).result.step_time_s == now.result.step_time_s


def test_the_moe_caveat_names_the_unfused_routers_source_only_where_it_is_priced():
    from simcluster.llm import caveats
    from simcluster.llm.spec import ParallelSpec, TransformerSpec

    gpu = load_gpu(H100)[0]
    model = TransformerSpec(layers=4, hidden=2048, ffn=6144, heads=32, kv_heads=4, vocab=32768, seq=512, experts=64, top_k=6,
                            expert_ffn=768)
    par = ParallelSpec(tp=1, pp=1, dp=8, ep=8)
    text = " ".join(caveats.caveats(model, par, UNFUSED, gpu))
    assert "the unfused router (moe_router_fusion false)" in text and "54 forward calls" in text and "26.3 us" in text
    assert "KVM Xeon, not a DGX host" in text   # review B52 finding 1: the host part is the device's
    fused = " ".join(caveats.caveats(model, par, MEGATRON, gpu))
    assert "is priced from one measurement" not in fused and "moe_router_fusion: false}" in fused   # how to ask for it
    with moonprice52_facts(False):
        assert "unfused router" not in " ".join(caveats.caveats(model, par, UNFUSED, gpu))


def test_a_stopped_run_is_refused(tmp_path):
    # final read 52 item 7: moonprice52 reads its trace through moeker50.read_trace / check_complete, which refuse a run
    # the device script cut short (device.stopped)
    doc = json.loads((moonprice52.BUNDLE / "runs" / moonprice52.TRACE).read_text())
    doc["device"]["stopped"] = "budget"
    path = tmp_path / moonprice52.TRACE
    path.write_text(json.dumps(doc))
    with pytest.raises(SimclusterError) as e:
        moonprice52.records(path)
    one_line(e.value, "the run was stopped (budget)")
