"""Issue 44's eager PyTorch regimes in the step model: activation checkpointing (torch.utils.checkpoint per block),
torch.distributed.pipelining (GPipe, 1F1B) and 2-D meshes; the runner's pipeline mode's argument checks."""

from __future__ import annotations

import pathlib
import re
import textwrap
from dataclasses import replace

import pytest

from simcluster.cards import load_collective
from simcluster.errors import ScenarioError
from simcluster.hardware.gpu import load_gpu
from simcluster.llm import comm, compiled, eager, ops
from simcluster.llm.memory import layer_activation_bytes, memory_per_gpu, stage_memories
from simcluster.llm.predict import predict_llm
from simcluster.llm.simulate import PipelineWork, StageWork, Task, schedule, simulate_iteration
from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec
from simcluster.llm.work import _recast, build_work
from simcluster.scenario import load

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODEL = TransformerSpec(8, 1024, 2816, 16, 8, 32000, 2048, tied_embeddings=True)


@pytest.fixture(scope="module")
def gpu():
    return load_gpu(ROOT / "models" / "gpu" / "h200-sxm-interleaved.yaml")[0]


@pytest.fixture(scope="module")
def net():
    return comm.Network(load_collective(ROOT / "models" / "collective" / "h200x2-primitives.yaml")[0], 2)


def _task(seconds: float) -> Task:
    return Task(seconds, {"compute": seconds, "tp": 0.0, "cp": 0.0, "ep": 0.0, "dp": 0.0, "host": 0.0})


def test_checkpointing_costs_one_more_forward_of_each_block_and_its_weight_casts(gpu, net):
    """torch.utils.checkpoint re-runs each block's forward in its backward (every forward op again, as 'recompute.' ops)
    and casts the block's weights again under the recomputation's own autocast; the forward is unchanged."""
    batch = BatchSpec(2, 2)
    plain, ckpt = ParallelSpec(), ParallelSpec(recompute="full")
    fw_plain, fw_ckpt = eager.torch_framework(plain), eager.torch_framework(ckpt)
    fwd, bwd = compiled.layer_ops(MODEL, ckpt, batch, fw_ckpt)   # the runner's block (llm/autocast_block.py)
    again = [o for o in bwd if o.name.startswith("recompute.")]
    assert [o.name for o in again] == [f"recompute.{o.name}" for o in fwd]
    a = build_work(MODEL, plain, batch, gpu, net, fw=fw_plain).stages[0]
    b = build_work(MODEL, ckpt, batch, gpu, net, fw=fw_ckpt).stages[0]
    assert b.forward[0].duration_s == pytest.approx(a.forward[0].duration_s)
    extra = MODEL.layers * ops.ops_time_s(gpu, fwd, "bf16") + ops.ops_time_s(gpu, _recast(MODEL, ckpt, fw_ckpt, MODEL.layers), "bf16")
    assert b.backward[0].duration_s - a.backward[0].duration_s == pytest.approx(extra, rel=1e-9)
    recast = _recast(MODEL, ckpt, fw_ckpt, MODEL.layers)[0]   # 6 bytes (fp32 read, bf16 written) per layer parameter
    assert recast.bytes * recast.count == pytest.approx(6 * MODEL.layers * (MODEL.attention_params() + MODEL.mlp_params() + 2 * MODEL.hidden))


def test_checkpointing_keeps_only_each_blocks_input_and_one_block_at_a_time(gpu):
    """Eager checkpointing stashes each block's fp32 input (4 s b h); the live peak is the inputs plus the largest of the
    forward's end (all bf16 weight copies in autocast's cache), the backward's start (the head's copy, the loss) and one
    block's recomputation (its activations and copies)."""
    batch = BatchSpec(4, 4)
    ckpt = ParallelSpec(recompute="full")
    fw = eager.torch_framework(ckpt)
    assert layer_activation_bytes(MODEL, ckpt, batch, fw) == 4 * 2048 * 4 * 1024
    plain = memory_per_gpu(MODEL, ParallelSpec(), batch, gpu.hbm_capacity_bytes, eager.torch_framework(ParallelSpec()))
    mem = memory_per_gpu(MODEL, ckpt, batch, gpu.hbm_capacity_bytes, fw)
    logit_elements = 2048 * 4 * 32000
    block = layer_activation_bytes(MODEL, ParallelSpec(), batch, fw) + 2 * (mem.weight_copies / 2 - 32000 * 1024 - 1024) / MODEL.layers
    expected = mem.activations + max(mem.weight_copies + 10 * logit_elements, 2 * 32000 * 1024 + 12 * logit_elements, block)
    assert mem.live_peak == pytest.approx(expected, rel=1e-9)
    assert mem.allocated < plain.allocated and mem.parameters == plain.parameters


@pytest.mark.parametrize("gpipe", [False, True])
@pytest.mark.parametrize("pp,m", [(2, 4), (4, 8), (3, 3)])
def test_pipeline_bubble_of_gpipe_and_1f1b(pp, m, gpipe):
    """Equal stages, free sends: both schedules take (m + p - 1)(F + B); the bubble is (p - 1) / (m + p - 1) of it."""
    f, b = 1.0, 2.0
    stage = StageWork((_task(f),), (_task(b),))
    r = simulate_iteration(PipelineWork((stage,) * pp, m, gpipe=gpipe), trace=False)
    assert r.step_time_s == pytest.approx((m + pp - 1) * (f + b))
    assert r.breakdown["pipeline_bubble"] / r.step_time_s == pytest.approx((pp - 1) / (m + pp - 1))


def test_schedules_are_torchs_orders():
    """ScheduleGPipe: every forward, then every backward; Schedule1F1B: pp - r forwards, then backward and forward in turn."""
    assert schedule(2, 1, 4, 0, gpipe=True) == [("F", 0, i) for i in range(4)] + [("B", 0, i) for i in range(4)]
    order = [f"{k}{i}" for k, _, i in schedule(2, 1, 4, 0)]
    assert order == ["F0", "F1", "B0", "F2", "B1", "F3", "B2", "B3"]
    assert [f"{k}{i}" for k, _, i in schedule(2, 1, 4, 1)] == ["F0", "B0", "F1", "B1", "F2", "B2", "F3", "B3"]


def test_gpipe_stashes_every_micro_batch_and_1f1b_pays_gradients_beside_its_stash(gpu):
    """Stage 0 under GPipe holds m micro-batches' activations (and sent outputs), under 1F1B pp of them; with the
    gradients freed each step but made by the first backward, 1F1B's next forward runs beside them: static + grads +
    live; torch pipelining's last stage keeps every micro-batch's bf16 logits to the step's end."""
    batch = BatchSpec(16, 4)   # 4 micro-batches
    g, o = ParallelSpec(pp=2, pp_schedule="gpipe"), ParallelSpec(pp=2)
    fw = eager.torch_framework(o)
    sg, so = (stage_memories(MODEL, p, batch, gpu.hbm_capacity_bytes, fw) for p in (g, o))
    residual = 4 * 2048 * 4 * 1024   # one fp32 boundary tensor of a micro-batch (seq 2048, micro-batch 4, hidden 1024)
    recv = 4 * residual              # stage 0's gradient receive buffers, one per micro-batch, under either schedule
    per_mb = (so[0].activations - recv) / 2
    assert sg[0].activations == pytest.approx(4 * per_mb + recv)
    # the last stage: an activation receive buffer per micro-batch, less its in-flight micro-batches' (their first
    # layer's saved input, counted already): 1F1B's one in flight leaves 3 to add, GPipe's four none
    assert so[1].activations - 3 * residual == pytest.approx(sg[1].activations / 4)
    first = so[0]
    static = first.parameters + first.optimizer
    assert first.steady_allocated == pytest.approx(static + first.gradients + first.live_after_backward)
    assert first.live_after_backward == pytest.approx(first.activations + first.weight_copies)
    logit_elements = 2048 * 4 * 32000
    assert so[1].logits == pytest.approx((12 + 2 * 4) * logit_elements)        # one in flight, four chunks held
    assert sg[1].logits == pytest.approx((12 + 2 * 4 + 4 * 3) * logit_elements)   # four in flight: their saved softmax too
    assert so[1].step_end == pytest.approx(4 * 4 * logit_elements)              # the chunks and their merged copy


def test_pipelining_prices_fp32_sends_the_cast_cache_and_the_gradient_passes(gpu, net):
    """The boundary tensor is the fp32 residual stream (twice Megatron's bf16 bytes); the step's one autocast casts each
    weight once (priced with the optimizer step, not each forward); each micro-batch's gradient is added into .grad and
    all divided by m (scale_grads)."""
    batch, par = BatchSpec(8, 2), ParallelSpec(pp=2)
    fw = eager.torch_framework(par)
    assert (fw.grad_accumulate_bytes, fw.grad_scale_bytes, fw.name) == (12.0, 8.0, "torch-pipelining")
    g = comm.groups(par, net)
    assert comm.p2p_s(MODEL, par, batch, net, g, 4) > comm.p2p_s(MODEL, par, batch, net, g, 2)
    work = build_work(MODEL, par, batch, gpu, net, fw=fw)
    assert work.p2p_s == pytest.approx(comm.p2p_s(MODEL, par, batch, net, g, 4))
    no_cast = build_work(MODEL, par, batch, gpu, net, fw=replace(fw, cast_bytes=0.0))
    cast = work.stages[0].optimizer_s - no_cast.stages[0].optimizer_s
    assert cast > 0 and work.stages[0].forward[0].duration_s == pytest.approx(no_cast.stages[0].forward[0].duration_s)
    r = predict_llm(MODEL, par, batch, gpu, net, 2, trace=False, framework=fw)
    assert r.breakdown["pipeline_bubble"] > 0 and r.breakdown["exposed_pp_comm"] >= 0


def test_only_torchs_pipelining_merges_the_last_stages_logits(gpu, net):
    """torch.distributed.pipelining's step() concatenates the last stage's micro-batch logits (one bf16 read and write
    of m x tokens x vocab); another eager framework at pp > 1 has no such merge, so only torch's last stage pays it."""
    batch, par = BatchSpec(8, 2), ParallelSpec(pp=2)
    fw = eager.torch_framework(par)
    merged = build_work(MODEL, par, batch, gpu, net, fw=fw).stages[-1].optimizer_s
    plain = build_work(MODEL, par, batch, gpu, net, fw=replace(fw, torch_pipelining=False)).stages[-1].optimizer_s
    logits = gpu.memory_time_s(4.0 * batch.micro_batches(par.dp) * batch.micro_batch * MODEL.seq * MODEL.vocab)
    assert merged - plain == pytest.approx(logits, rel=1e-9) and logits > 0


def test_two_d_meshes_compose_their_wrappers():
    hosts = {"single": (1e-5, 1e-3, 4), "ddp": (2e-5, 1e-3, 4), "fsdp": (3e-5, 1e-3, 4), "tp": (9e-5, 1e-3, 4)}
    tp_ddp = eager.torch_framework(ParallelSpec(tp=2, dp=2), hosts)
    assert tp_ddp.name == "torch-dtensor-tp+ddp" and tp_ddp.ddp_bucket_bytes == 4.0 and tp_ddp.tp_bwd_allreduces == 5
    assert tp_ddp.host_kernel_s == hosts["tp"][0]               # DTensor dispatch's host cost
    tp_fsdp = eager.torch_framework(ParallelSpec(tp=2, dp=2, zero=3), hosts)
    assert tp_fsdp.param_bytes == 2.0 and tp_fsdp.tp_vocab_split is False and tp_fsdp.comm_interference
    assert eager.torch_framework(ParallelSpec(pp=2), hosts).host_kernel_s == hosts["single"][0]


SCENARIO = """\
name: t
machine:
  card: {root}/models/collective/h200x4-primitives.yaml
  gpus_per_node: 4
  gpu: {{card: {root}/models/gpu/h200-sxm-interleaved.yaml}}
jobs:
  - kind: llm_training
    model: {{layers: 16, hidden: 2048, ffn: 8192, heads: 32, kv_heads: 8, vocab: 128256, seq: 2048, tied_embeddings: true}}
    parallel: {parallel}
    global_batch: 16
    micro_batch: 2
    framework: torch
"""


@pytest.mark.parametrize("parallel,name", [("{tp: 2, dp: 2}", "torch-dtensor-tp+ddp"), ("{tp: 2, dp: 2, zero: 3}", "torch-dtensor-tp+fsdp2"),
                                           ("{pp: 2, dp: 2, pp_schedule: gpipe}", "torch-pipelining+ddp"),
                                           ("{dp: 4, recompute: full}", "torch-ddp")])
def test_scenarios_accept_every_layout_torch_runs(tmp_path, parallel, name):
    from simcluster.build import llm_prediction

    path = tmp_path / "s.yaml"
    path.write_text(textwrap.dedent(SCENARIO.format(root=ROOT, parallel=parallel)))
    sc = load(path)
    r = llm_prediction(sc.machine, sc.jobs[0], trace=False)
    assert r.framework == name and r.step_time_s > 0


def test_a_layout_torch_cannot_run_is_a_one_line_error(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(textwrap.dedent(SCENARIO.format(root=ROOT, parallel="{dp: 2, zero: 2, pp: 2}")))
    with pytest.raises(ScenarioError, match=re.escape("jobs[0].parallel.zero: framework torch has DDP (zero 0), FSDP2 (zero 3) and, over dp > 1 alone, "
                                                       "FSDP2 with reshard_after_forward=False (zero 2); not ZeRO-2 with dp 2, tp 1, pp 2")):
        load(path)


def test_the_runners_pipeline_mode_refuses_a_bad_launch_before_torch():
    from simcluster.runner.llm_pipeline import Pipeline

    cfg = {"layers": 2, "hidden": 8, "ffn": 16, "heads": 2, "kv_heads": 1, "vocab": 16, "tied": False}
    with pytest.raises(SystemExit, match="launch with torchrun on two or more ranks"):
        Pipeline(None, None, 0, 1, cfg, None, "1f1b", 4, True)
    with pytest.raises(SystemExit, match="2 layers for 4 stages"):
        Pipeline(None, None, 0, 4, cfg, None, "1f1b", 4, True)
    with pytest.raises(SystemExit, match=r"2 layers for 4 stages \(2 ranks x 2 chunks\)"):
        Pipeline(None, None, 0, 2, cfg, None, "interleaved", 4, True, virtual=2)
    with pytest.raises(SystemExit, match="--schedule interleaved goes with --virtual-stages 2 or more"):
        Pipeline(None, None, 0, 2, cfg, None, "interleaved", 4, True)


def test_the_runners_2d_layouts_refuse_ranks_that_do_not_split_before_torch_runs():
    from simcluster.runner import llm_mesh

    for world, size in ((4, 4), (6, 4), (4, 1)):
        with pytest.raises(SystemExit, match=f"{world} ranks do not split into two or more groups of {size}"):
            llm_mesh.mesh(None, "tp+ddp", world, size, None)
    assert llm_mesh.layout("tp+fsdp", 4, 2) == {"dp": 2, "tp": 2} and llm_mesh.layout("pp+ddp", 8, 4) == {"dp": 2, "pp": 4}
    assert llm_mesh.layout("fsdp", 4, 4) == {"dp": 4} and llm_mesh.layout("tp", 2, 2) == {"tp": 2}


def test_2d_meshes_take_the_tp_host_fit_and_the_own_fits_stay_a_registered_variant():
    from simcluster.llm import eager as eager_mod

    hosts = {"tp": (130e-6, 20e-3, 6), "tp+ddp": (170e-6, 0.0, 6), "ddp": (30e-6, 1e-3, 6)}
    for par in (ParallelSpec(tp=2, dp=2), ParallelSpec(tp=2, dp=2, zero=3)):
        assert eager_mod.host_mode(par) == "tp" and eager_mod.torch_framework(par, hosts).host_kernel_s == 130e-6


def test_a_checkpointed_single_gpu_takes_the_ckpt_host_fit_where_there_is_one():
    from simcluster.llm import eager as eager_mod

    ckpt = ParallelSpec(recompute="full")
    assert eager_mod.host_mode(ckpt) == "ckpt" and eager_mod.host_mode(ParallelSpec(dp=2, zero=3, recompute="full")) == "fsdp"
    hosts = {"single": (20e-6, 1e-3, 3), "ckpt": (40e-6, 2e-3, 3)}
    assert eager_mod.torch_framework(ckpt, hosts).host_kernel_s == 40e-6
    assert eager_mod.torch_framework(ckpt, {"single": hosts["single"]}).host_kernel_s == 20e-6   # no ckpt runs: single's


def test_fit_modes_reads_a_collect_bundle_with_checkpointed_runs(tmp_path):
    import json as _json

    from simcluster.llm import eager as eager_mod

    model = {"layers": 0, "hidden": 128, "ffn": 352, "heads": 4, "kv_heads": 2, "vocab": 512, "tied": False}
    for layers in (2, 8):   # plain, checkpointed and (issue 44) compiled runs: llm-step --compile, each fitted apart
        for ckpt, comp, per_layer in ((False, False, 1e-3), (True, False, 2e-3), (False, True, 0.4e-3)):
            doc = {"mode": "single", "model": {**model, "layers": layers}, "activation_checkpointing": "full" if ckpt else None,
                   "compile": {"backend": "inductor"} if comp else None,
                   "shapes": [{"seq": 128, "micro_batch": 1, "status": "ok", "median_step_s": 0.002 + layers * per_layer}]}
            run = tmp_path / "llm-step" / f"tiny-L{layers}-single{'-ckpt' if ckpt else ''}{'-compile' if comp else ''}"
            run.mkdir(parents=True)
            (run / "stdout.txt").write_text(_json.dumps(doc))
    fits = eager_mod.fit_modes(tmp_path)
    assert set(fits) == {"single", "ckpt", "compile"}
    assert fits["single"][1] == pytest.approx(0.002) and fits["ckpt"][1] == pytest.approx(0.002)
    assert fits["ckpt"][0] > fits["single"][0]    # twice the seconds per layer over more kernels per layer
    from simcluster.llm import host
    from simcluster.llm.framework import TORCH_AMP, TORCH_COMPILE

    tiny = TransformerSpec(2, 128, 352, 4, 2, 512, 128)
    for mode, per_layer, fw in (("compile", 0.4e-3, TORCH_COMPILE), ("single", 1e-3, TORCH_AMP)):   # over each one's kernels
        assert fits[mode][0] == pytest.approx(per_layer / host.layer_kernels(tiny, ParallelSpec(), BatchSpec(1, 1), fw))


def test_pipelining_receive_buffers_and_interleaved_logits(gpu):
    """torch's PipelineStage keeps a receive buffer per micro-batch for each chunk's input (not the first stage) and its
    output's gradient (not the last); the in-flight inputs among them are already the first layers' saved inputs.
    Under interleaved 1F1B the last chunk runs each forward's backward next: one micro-batch's logits in flight."""
    from simcluster.llm.memory import _pipelining_receive_buffers as recv

    one, two = ParallelSpec(pp=4), ParallelSpec(pp=4, virtual_stages=2)
    assert recv(one, 8, 4, first=True, last=False) == 8                # gradients only
    assert recv(one, 8, 3, first=False, last=False) == (8 - 3) + 8     # inputs not in flight, and gradients
    assert recv(one, 8, 1, first=False, last=True) == 8 - 1            # inputs only
    assert recv(two, 8, 11, first=True, last=False) == (8 - 11 / 2) + 16   # chunk 0 receives no input
    fw = eager.torch_framework(two)
    s1 = stage_memories(MODEL, ParallelSpec(pp=2), BatchSpec(16, 4), gpu.hbm_capacity_bytes, fw)
    s2 = stage_memories(MODEL, ParallelSpec(pp=2, virtual_stages=2), BatchSpec(16, 4), gpu.hbm_capacity_bytes, fw)
    assert s2[1].logits == pytest.approx(s1[1].logits)


def test_interleaved_ranks_pay_gradients_beside_their_stash(gpu):
    """A rank of interleaved 1F1B runs m x v chunk-micro-batches: with fewer stashed at once (11 on rank 0 of pp 4,
    v 2, m 8), a forward follows its first backward, beside the gradients it made."""
    two = ParallelSpec(pp=4, virtual_stages=2)
    first = stage_memories(MODEL, two, BatchSpec(32, 4), gpu.hbm_capacity_bytes, eager.torch_framework(two))[0]
    assert first.live_after_backward is not None


def test_the_prediction_cuts_layers_as_the_runner_does():
    """runner/llm_pipeline.py gives chunk i the layers i L // n to (i + 1) L // n: 36 layers over 8 chunks alternate 4, 5."""
    from simcluster.runner.llm_pipeline import chunk_layer_ranges

    assert [hi - lo for lo, hi in chunk_layer_ranges(36, 8)] == [4, 5] * 4
    assert chunk_layer_ranges(32, 4) == [(0, 8), (8, 16), (16, 24), (24, 32)]
