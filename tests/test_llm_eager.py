"""Eager PyTorch as a framework of the step model (simcluster/llm/eager.py) and the llm_training job's `framework:` key."""

from __future__ import annotations

import pathlib
import re
import textwrap

import pytest

from simcluster.errors import ScenarioError
from simcluster.llm import eager
from simcluster.llm.spec import LlmConfigError, ParallelSpec
from simcluster.scenario import load

ROOT = pathlib.Path(__file__).resolve().parent.parent
HOST = ROOT / "calibration" / "h200x2-llm-host-2026-11-23"

SCENARIO = """\
name: t
machine:
  card: {root}/models/collective/h200x2-primitives.yaml
  gpus_per_node: 2
  gpu: {{card: {root}/models/gpu/h200-sxm-interleaved.yaml}}
jobs:
  - kind: llm_training
    model: {{layers: 16, hidden: 1536, ffn: 4096, heads: 12, kv_heads: 4, vocab: 32000, seq: 2048}}
    parallel: {parallel}
    global_batch: {gb}
    micro_batch: 4
    framework: {framework}
"""


def scenario(tmp_path, parallel="{dp: 2}", framework="{name: torch, host: HOST}", gb=8):
    path = tmp_path / "s.yaml"
    path.write_text(textwrap.dedent(SCENARIO.format(root=ROOT, parallel=parallel, gb=gb,
                                                    framework=framework.replace("HOST", str(HOST)))))
    return path


def test_modes_follow_the_parallel_block():
    assert eager.mode_of(ParallelSpec()) == "single"
    assert eager.mode_of(ParallelSpec(dp=2)) == "ddp"
    assert eager.mode_of(ParallelSpec(dp=2, zero=3)) == "fsdp"
    assert eager.mode_of(ParallelSpec(tp=2)) == "tp"
    with pytest.raises(LlmConfigError, match="pp"):
        eager.mode_of(ParallelSpec(pp=2))
    with pytest.raises(LlmConfigError, match="ZeRO-1"):
        eager.mode_of(ParallelSpec(dp=2, zero=1))


def test_each_mode_gets_its_wrapper_and_its_own_host_cost():
    hosts = eager.fit_modes(HOST)
    assert set(hosts) == {"single", "ddp", "fsdp", "tp"}
    # DTensor dispatch: the tp mode's host cost per kernel is several times the plain step's (measured, not set)
    assert hosts["tp"][0] > 3 * hosts["single"][0] > 0
    ddp, fsdp, tp = (eager.torch_framework(p, hosts) for p in (ParallelSpec(dp=2), ParallelSpec(dp=2, zero=3), ParallelSpec(tp=2)))
    assert ddp.ddp_bucket_bytes == 4.0 and ddp.host_kernel_s == hosts["ddp"][0]
    assert fsdp.param_bytes == 2.0 and fsdp.weight_copy_bytes == 0.0 and fsdp.host_kernel_s == hosts["fsdp"][0]
    assert tp.tp_vocab_split is False and tp.host_kernel_s == hosts["tp"][0]
    assert eager.torch_framework(ParallelSpec(dp=2)).host_kernel_s == 0.0      # no host fit: GPU-bound


def test_a_torch_job_predicts_with_its_mode(tmp_path):
    from simcluster.llm.predict import predict_llm_job

    sc = load(scenario(tmp_path))
    r = predict_llm_job(sc.machine, sc.jobs[0], trace=False)
    assert r.framework == "torch-ddp" and r.fits
    sc_tp = load(scenario(tmp_path, parallel="{tp: 2}", gb=4))
    tp = predict_llm_job(sc_tp.machine, sc_tp.jobs[0], trace=False)
    # eager DTensor TP is host-bound: its step is longer than DDP's although each GPU does half the work
    assert tp.framework == "torch-dtensor-tp" and tp.step_time_s > r.step_time_s
    assert tp.breakdown["other"] > tp.breakdown["compute"]


@pytest.mark.parametrize("parallel,framework,message", [
    ("{dp: 2}", "pytorch", "jobs[0].framework: expected one of megatron"),
    ("{dp: 2}", "{name: torch, host: /nonexistent}", "jobs[0].framework.host: '/nonexistent' not found"),
    ("{dp: 2}", "{name: megatron, host: HOST}", "jobs[0].framework.host: framework megatron is never host-bound"),
    ("{dp: 1, pp: 2}", "torch", "jobs[0].parallel.pp: framework torch runs no pp"),
    ("{dp: 2, zero: 1}", "torch", "jobs[0].parallel.zero: framework torch has DDP (zero 0) and FSDP2 (zero 3)"),
    ("{dp: 2}", "{name: torch, colour: red}", "jobs[0].framework.colour: unknown key"),
])
def test_bad_framework_settings_are_one_line_errors(tmp_path, parallel, framework, message):
    with pytest.raises(ScenarioError, match=re.escape(message)):
        load(scenario(tmp_path, parallel=parallel, framework=framework))


def test_a_host_folder_without_the_mode_is_refused(tmp_path):
    folder = tmp_path / "host"
    folder.mkdir()
    (folder / "ddp-L2.json").write_text((HOST / "ddp-L2.json").read_text())
    with pytest.raises(ScenarioError, match=r"framework\.host: no ddp runs at two or more layer counts"):
        load(scenario(tmp_path, framework=f"{{name: torch, host: {folder}}}"))
    (folder / "ddp-L8.json").write_text("not json")
    with pytest.raises(ScenarioError, match=r"framework\.host: cannot fit the host cost: .*ddp-L8.json: not an llm-step JSON"):
        load(scenario(tmp_path, framework=f"{{name: torch, host: {folder}}}"))
