"""MLA's query / key / value layout (llm/mla_layout.py) against DeepSeek's published profile, and the profile study's
reading of a Chrome trace (studies/moe_deepseek_profile.py; issue 44, session 36 moeprof, mendM).

The profile check is development, not a test of the model: the profile prompted the op (moeprof read the profile's
rotary and copy kernels, then priced the layout), so agreeing with it is what the op was built to do. It can still
fail (a change to the op's bytes or the card's memory rate moves it), and it says which form DeepSeek's stack fits:
the unfused one (the whole query written), not Megatron's fused rotary."""

from __future__ import annotations

import json

import pytest
from conftest import load_script


@pytest.fixture(scope="module")
def study():
    return load_script("studies/moe_deepseek_profile.py")


def test_mla_layout_prices_the_profiled_rotary_and_copy_kernels(study):
    """Development (the profile prompted the op). The profile's rotary and copy kernels of MLA (forward, and the
    backward's recompute plus gradient) against the model's unfused op at DeepSeek-V3's shape, TP 1, 4096 tokens: within
    15% (the rope dimensions alone, the op before moeprof, priced 181 us against the profile's 935 us a layer). The fused
    form (Megatron's in-place query rotary, 743 us) is more than 15% under it: DeepSeek's kernels write the whole query."""
    summary = json.loads(study.SUMMARY.read_text())
    per = summary["layers_per_chunk"]
    got = summary["classes"]["rotary / MLA copies"]
    prof_us = (got["fwd"]["share_us"] + got["bwd"]["share_us"]) / per
    model = study.model_layer()["rotary / MLA copies"]
    model_us = 1e6 * (model["fwd"] + model["bwd"])
    assert model_us == pytest.approx(prof_us, rel=0.15)
    fused = study.model_layer(rope_fusion=True)["rotary / MLA copies"]
    assert 1e6 * (fused["fwd"] + fused["bwd"]) < 0.85 * prof_us


def test_fused_rope_moves_only_the_querys_rope_slice():
    """Megatron-Core's fused_apply_mla_rope_for_q rotates the last d_rope elements of each query head in place: the
    query's bytes are 2 T a' d_rope 2 (read + write) fused and 2 T a' (d_nope + d_rope) 2 unfused; key and value the same."""
    from simcluster.llm.mla_layout import mla_layout_bytes
    from simcluster.llm.spec import TransformerSpec
    DEEPSEEK_V3 = TransformerSpec(61, 7168, 18432, 128, 128, 129280, 4096, experts=256, top_k=8, expert_ffn=2048, attn_head_dim=128,
                                  q_lora_rank=1536, kv_lora_rank=512, qk_rope_dim=64, v_head_dim=128)
    T, a = 4096, 128
    kv = T * a * (128 + 128) * 2 + T * 64 * 2 + T * a * (192 + 128) * 2
    assert mla_layout_bytes(DEEPSEEK_V3, T, a, rope_fusion=True) == 2 * T * a * 64 * 2 + kv
    assert mla_layout_bytes(DEEPSEEK_V3, T, a, rope_fusion=False) == 2 * T * a * 192 * 2 + kv


def test_profile_shares_add_up_to_the_compute_streams_busy_time(study):
    summary = json.loads(study.SUMMARY.read_text())
    shares = sum(p["share_us"] for c in summary["classes"].values() for p in c.values())
    assert shares == pytest.approx(summary["compute_busy_us"], rel=1e-6)
    assert set(summary["classes"]) <= set(study.CLASSES) | set(study.COMM_CLASSES)
    assert summary["sms"] == max(summary["gemm_ctas"]) + max(summary["comm_blocks"])


def _ev(cat, name, ts, dur, tid, corr=None, grid=None):
    args = {} if corr is None else {"correlation": corr}
    if grid:
        args["grid"] = grid
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": 0, "tid": tid, "args": args}


def _trace(events):
    return {"traceEvents": events, "traceName": "t", "distributedInfo": {"rank": 0, "world_size": 2},
            "deviceProperties": [{"name": "card", "numSms": 132}]}


def test_summary_splits_concurrent_kernels_and_classes_them(study):
    """Two compute kernels overlapping for 10 us share it; a DeepEP kernel beside them is communication; classes by name
    and host range (a grouped GEMM in mlp(F) is the experts', a GEMM in attn(F) the attention's)."""
    ev = [_ev("user_annotation", "attn(F)", 0, 100, 1), _ev("user_annotation", "mlp(F)", 100, 100, 1),
          _ev("cuda_runtime", "launch", 10, 1, 1, 1), _ev("cuda_runtime", "launch", 110, 1, 1, 2),
          _ev("cuda_runtime", "launch", 120, 1, 1, 3),
          _ev("kernel", "cutlass::device_kernel<dpsk::grouped_gemm::cuda::fp8_ptp128c::GemmKernel>", 1000, 30, 7, 1, [112, 1, 1]),
          _ev("kernel", "cutlass::device_kernel<dpsk::grouped_gemm::cuda::m_grouped_fp8_ptp128c::GemmKernel>", 1020, 30, 23, 2,
              [1, 112, 1]),
          _ev("kernel", "dpsk::ep::internode::dispatch<false, 8>", 1000, 60, 27, 3, [20, 1, 1])]
    s = study.summarize(_trace(ev))
    assert s["compute_busy_us"] == 50 and s["comm_busy_us"] == 60 and s["comm_beside_compute_us"] == 50
    assert s["classes"]["attention GEMMs (MLA, out)"]["fwd"]["share_us"] == pytest.approx(25)
    assert s["classes"]["expert GEMMs"]["fwd"]["share_us"] == pytest.approx(25)
    assert s["classes"]["DeepEP dispatch"]["fwd"]["sum_us"] == 60
    assert s["gemm_ctas"] == [112] and s["comm_blocks"] == [20]


def test_a_kernel_outside_the_annotated_ranges_is_named(study):
    ev = [_ev("user_annotation", "attn(F)", 0, 10, 1), _ev("cuda_runtime", "launch", 50, 1, 1, 1),
          _ev("kernel", "rotary_kernel", 100, 5, 7, 1, [1, 1, 1])]
    with pytest.raises(SystemExit, match="rotary_kernel"):
        study.summarize(_trace(ev))


def test_the_deepseek_rows_run_the_rope_form_their_recipe_sets():
    """NeMo 25.04's DeepSeek-V3 recipe leaves apply_rope_fusion False (the 25.05 rows: unfused); NeMo 25.07's
    performance script sets it True (the 25.08 row: fused); Megatron-LM's functional MLA case passes --no-rope-fusion."""
    from conftest import ROOT

    from simcluster.published import read_published
    from simcluster.reference.llm import framework_of
    pub = ROOT / "calibration" / "published"
    for stem, fused in (("llm-dgxc-benchmarking-v25.05-deepseek-v3-h100", False), ("llm-dgxc-benchmarking-v25.08-deepseek-v3-h100", True)):
        ref = read_published(pub / f"{stem}.yaml", "published-llm-run")
        assert {framework_of(ref, r).rope_fusion for r in ref.runs} == {fused}
    ref = read_published(pub / "megatron-functional-moe-h100.yaml", "published-llm-run")
    by_case = {r["model"]["name"]: framework_of(ref, r).rope_fusion for r in ref.runs}
    assert by_case.pop("gpt3_mcore_te_tp2_pp2_ep4_etp1_memory_speed") is False and all(by_case.values())


@pytest.mark.parametrize("drop, key", [
    (lambda t: t.pop("traceEvents"), "traceEvents"),
    (lambda t: t.pop("deviceProperties"), "deviceProperties"),
    (lambda t: t["deviceProperties"][0].pop("numSms"), "deviceProperties[0].numSms"),
    (lambda t: t.pop("distributedInfo"), "distributedInfo"),
    (lambda t: t["distributedInfo"].pop("rank"), "distributedInfo.rank"),
    (lambda t: t["traceEvents"][1].pop("args"), "traceEvents[1].args (kernel event)"),
])
def test_a_trace_without_a_key_it_reads_is_one_line_naming_file_and_key(study, tmp_path, monkeypatch, capsys, drop, key):
    """--trace on a JSON that lacks a key the reader needs: one line naming the file and the key, no KeyError."""
    trace = _trace([_ev("user_annotation", "attn(F)", 0, 100, 1), _ev("kernel", "k", 10, 5, 7, 1, [1, 1, 1])])
    drop(trace)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(trace))
    monkeypatch.setattr("sys.argv", ["moe_deepseek_profile.py", "--trace", str(path)])
    monkeypatch.setattr(study, "SUMMARY", tmp_path / "summary.json")
    with pytest.raises(SystemExit) as e:
        study.main()
    msg = str(e.value)
    assert str(path) in msg and f"no {key}" in msg and "\n" not in msg
    assert not (tmp_path / "summary.json").exists()



def _dsv3_scenario(tmp_path, framework: str | None, name: str = "s.yaml"):
    """scenarios/llm/deepseek-v3-ep.yaml with its card paths absolute and `framework` (a YAML flow mapping) in every job."""
    from conftest import ROOT

    text = (ROOT / "scenarios" / "llm" / "deepseek-v3-ep.yaml").read_text().replace("../../", f"{ROOT}/")
    if framework:
        text = text.replace("        precision: fp8\n", f"        precision: fp8\n        framework: {framework}\n")
        text = text.replace("\n    precision: fp8\n", f"\n    precision: fp8\n    framework: {framework}\n")
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_scenario_sets_rope_fusion_in_its_framework_block(tmp_path):
    """cold read D (8): `framework: {rope_fusion: ...}` was an unknown key; it now sets FrameworkSpec.rope_fusion (the
    unfused query costs more: the step moves), is refused where it prices nothing (no MLA) and, true, under eager torch."""
    from simcluster import scenario
    from simcluster.build import run_file
    from simcluster.errors import SimclusterError

    unfused_block = "{name: megatron, rope_fusion: false}"
    fused, unfused = _dsv3_scenario(tmp_path, None, "fused.yaml"), _dsv3_scenario(tmp_path, unfused_block, "unfused.yaml")
    default, off = scenario.load(fused).jobs[0], scenario.load(unfused).jobs[0]
    assert default.rope_fusion is None and default.framework_spec().rope_fusion   # Megatron's default: fused
    assert off.rope_fusion is False and off.framework_spec().rope_fusion is False
    steps = [next(iter(run_file(p))).jobs[0].prediction.step_time_s for p in (fused, unfused)]
    assert steps[1] > steps[0]
    text = unfused.read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("kv_lora_rank: 512, qk_rope_dim: 64, v_head_dim: 128,", "").replace("q_lora_rank: 1536,", ""))
    with pytest.raises(SimclusterError, match=r"jobs\[0\]\.framework\.rope_fusion: prices multi-head latent attention"):
        scenario.load(bad)
    bad.write_text(text.replace(unfused_block, "{name: megatron, rope_fusion: maybe}"))
    with pytest.raises(SimclusterError, match="rope_fusion"):
        scenario.load(bad)
    dense_mla = {"layers": 4, "hidden": 2048, "ffn": 8192, "heads": 16, "kv_heads": 16, "vocab": 32768, "seq": 4096,
                 "attn_head_dim": 128, "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_rope_dim": 64, "v_head_dim": 128}
    eager = text.split("variants:")[0] + "jobs:\n  - " + json.dumps({
        "kind": "llm_training", "model": dense_mla, "parallel": {"dp": 256}, "global_batch": 256, "micro_batch": 1,
        "framework": {"name": "torchtitan-fsdp2", "rope_fusion": True}}) + "\n"
    bad.write_text(eager)
    with pytest.raises(SimclusterError, match=r"framework\.rope_fusion: framework torchtitan-fsdp2 rotates in eager torch"):
        scenario.load(bad)
    bad.write_text(eager.replace('"rope_fusion": true', '"rope_fusion": false'))
    assert scenario.load(bad).jobs[0].framework_spec().rope_fusion is False
