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
    # issue 44: the layouts torch runs, composed
    assert eager.mode_of(ParallelSpec(pp=2)) == "pp-1f1b"
    assert eager.mode_of(ParallelSpec(pp=2, pp_schedule="gpipe")) == "pp-gpipe"
    assert eager.mode_of(ParallelSpec(pp=2, virtual_stages=2, dp=2)) == "pp-interleaved+ddp"
    assert eager.mode_of(ParallelSpec(tp=2, dp=2)) == "tp+ddp"
    assert eager.mode_of(ParallelSpec(tp=2, dp=2, zero=3)) == "tp+fsdp"
    assert eager.mode_of(ParallelSpec(recompute="full")) == "single+ckpt"
    with pytest.raises(LlmConfigError, match="ZeRO-1"):
        eager.mode_of(ParallelSpec(dp=2, zero=1))
    assert eager.mode_of(ParallelSpec(dp=2, zero=2)) == "fsdp-zero2"   # FSDP2 reshard_after_forward=False (session 46)
    with pytest.raises(LlmConfigError, match="parallel.recompute: framework torch checkpoints whole blocks"):
        eager.mode_of(ParallelSpec(dp=2, recompute="selective"))
    assert eager.mode_of(ParallelSpec(cp=2)) == "cp" and eager.mode_of(ParallelSpec(cp=2, dp=2)) == "cp+ddp"   # llm/torch_cp.py
    with pytest.raises(LlmConfigError, match="parallel.cp: framework torch: context parallelism is modelled with DDP"):
        eager.mode_of(ParallelSpec(cp=2, tp=2))


def test_each_mode_gets_its_wrapper_and_its_own_host_cost():
    hosts = eager.fit_modes(HOST)
    # ckpt and op: the leases' fits at this folder's host speed (leases.yaml scaled_to, session 44; tests/test_hostproduct.py)
    assert set(hosts) == {"single", "ddp", "fsdp", "tp", "ckpt", "op"}
    # DTensor dispatch: the tp mode's host cost per kernel is several times the plain step's (measured, not set)
    assert hosts["tp"][0] > 3 * hosts["single"][0] > 0
    ddp, fsdp, tp = (eager.torch_framework(p, hosts) for p in (ParallelSpec(dp=2), ParallelSpec(dp=2, zero=3), ParallelSpec(tp=2)))
    assert ddp.ddp_bucket_bytes == 4.0 and ddp.host_kernel_s == hosts["ddp"][0]
    assert fsdp.param_bytes == 2.0 and fsdp.weight_copy_bytes == 0.0 and fsdp.host_kernel_s == hosts["fsdp"][0]
    assert tp.tp_vocab_split is False and tp.host_kernel_s == hosts["tp"][0]
    assert eager.torch_framework(ParallelSpec(dp=2)).host_kernel_s == 0.0      # no host fit: GPU-bound


def test_a_torch_job_predicts_with_its_mode(tmp_path):
    from simcluster.build import llm_prediction

    sc = load(scenario(tmp_path))
    r = llm_prediction(sc.machine, sc.jobs[0], trace=False)
    assert r.framework == "torch-ddp" and r.fits
    sc_tp = load(scenario(tmp_path, parallel="{tp: 2}", gb=4))
    tp = llm_prediction(sc_tp.machine, sc_tp.jobs[0], trace=False)
    # eager DTensor TP is host-bound: its step is longer than DDP's although each GPU does half the work
    assert tp.framework == "torch-dtensor-tp" and tp.step_time_s > r.step_time_s
    assert tp.breakdown["other"] > tp.breakdown["compute"]
    sc_cp = load(scenario(tmp_path, parallel="{cp: 2}", gb=4))   # issue 44: torch's context parallelism, DDP over its ranks
    cp = llm_prediction(sc_cp.machine, sc_cp.jobs[0], trace=False)
    assert cp.framework == "torch-cp2+ddp" and cp.fits and cp.breakdown["exposed_dp_comm"] > 0
    assert any("torch context parallelism" in c for c in cp.caveats)


@pytest.mark.parametrize("parallel,framework,message", [
    ("{dp: 2}", "pytorch", "jobs[0].framework: expected one of megatron"),
    ("{dp: 2}", "{name: torch, host: /nonexistent}", "jobs[0].framework.host: '/nonexistent' not found"),
    ("{dp: 2}", "{name: megatron, host: HOST}", "jobs[0].framework.host: framework megatron is never host-bound"),
    ("{dp: 2, recompute: selective}", "torch", "jobs[0].parallel.recompute: framework torch checkpoints whole blocks"),
    ("{pp: 2, pp_schedule: gpipe}", "megatron", "jobs[0].parallel.pp_schedule: framework megatron runs (interleaved) 1F1B, not GPipe"),
    ("{pp: 2, pp_schedule: zb}", "torch", "jobs[0].parallel.pp_schedule: expected one of 1f1b, gpipe"),
    ("{dp: 2, zero: 1}", "torch", "jobs[0].parallel.zero: framework torch has DDP (zero 0), FSDP2 (zero 3) and, over dp > 1"),
    ("{dp: 1, tp: 2, zero: 2}", "torch", "not ZeRO-2 with dp 1, tp 2, pp 1"),
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
    with pytest.raises(ScenarioError, match=re.escape("framework.host: no op / ckpt / single runs at two or more layer counts "
                                                      "in") + ".*op-L<layers>.json, ckpt-L<layers>.json, single-L<layers>.json"):
        one_gpu = scenario(tmp_path, parallel="{recompute: op}", gb=4, framework=f"{{name: torch, host: {folder}}}")
        one_gpu.write_text(one_gpu.read_text().replace("gpus_per_node: 2", "gpus_per_node: 1"))
        load(one_gpu)                       # op takes ckpt's fit, then single's, where it has none of its own
    (folder / "ddp-L8.json").write_text("not json")
    with pytest.raises(ScenarioError, match=r"framework\.host: cannot fit the host cost: .*ddp-L8.json: not an llm-step JSON"):
        load(scenario(tmp_path, framework=f"{{name: torch, host: {folder}}}"))


def test_compute_and_nccl_beside_each_other():
    """overlap.beside: C seconds of NCCL alone take C / r beside compute, which loses s C / r; when that outlasts the
    compute, the compute is slowed throughout and the rest of the communication runs alone after it."""
    from dataclasses import replace

    from simcluster.hardware.gpu import load_gpu
    from simcluster.llm.framework import TORCH_AMP
    from simcluster.llm.overlap import beside

    gpu = replace(load_gpu(ROOT / "models" / "gpu" / "h200-sxm-interleaved.yaml")[0], overlap_compute_slowdown=0.2, overlap_comm_rate=0.4)
    on = replace(TORCH_AMP, comm_interference=True)
    assert beside(1.0, 0.1, gpu, TORCH_AMP) == (0.0, 0.1)                       # off: nothing lost, the comm alone
    slow, end = beside(1.0, 0.1, gpu, on)                                        # 0.25 s beside a 1 s compute
    assert slow == pytest.approx(0.2 * 0.25) and end == pytest.approx(0.25)
    slow, end = beside(1.0, 1.0, gpu, on)                                        # 2.5 s of comm beside 1 s of compute
    assert slow == pytest.approx(1.0 / 0.8 - 1.0)                                 # compute stretched to 1.25 s
    assert end == pytest.approx(1.25 + (1.0 - 0.4 * 1.25))                        # then 0.5 s of comm alone


def test_ddp_steps_pay_for_their_overlapped_all_reduces(tmp_path):
    """torch DDP with the card's measured comm_overlap: the backward loses compute to the bucket all_reduces (exposed
    data-parallel time grows), FSDP2's all_gathers / reduce_scatters likewise; tensor parallelism prices none."""
    from dataclasses import replace

    from simcluster.build import llm_prediction
    from simcluster.hardware.gpu import load_gpu

    sc = load(scenario(tmp_path))
    gpu = load_gpu(sc.machine.gpu_card)[0]
    assert gpu.overlap_compute_slowdown > 0 and 0 < gpu.overlap_comm_rate < 1
    with_it = llm_prediction(sc.machine, sc.jobs[0], trace=False)
    job = replace(sc.jobs[0], host_costs=())
    off = replace(job.framework_spec(), comm_interference=False)
    from simcluster.build import llm_network
    from simcluster.llm.predict import predict_llm
    without = predict_llm(job.model, job.parallel, job.batch, gpu, llm_network(sc.machine), 2, trace=False, framework=off)
    assert with_it.breakdown["exposed_dp_comm"] > without.breakdown["exposed_dp_comm"]
    fsdp = replace(job.parallel, zero=3)
    on = eager.torch_framework(fsdp)
    assert on.comm_interference is True and eager.torch_framework(ParallelSpec(tp=2)).comm_interference is False
    slowed = predict_llm(job.model, fsdp, job.batch, gpu, llm_network(sc.machine), 2, trace=False, framework=on)
    alone = predict_llm(job.model, fsdp, job.batch, gpu, llm_network(sc.machine), 2, trace=False,
                        framework=replace(on, comm_interference=False))
    assert slowed.step_time_s > alone.step_time_s      # FSDP2's gathers and reduce-scatters beside its compute (session 22)


def test_a_bad_comm_overlap_block_names_its_key(tmp_path):
    from simcluster.errors import ModelCardError
    from simcluster.hardware.gpu import load_gpu

    text = (ROOT / "models" / "gpu" / "h200-sxm-interleaved.yaml").read_text().replace("comm_rate: 0.364", "comm_rate: 3")
    bad = tmp_path / "gpu.yaml"
    bad.write_text(text)
    with pytest.raises(ModelCardError, match=r"comm_overlap.*comm_rate|key 'comm_rate'"):
        load_gpu(bad)


def test_dtensor_tp_all_reduces_each_column_parallel_input_gradient_in_fp32():
    """torch DTensor TP (the runner's tp mode): 5 fp32 all_reduces of T h per layer backward (q, k, v, gate, up; counted on
    a profiled 2-GPU step), against Megatron's 2 bf16 ones; the forward's 2 bf16 all_reduces are the same."""
    from simcluster.cards import load_collective
    from simcluster.llm import comm
    from simcluster.llm.framework import MEGATRON
    from simcluster.llm.spec import BatchSpec, TransformerSpec

    card, _ = load_collective(ROOT / "models/collective/h200x2-primitives.yaml")
    net = comm.Network(card, 2)
    model, par, batch = TransformerSpec(16, 1536, 4096, 12, 4, 32000, 2048), ParallelSpec(tp=2), BatchSpec(2, 2)
    g = comm.groups(par, net)
    act = 2 * 2048 * 1536 * 2
    megatron = comm.layer_comm(model, par, batch, net, g, MEGATRON)
    dtensor = comm.layer_comm(model, par, batch, net, g, eager.torch_framework(par))
    one = comm.collective_s(net, g.tp, "all_reduce", act)
    assert megatron.tp_fwd_s == pytest.approx(2 * one) and dtensor.tp_fwd_s == pytest.approx(2 * one)
    assert megatron.tp_bwd_s == pytest.approx(2 * one)
    assert dtensor.tp_bwd_s == pytest.approx(5 * comm.collective_s(net, g.tp, "all_reduce", 2 * act))
