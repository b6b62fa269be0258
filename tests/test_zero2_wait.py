"""ZeRO-2 with gradient accumulation (issue 44, session 46 zero2): framework torch's zero 2 is FSDP2 with
reshard_after_forward=False, and each micro-batch's backward waits for its reduce-scatters before the next forward where
the framework's post-backward callback says so (FrameworkSpec.zero2_wait, llm/grad_sync.zero2_waits); its memory holds
every layer's gathered weights; the runner's flag; the host-bound caveat."""

from __future__ import annotations

import argparse
import pathlib
from dataclasses import replace

import pytest

from simcluster.cards import load_collective
from simcluster.hardware.gpu import load_gpu
from simcluster.llm import comm, eager, grad_sync, host_bound
from simcluster.llm.caveats import caveats
from simcluster.llm.framework import COMPOSER_FSDP, FMS_FSDP, FMS_FSDP_COMPILE, KEMPNERFORGE_FSDP2, MEGATRON, TORCHTITAN_FSDP2
from simcluster.llm.memory import stage_memories
from simcluster.llm.param_counts import layer_params, stage_params
from simcluster.llm.predict import predict_llm
from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec

ROOT = pathlib.Path(__file__).resolve().parents[1]
GPU = load_gpu(ROOT / "models" / "gpu" / "h200-sxm-interleaved.yaml")[0]
SOCKET = comm.Network(load_collective(ROOT / "models" / "collective" / "h200x2-socket.yaml")[0], 2)   # NCCL over TCP
WIDE = TransformerSpec(8, 8192, 28672, 64, 8, 32000, 128)   # over sockets, the reduce-scatters far longer than compute
ZERO2 = ParallelSpec(dp=2, zero=2)


def step_s(m: int, fw) -> float:
    return predict_llm(WIDE, ZERO2, BatchSpec(2 * m, 1, "bf16"), GPU, SOCKET, 2, trace=False, framework=fw).step_time_s


def test_the_wait_is_on_for_torch_and_the_fsdp_frameworks_and_off_for_megatron():
    fw = eager.torch_framework(ZERO2)
    assert fw.zero2_wait and fw.name == "torch-fsdp2-zero2" and eager.mode_of(ZERO2) == "fsdp-zero2"
    assert eager.host_mode(ZERO2) == "fsdp" and fw.param_bytes == 2.0 and fw.bf16_param_block   # FSDP2's wrapper
    assert all(f.zero2_wait for f in (COMPOSER_FSDP, TORCHTITAN_FSDP2, FMS_FSDP, FMS_FSDP_COMPILE, KEMPNERFORGE_FSDP2))
    assert not MEGATRON.zero2_wait and not eager.torch_framework(ParallelSpec(dp=2, zero=3)).zero2_wait
    assert grad_sync.zero2_waits(ZERO2, True, 4) and not grad_sync.zero2_waits(ZERO2, True, 1)
    assert not grad_sync.zero2_waits(ZERO2, False, 4) and not grad_sync.zero2_waits(ParallelSpec(dp=2, zero=3), True, 4)


def test_each_micro_batch_waits_for_its_reduce_scatters_before_the_next_forward():
    """Comm-bound (sockets): with the wait the step is longer than with the reduce-scatters running into the next
    forwards; the DP stream is FIFO either way, so the wait costs only the compute the later micro-batches would have run
    beside the earlier reduce-scatters: more than nothing, at most the (m - 1) later micro-batches' compute; one
    micro-batch: the same step."""
    fw = replace(eager.torch_framework(ZERO2), comm_interference=False)
    off = replace(fw, zero2_wait=False)
    assert step_s(1, fw) == step_s(1, off)
    rs = comm.collective_s(SOCKET, comm.groups(ZERO2, SOCKET).dense_grad, "reduce_scatter",
                           fw.grad_bytes * stage_params(WIDE, ZERO2, 0).total)
    r = predict_llm(WIDE, ZERO2, BatchSpec(8, 1, "bf16"), GPU, SOCKET, 2, trace=False, framework=off)
    compute = r.breakdown["compute"] / 4   # one micro-batch's forward and backward, a third of it forward
    more = step_s(4, fw) - r.step_time_s
    # the 3 later forwards (a third of a micro-batch's compute each) no longer run beside the reduce-scatters: about one
    # micro-batch's compute; never more than the 3 later micro-batches' compute
    assert compute < rs and 0.5 * compute < more <= 3 * compute, (more, compute, rs)


def test_its_memory_holds_every_layers_gathered_weights_beside_the_fp32_shard():
    fw = eager.torch_framework(ZERO2)
    batch = BatchSpec(8, 1, "bf16")
    two, three = (stage_memories(WIDE, p, batch, GPU.hbm_capacity_bytes, eager.torch_framework(p))[0]
                  for p in (ZERO2, ParallelSpec(dp=2, zero=3)))
    p = stage_params(WIDE, ZERO2, 0).total
    assert two.parameters == pytest.approx(fw.param_bytes * (p + p / 2))
    assert two.parameters - three.parameters == pytest.approx(fw.param_bytes * (p - 2 * layer_params(WIDE, ZERO2).total))
    assert two.gradients == pytest.approx(three.gradients) and two.optimizer == pytest.approx(three.optimizer)


def test_a_host_bound_zero2_step_with_the_wait_says_it_may_be_over_priced():
    fw, bound = eager.torch_framework(ZERO2), host_bound.HOST_BOUND_SHARE + 0.1

    def said(share=bound, m=4, fw=fw):
        return [c for c in caveats(WIDE, ZERO2, fw, GPU, host_share=share, micro_batches=m) if "reduce-scatter tail" in c]
    assert len(said()) == 1 and not said(m=1) and not said(share=0.1) and not said(fw=replace(fw, zero2_wait=False))


def test_the_runners_reshard_flag_is_fsdp_only_and_recorded():
    from simcluster.runner import llm_accum

    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", default="single")
    llm_accum.add_argument(ap)
    with pytest.raises(SystemExit, match="--reshard-after-forward false: needs --mode fsdp"):
        llm_accum.check(ap.parse_args(["--mode", "ddp", "--reshard-after-forward", "false"]))
    args = ap.parse_args(["--mode", "fsdp", "--grad-accum", "4", "--reshard-after-forward", "false"])
    assert llm_accum.check(args) == 4
    assert llm_accum.record(args, 4) == {"grad_accum": {"micro_batches": 4, "grad_sync": "micro_batch"},
                                         "fsdp_reshard_after_forward": False, "fsdp_reshard_after_backward": True}
    assert llm_accum.record(ap.parse_args(["--mode", "fsdp"]), 1) == {"fsdp_reshard_after_backward": True}   # session 47
    assert llm_accum.record(ap.parse_args(["--mode", "ddp"]), 1) == {}
