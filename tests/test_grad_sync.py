"""Gradient accumulation with and without FSDP2's no-sync (parallel.grad_sync, llm/grad_sync.py; issue 44, session 45):
the reduce-scatter and all-gather counts a step's price implies, the memory FSDP2 keeps, the host term, the DDP path, and
bad input as one line (the model's key, the runner's flags)."""

from __future__ import annotations

import argparse
import math
import pathlib
from dataclasses import replace

import pytest

from simcluster.cards import load_collective
from simcluster.hardware.gpu import load_gpu
from simcluster.llm import comm, compiled, eager, grad_sync, host_bound
from simcluster.llm.caveats import caveats
from simcluster.llm.framework import MEGATRON, TORCHTITAN_FSDP2
from simcluster.llm.memory import GiB, stage_memories
from simcluster.llm.predict import predict_llm
from simcluster.llm.spec import BatchSpec, LlmConfigError, ParallelSpec, TransformerSpec
from simcluster.llm.spec_check import check_framework

ROOT = pathlib.Path(__file__).resolve().parents[1]
GPU = load_gpu(ROOT / "models" / "gpu" / "h200-sxm-interleaved.yaml")[0]
NET = comm.Network(load_collective(ROOT / "models" / "collective" / "h200x2-primitives.yaml")[0], 2)
SOCKET = comm.Network(load_collective(ROOT / "models" / "collective" / "h200x2-socket.yaml")[0], 2)   # NCCL over TCP
# wide, short: over sockets every layer's gathers and reduce-scatters far longer than its compute and accumulation
WIDE = TransformerSpec(8, 8192, 28672, 64, 8, 32000, 128)
# the compute beside the collectives not slowed by them, so the exposed time is the collectives' own
PLAIN = replace(TORCHTITAN_FSDP2, comm_interference=False)


def step(model, m: int, sync: str, fw=PLAIN, zero: int = 3, net=NET):
    par = ParallelSpec(dp=2, zero=zero, grad_sync=sync)
    r = predict_llm(model, par, BatchSpec(2 * m, 1, "bf16"), GPU, net, 2, trace=False, framework=fw)
    return r.step_time_s, r.breakdown.get("exposed_dp_comm", 0.0)


def test_no_sync_reduce_scatters_once_a_step_and_gathers_every_micro_batch():
    """Comm-bound (sockets): a sync step is longer than a no-sync one by (m - 1) micro-batches' reduce-scatters, each
    the fp32 gradients of every parameter (the embedding and head spread over the L per-layer calls) over the 2 ranks
    (the card's collective price), and a no-sync step grows with m by the all-gathers alone (every parameter twice a
    micro-batch, bf16, each pass's first layer's gather before its compute: AG (1 + 1 / L)); one micro-batch: the same."""
    group, per_call = comm.groups(ParallelSpec(dp=2, zero=3), SOCKET).dense_grad, WIDE.parameter_count() / WIDE.layers
    rs_one = WIDE.layers * comm.collective_s(SOCKET, group, "reduce_scatter", per_call * 4)
    ag_one = WIDE.layers * comm.collective_s(SOCKET, group, "all_gather", per_call * 2)
    t = {(m, s): step(WIDE, m, s, net=SOCKET)[0] for m in (1, 2, 4) for s in ("micro_batch", "step")}
    assert t[1, "micro_batch"] == t[1, "step"]   # one micro-batch: it reduces either way
    for m in (2, 4):
        assert t[m, "micro_batch"] - t[m, "step"] == pytest.approx((m - 1) * rs_one, rel=0.02), m
    gathers = 2 * ag_one * (1 + 1 / WIDE.layers)   # one micro-batch's
    assert t[4, "step"] - t[2, "step"] == pytest.approx(2 * gathers, rel=0.02)
    assert t[4, "micro_batch"] - t[2, "micro_batch"] == pytest.approx(2 * (gathers + rs_one), rel=0.02)


def test_no_sync_holds_the_unsharded_fp32_gradients_beside_the_next_micro_batch():
    """Memory: with m > 1 the peak of a later micro-batch holds every parameter's fp32 gradient unsharded (4 P) where the
    sync step holds its reduce-scattered shard (4 P / dp); with one micro-batch nothing is accumulated."""
    model = TransformerSpec(16, 2048, 8192, 32, 8, 128256, 2048)   # Llama 3.2 1B's shape, untied
    p = model.parameter_count()

    def peak(m, sync):
        mem = stage_memories(model, ParallelSpec(dp=2, zero=3, grad_sync=sync), BatchSpec(2 * m, 1, "bf16"), 141e9,
                             TORCHTITAN_FSDP2)[0]
        return mem.steady_allocated

    assert peak(1, "step") == peak(1, "micro_batch")
    assert peak(4, "step") - peak(4, "micro_batch") == pytest.approx(4 * p * (1 - 1 / 2), rel=1e-9)
    assert (peak(4, "step") - peak(4, "micro_batch")) / GiB > 2.5   # 1.5B parameters: 2.8 GiB more


def test_no_sync_accumulator_is_held_beside_a_checkpointed_micro_batch_too():
    """Session 58: under full activation checkpointing (eager frameworks' checkpointed live bytes) the no-sync accumulator
    was left out of the peak (KempnerForge's 70B at 160 GPUs: 11.2 GiB allocated predicted, 82.9 measured). The peak of a later
    micro-batch is the static bytes + the accumulator (4 P unsharded, the reduce dtype) + that micro-batch's own
    checkpointed live bytes, which the sync step's peak holds beside its sharded gradient instead (4 P / dp)."""
    model = TransformerSpec(16, 2048, 8192, 32, 8, 128256, 2048)
    p = model.parameter_count()

    def mem(m, sync, recompute="full"):
        par = ParallelSpec(dp=2, zero=3, grad_sync=sync, recompute=recompute)
        return stage_memories(model, par, BatchSpec(2 * m, 1, "bf16"), 141e9, TORCHTITAN_FSDP2)[0]

    held = mem(4, "step")
    assert held.live_peak is not None and held.accumulated_grads == pytest.approx(4 * p)
    static = held.parameters + held.optimizer
    assert held.steady_allocated == pytest.approx(static + 4 * p + held.live_peak, rel=1e-12)
    assert held.steady_allocated - mem(4, "micro_batch").steady_allocated == pytest.approx(4 * p * (1 - 1 / 2), rel=1e-9)
    assert mem(1, "step").steady_allocated == mem(1, "micro_batch").steady_allocated < held.steady_allocated - 4 * p / 2


def test_gpipe_gradients_sit_beside_stashed_inputs_and_no_forwards_end():
    """Session 58 (cold read): under GPipe the gradients a first backward made sit beside the m - 1 micro-batches still
    stashed and the next backwards, never beside a forward's end (autocast's bf16 weight cache, the loss's forward
    tensors), which the step's own live peak holds over all m. On a wide, short stage where the forward's end is the
    largest term, the live bytes beside the gradients are below the live peak by more than one micro-batch's stashed
    inputs (the live peak's growth from m to m + 1); the peak composes them; 1F1B runs a forward after a backward, so
    there they are the live peak itself."""
    model = TransformerSpec(4, 8192, 28672, 64, 8, 32000, 512)   # wide and short: big weight copies, small inputs

    def first(schedule, m=4):
        par = ParallelSpec(pp=2, recompute="full", pp_schedule=schedule)
        return stage_memories(model, par, BatchSpec(m, 1, "bf16"), 141e9, eager.torch_framework(par))[0]

    gp, ob = first("gpipe"), first("1f1b")
    one_input = first("gpipe", 5).live_peak - gp.live_peak
    assert not gp.persistent_grads and one_input > 0
    assert gp.live_peak - gp.live_after_backward > one_input + 1 * GiB   # the forward's end (GiB of weight copies) is gone
    static = gp.parameters + gp.optimizer + gp.fp8_weight_cache + gp.ddp_buckets
    assert gp.steady_allocated == pytest.approx(static + max(gp.live_peak, gp.gradients + gp.step_end,
                                                             gp.gradients + gp.live_after_backward), rel=1e-12)
    assert ob.live_after_backward == ob.live_peak


def test_the_unsynced_backwards_spare_the_reduce_hooks_host_cost():
    """Host-bound FSDP2: no-sync's unsynced backwards issue without the reduce hook, a third of the hooks' cost per layer
    (HOOKS_PER_LAYER); a framework with no hook cost spares nothing, and the sync step does not read it."""
    model = TransformerSpec(4, 256, 704, 4, 2, 1000, 128)   # tiny: the host issues the step
    host = replace(PLAIN, host_kernel_s=50e-6, host_step_s=1e-3)
    hooked = replace(host, host_hook_kernel_s=30e-6)
    assert step(model, 4, "micro_batch", hooked)[0] == step(model, 4, "micro_batch", host)[0]
    spared = step(model, 4, "step", host)[0] - step(model, 4, "step", hooked)[0]
    # 3 unsynced backwards of 4 layers, each layer sparing a third of its (k_f + k_b) kernels' 30 us (the head's and the
    # embedding's backward kernels at the layers' rate too: up to a third more)
    k_f, k_b = (sum(o.count for o in ops) for ops in compiled.layer_ops(model, ParallelSpec(dp=2, zero=3), BatchSpec(2, 1, "bf16"), PLAIN))
    layer_hooks = 3 * model.layers * (k_f + k_b) / grad_sync.HOOKS_PER_LAYER * 30e-6
    assert layer_hooks < spared < 1.35 * layer_hooks
    assert grad_sync.reduce_hook_kernel_s(30e-6, 10, 20) == pytest.approx(30e-6 * 30 / 60)
    # the answer says the split is an assumption, only where it is priced
    said = [c for c in caveats(model, ParallelSpec(dp=2, zero=3, grad_sync="step"), hooked, GPU) if "no-sync" in c]
    assert len(said) == 1 and "30.0 us per kernel" in said[0]
    assert not [c for c in caveats(model, ParallelSpec(dp=2, zero=3, grad_sync="step"), host, GPU) if "no-sync" in c]
    assert grad_sync.reduce_hook_kernel_s(0.0, 10, 20) == 0.0


def test_ddp_reduces_every_micro_batch_by_default_and_once_under_no_sync():
    """torch DDP (zero 0): grad_sync micro_batch (its default, torch's own: review C45 item 5) all-reduces every
    micro-batch's buckets, grad_sync step (DDP's no_sync, as Megatron's DDP) once a step; one micro-batch, the same.
    Comm-bound (sockets), each extra micro-batch adds one bucket set's all-reduce: the sum over torch DDP's buckets
    (comm.ddp_bucket_bytes) of the card's all_reduce price, less at most its own backward (under 1% here). Every synced
    backward is finalized as the last one is (session 45 ddpaccum: the next forward waits for its all_reduces,
    reducer.cpp's finalize_backward), so over NVLink the exposed DP time of m micro-batches is exactly m times one's,
    and the step's extra grows exactly linearly in m - 1."""
    fw = replace(eager.torch_framework(ParallelSpec(dp=2)), comm_interference=False)   # the runner's DDP, no host
    par = ParallelSpec(dp=2, zero=0)
    group = comm.groups(par, SOCKET).dense_grad
    sizes = comm.ddp_bucket_bytes(WIDE, par, WIDE.parameter_count(), WIDE.layers, True, True, fw.bucket_params)
    bucket_set = sum(comm.collective_s(SOCKET, group, "all_reduce", b) for b in sizes)
    for m in (2, 4):
        extra = step(WIDE, m, "micro_batch", fw, zero=0, net=SOCKET)[0] - step(WIDE, m, "step", fw, zero=0, net=SOCKET)[0]
        assert extra == pytest.approx((m - 1) * bucket_set, rel=0.02), m
    extra = {m: step(WIDE, m, "micro_batch", fw, zero=0)[1] - step(WIDE, m, "step", fw, zero=0)[1] for m in (2, 4)}
    assert extra[2] > 0 and extra[4] == pytest.approx(3 * extra[2], rel=1e-6)
    one = step(WIDE, 1, "micro_batch", fw, zero=0)
    assert [step(WIDE, m, "micro_batch", fw, zero=0)[1] for m in (2, 4)] == pytest.approx([2 * one[1], 4 * one[1]], rel=1e-9)
    more = {m: step(WIDE, m, "micro_batch", fw, zero=0)[0] - step(WIDE, m, "step", fw, zero=0)[0] for m in (2, 4)}
    assert more[4] == pytest.approx(3 * more[2], rel=1e-9) and more[2] > extra[2]   # the bucket copies each micro-batch
    assert step(WIDE, 4, "micro_batch", fw, zero=0) == step(WIDE, 4, "", fw, zero=0)
    assert step(WIDE, 1, "micro_batch", fw, zero=0) == step(WIDE, 1, "", fw, zero=0)


def test_the_unset_grad_sync_is_torch_ddps_own_default_and_megatrons_step():
    """Review C45 item 5: unset, framework torch's DDP (ddp_bucket_bytes > 0, zero 0, pp 1) reduces every micro-batch,
    as torch's DDP does without no_sync(); Megatron's DDP (no reducer buckets) and torch pipelining (pp > 1, whose stage
    runs its DDP backwards under no_sync() but the last) once a step; zero 2 and 3 every micro-batch; grad_sync decides
    where given."""
    assert grad_sync.every_micro_batch(ParallelSpec(dp=2), 4.0)
    assert not grad_sync.every_micro_batch(ParallelSpec(dp=2), 0.0)
    assert not grad_sync.every_micro_batch(ParallelSpec(dp=2, pp=2), 4.0)
    assert not grad_sync.every_micro_batch(ParallelSpec(dp=2, grad_sync="step"), 4.0)
    assert grad_sync.every_micro_batch(ParallelSpec(dp=2, zero=2), 0.0)
    assert grad_sync.every_micro_batch(ParallelSpec(dp=2, grad_sync="micro_batch"), 0.0)
    assert grad_sync.ddp_every_micro_batch(ParallelSpec(dp=2), 4.0)


@pytest.mark.parametrize("par, fw, words", [
    (ParallelSpec(dp=1, grad_sync="step"), TORCHTITAN_FSDP2, "needs dp > 1"),
    (ParallelSpec(dp=2, zero=1, grad_sync="step"), TORCHTITAN_FSDP2, "zero 1"),
    (ParallelSpec(dp=2, grad_sync="micro_batch"), MEGATRON, "framework megatron"),
])
def test_grad_sync_where_it_is_not_modelled_is_one_line_at_its_key(par, fw, words):
    with pytest.raises(LlmConfigError) as exc:
        check_framework(par, fw)
    assert exc.value.key == "parallel.grad_sync" and words in str(exc.value) and "\n" not in str(exc.value)
    with pytest.raises(LlmConfigError, match="parallel.grad_sync"):
        ParallelSpec(dp=2, zero=3, grad_sync="sometimes")


@pytest.mark.parametrize("argv, words", [
    (["--grad-accum", "0"], "expected micro-batches per step >= 1"),
    (["--grad-accum", "4", "--mode", "tp"], "modes single, ddp and fsdp only"),
    (["--no-sync", "--mode", "fsdp"], "--no-sync: needs --mode ddp or fsdp and --grad-accum >= 2"),
    (["--no-sync", "--grad-accum", "4"], "--mode single"),
])
def test_the_runners_accumulation_flags_refuse_what_they_cannot_run(argv, words):
    from simcluster.runner import llm_accum

    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", default="single")
    llm_accum.add_argument(ap)
    with pytest.raises(SystemExit) as exc:
        llm_accum.check(ap.parse_args(argv))
    assert words in str(exc.value)
    assert llm_accum.check(ap.parse_args(["--mode", "fsdp", "--grad-accum", "4", "--no-sync"])) == 4
    assert llm_accum.describe(4, True) == {"micro_batches": 4, "grad_sync": "step"}
    assert math.isclose(grad_sync.ACCUMULATE_BYTES, 4 + 2 + 4)


def test_a_host_bound_ddp_answer_reducing_every_micro_batch_says_it_may_be_over_priced():
    """Review C45 item 10: the DES waits for a synced backward's all_reduces after a backward that already holds the
    host's issue, so a host-bound torch DDP answer reducing every micro-batch says it may be over-priced; not under
    no_sync, not GPU-bound, not with one micro-batch, not under FSDP."""
    fw = eager.torch_framework(ParallelSpec(dp=2))
    bound = host_bound.HOST_BOUND_SHARE + 0.1

    def said(sync="", share=bound, m=4, zero=0):
        got = caveats(WIDE, ParallelSpec(dp=2, zero=zero, grad_sync=sync), fw, GPU, host_share=share, micro_batches=m)
        return [c for c in got if "over-priced by up to min(the all_reduce tail" in c]

    got = said()
    assert len(got) == 1 and "4 micro-batches" in got[0]
    assert said("micro_batch") and not said("step") and not said(share=0.05) and not said(share=None)
    assert not said(m=1) and not said(zero=3)
