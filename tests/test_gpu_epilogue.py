"""The GEMM curve's epilogue write and call time (issue 44, session 37, engineer gemmk; hardware/gpu.py `gemm_epilogue`,
`gemm_call_s`; the interleaved cards' `gemm.epilogue: hbm`, `gemm.call_time`): the closed forms, the card keys, and the
refit's held-out check against the session-35 curve (registered in docs/models/llm-findings.md, session 37)."""

from __future__ import annotations

import dataclasses
import statistics

import pytest
import yaml
from conftest import ROOT

from simcluster.errors import ModelCardError
from simcluster.fit.gpu import gemm_in_fit
from simcluster.hardware.gpu import GpuParams, gpu_params_yaml, load_gpu
from simcluster.traces import gpu_micro

CARDS = {"h100": ROOT / "models/gpu/h100-sxm-interleaved.yaml", "h200": ROOT / "models/gpu/h200-sxm-interleaved.yaml"}
# the session-35 GEMM constants of the interleaved cards (git history: adb80c28), the curve the refit replaced
SESSION35 = {"h100": dict(tile_n=256, gemm_efficiency={"bf16": 0.8312}, gemm_k_ramp=335.54, wave_weight=0.5552, gemm_launch_s=7.611e-6),
             "h200": dict(tile_n=256, gemm_efficiency={"bf16": 0.7904}, gemm_k_ramp=285.57, wave_weight=0.4759, gemm_launch_s=6.464e-6)}


def toy(**kw) -> GpuParams:
    base = dict(name="toy", peak_flops={"bf16": 1e13, "fp32": 5e12}, hbm_bandwidth_Bps=2e12, hbm_capacity_bytes=80e9,
                launch_s=1e-9, sm_count=4, tile_m=128, tile_n=128, gemm_efficiency={"bf16": 0.8, "fp32": 0.8},
                gemm_k_ramp=64.0, wave_weight=1.0, gemm_launch_s=1e-9)
    return GpuParams(**{**base, **kw})


def test_epilogue_writes_each_waves_tiles_at_the_hbm_rate_and_call_time_is_paid_once():
    plain, k = toy(), 4096
    write = 4 * 128 * 128 * 2 / 2e12                                 # one wave: S tiles of 128 x 128 bf16 outputs
    epi = toy(gemm_epilogue=True)
    assert epi.gemm_time_s(256, 256, k) == pytest.approx(plain.gemm_time_s(256, 256, k) + write, rel=1e-12)
    assert epi.gemm_time_s(384, 384, k) == pytest.approx(plain.gemm_time_s(384, 384, k) + 3 * write, rel=1e-12)   # 3 waves
    assert epi.gemm_time_s(256, 256, k, "fp32") == pytest.approx(plain.gemm_time_s(256, 256, k, "fp32") + 2 * write, rel=1e-12)
    call = toy(gemm_call_s=5e-6)
    for m in (256, 384, 1024):                                      # once per call, whatever the waves
        assert call.gemm_time_s(m, m, k) == pytest.approx(plain.gemm_time_s(m, m, k) + 5e-6, rel=1e-12)
    split = toy(gemm_split_k=True, gemm_epilogue=True, sm_count=64)   # a split's partial tiles write fp32
    nosplit = dataclasses.replace(split, gemm_split_k=False)
    assert split.gemm_time_s(128, 128, 16384) < nosplit.gemm_time_s(128, 128, 16384)


def test_keys_round_trip_and_bad_values_are_one_line(tmp_path):
    card = load_gpu(CARDS["h200"])[0]
    assert card.gemm_epilogue and card.gemm_call_s > 0
    params = gpu_params_yaml(card)
    assert params["gemm"]["epilogue"] == "hbm" and params["gemm"]["call_time"].endswith("us")
    bare = gpu_params_yaml(dataclasses.replace(card, gemm_epilogue=False, gemm_call_s=0.0))["gemm"]
    assert "epilogue" not in bare and "call_time" not in bare
    for key, value in (("epilogue", "yes"), ("call_time", "-3us")):
        bad = {**params, "gemm": {**params["gemm"], key: value}}
        path = tmp_path / "c.yaml"
        path.write_text(yaml.safe_dump({"kind": "gpu", "name": "toy", "params": bad}))
        with pytest.raises(ModelCardError) as exc:
            load_gpu(path)
        assert f"params.gemm.{key}" in str(exc.value) and "\n" not in str(exc.value)


@pytest.mark.parametrize("gpu", ["h100", "h200"])
def test_refit_beats_the_session_35_curve_on_held_out_gemms(gpu):
    """The registered adoption rule, as shipped: held-out bf16 GEMMs (MLP down, weight gradients; interleaved) better
    than the session-35 constants on the same card (split-K on in both), all and >= 50 us."""
    new = load_gpu(CARDS[gpu])[0]
    old = dataclasses.replace(new, **{**SESSION35[gpu], "gemm_efficiency": {**new.gemm_efficiency, **SESSION35[gpu]["gemm_efficiency"]}},
                              gemm_epilogue=False, gemm_call_s=0.0)
    trace = gpu_micro.parse(ROOT / f"calibration/{gpu}x1-gpu-interleaved-2026-11-23/gpu-micro/gpu-micro/stdout.txt")
    held = [s for s in trace.gemm if s.dtype == "bf16" and s.condition == "interleaved" and not gemm_in_fit(s)]
    assert len(held) == 32

    def err(card, rows):
        return statistics.mean(abs(card.gemm_time_s(s.m, s.n, s.k) / s.time_s - 1) for s in rows)
    big = [s for s in held if s.time_s >= 50e-6]
    assert err(old, held) == pytest.approx({"h100": 0.061, "h200": 0.058}[gpu], abs=0.001)   # docs/models/gpu.md, before
    assert err(new, held) < err(old, held) - 0.005 and err(new, big) < err(old, big)
    assert err(new, held) < 0.045
