"""MLA's query / key / value layout (llm/mla_layout.py) against DeepSeek's published profile, and the profile study's
reading of a Chrome trace (studies/moe_deepseek_profile.py; issue 44, session 36 moeprof)."""

from __future__ import annotations

import json

import pytest
from conftest import load_script


@pytest.fixture(scope="module")
def study():
    return load_script("studies/moe_deepseek_profile.py")


def test_mla_layout_prices_the_profiled_rotary_and_copy_kernels(study):
    """The profile's rotary and copy kernels of MLA (forward, and the backward's recompute plus gradient) against the
    model's op at DeepSeek-V3's shape, TP 1, 4096 tokens: within 15% (the rope dimensions alone, the op before this
    session, priced 181 us against the profile's 935 us a layer)."""
    summary = json.loads(study.SUMMARY.read_text())
    per = summary["layers_per_chunk"]
    got = summary["classes"]["rotary / MLA copies"]
    prof_us = (got["fwd"]["share_us"] + got["bwd"]["share_us"]) / per
    model = study.model_layer()["rotary / MLA copies"]
    model_us = 1e6 * (model["fwd"] + model["bwd"])
    assert model_us == pytest.approx(prof_us, rel=0.15)


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
