"""When a step of several micro-batches reduces its data-parallel gradients (parallel.grad_sync; issue 44, session 45).

  micro_batch  after every micro-batch's backward: what FSDP2 (fully_shard) and torch DDP do unless told otherwise;
               each micro-batch's reduce-scatter leaves a sharded gradient (grad_bytes / dp per parameter) that the
               next one adds to. The default for zero 2 and 3, and for framework torch's DDP (zero 0, pp 1: torch
               DDP's own default, no no_sync() unless the loop asks for it).
  step         once a step, in the last micro-batch's backward: FSDP2's module.set_requires_gradient_sync(False) on
               every micro-batch but the last, DDP's no_sync() context; Megatron's DDP always. The default for zero 0
               and 1 otherwise (Megatron, and torch pipelining with pp > 1, whose stage runs its DDP backwards under
               no_sync() but the last).

Source: the FSDP2 API (torch.distributed.fsdp.FSDPModule.set_requires_gradient_sync: "sets if the module should sync
gradients ... to implement gradient accumulation without communication"; set_reshard_after_backward: parameters are
resharded after backward unless told not to, so a step of m micro-batches all-gathers every layer 2 m times either
way) and pytorch/pytorch#126166 (FSDP2 gradient accumulation "(1) reduce-scatter [per micro-batch] ... saves gradient
memory (storing the sharded gradients), while (2) avoids the communication but uses more gradient memory (storing the
unsharded gradients)"). What FSDP2 keeps under no-sync, torch/distributed/fsdp/_fully_shard/_fsdp_param.py
(to_accumulated_grad_if_needed / accumulate_unsharded_grad_if_needed, torch 2.4-2.9): a parameter whose gradient dtype
differs from the reduce dtype (bf16 parameters, fp32 reduce: the runner's and torchtitan's policy) moves its unsharded
gradient into an unsharded accumulator of the reduce dtype after each unsynced backward and adds the next ones into
it; the accumulator is reduce-scattered in the last micro-batch. So under FSDP2 no-sync, per step of m micro-batches
and L sharded layers (per rank, P the rank's stage parameters, unsharded):
  all_gathers      2 m L (forward and backward, unchanged)
  reduce_scatters  L (the last micro-batch) instead of m L
  memory           + grad_bytes x P held from the first micro-batch's backward to the last one's reduce (beside the
                   later micro-batches' activations), in place of the sharded gradient (grad_bytes x P / dp)
  GPU traffic      + ACCUMULATE_BYTES per parameter per micro-batch (the accumulator read and written in fp32, the bf16
                   gradient read: 4 + 2 + 4; the first micro-batch's upcast, 2 + 4, taken at the same 10: <= 4 B over);
                   a framework's own per-micro-batch copy of the gradient before its reduce-scatter
                   (FrameworkSpec.grad_accumulate_bytes: torchtitan-fsdp2's 6) is kept on the unsynced micro-batches too,
                   where FSDP2 skips it: up to 6 B per parameter over (about 0.5% of the KempnerForge 13B step; 0 under
                   framework torch)
  host             the unsynced backwards skip FSDP2's post-backward reduce (foreach_reduce: the copy-in, the
                   reduce-scatter call and its stream bookkeeping): reduce_hook_kernel_s
DDP no_sync: its buckets all-reduced once (the DES's last-backward buckets, as Megatron's DDP); micro_batch: every
micro-batch's backward is finalized as the last one is (simulate.PipelineWork.grads_wait_each_backward; session 45
ddpaccum). Source: torch/csrc/distributed/c10d/reducer.cpp: a synced backward's autograd hooks copy each gradient into
its bucket and launch the bucket's all_reduce when it is full (mark_variable_ready -> all_reduce_bucket); the last
bucket queues finalize_backward as an autograd-engine callback, which runs before loss.backward() returns and, for
every bucket, calls future_work->wait() and then copies the reduced bucket back into .grad. ProcessGroupNCCL's future is
marked complete when the all_reduce is enqueued, so wait() does not block the host: it makes the caller's current
(compute) stream wait for the NCCL stream's event. So on the GPU the next micro-batch's forward starts only after this
micro-batch's all_reduces end: a bucket's all_reduce overlaps the rest of its own backward only, never the next
forward, and the exposed tail after each synced backward is the last micro-batch's (per micro-batch
  exposed_k = max(0, end of the DP stream after backward k's buckets - end of backward k)).
ZeRO-2 (zero 2, every micro-batch; session 46): the next forward waits for each backward's reduce-scatters where the
framework's post-backward callback says so (FrameworkSpec.zero2_wait; zero2_waits): the DES finalizes every backward as
the last one is (grads_wait_each_backward, as DDP's above). Sources: FSDP2 (fully_shard with reshard_after_forward=False,
framework torch's zero 2): torch/distributed/fsdp/_fully_shard/_fsdp_state.py FSDPState._root_post_backward_final_callback
(pytorch/pytorch 01c9f4fc), queued as an autograd-engine callback by the first pre-backward hook, runs while
is_last_backward (true unless set_is_last_backward(False)): finalize_backward on every state, whose
FSDPParamGroup.finalize_backward -> _wait_for_post_backward makes the current stream wait_event the group's post-reduce
event, then wait_event on each reduce-scatter state left; FSDP1 SHARD_GRAD_OP's _runtime_utils._post_backward_final_callback
makes the compute stream wait_stream the post-backward stream on every synced backward; DeepSpeed ZeRO-2's
stage_1_and_2.py independent_gradient_partition_epilogue synchronizes the device under overlap_comm after each
micro-batch's reduction (without it the reduction runs on the compute stream). On for framework torch and the FSDP
frameworks (composer-fsdp, torchtitan-fsdp2, fms-fsdp, kempnerforge-fsdp2); off for Megatron's, whose own distributed
optimizer reduce-scatters only in the last micro-batch (no_sync on the others) and whose zero 2 stands for Meta's FSDP of
Llama 3 (not public): studies/zero2_wait-session46.txt prints what the wait would move there. Checked by the registered
zero2 set (calibration/h200x2-zero2-2026-11-30, validation/zero2.py). The
bucket copies (work.ddp_bucket_copies_s: copy-in in the hooks, copy-out in finalize) run in every synced backward:
m times a step under micro_batch, once under no_sync (whose hooks return at once: expect_autograd_hooks_ is off
outside a synced backward). Its .grad accumulate in place (no extra memory either way: torch's persistent full
gradients, llm/memory.py).
Modelled for the eager frameworks with dp > 1, zero 0 (DDP) or 3 (FSDP), pp 1; anything else is refused at its key.
"""

from __future__ import annotations

from simcluster.llm.spec import LlmConfigError, ParallelSpec

ACCUMULATE_BYTES = 10.0   # per parameter per micro-batch of an FSDP no-sync step: fp32 accumulator read + written, bf16 gradient read
HOOKS_PER_LAYER = 3       # FSDP2's per-layer, per-micro-batch hooks that its host cost (over the plain mode's) pays: the forward's
#                           all-gather, the backward's all-gather and the backward's reduce-scatter (foreach_all_gather /
#                           foreach_reduce), taken as equal shares: an assumption; the nosync set (validation/nosync.py), read
#                           once, could not decide it (its S limit sat below its noise): unchecked, caveats.FSDP_NO_SYNC_HOST


def every_micro_batch(par: ParallelSpec, ddp_bucket_bytes: float = 0.0) -> bool:
    """Whether the step reduces its DP gradients after every micro-batch (module docstring): parallel.grad_sync where
    given; else zero 2 and 3, and torch DDP (FrameworkSpec.ddp_bucket_bytes > 0, zero 0) with pp 1, torch's own default."""
    if par.grad_sync:
        return par.grad_sync == "micro_batch"
    return par.zero in (2, 3) or (ddp_bucket_bytes > 0 and par.zero == 0 and par.pp == 1)


def ddp_every_micro_batch(par: ParallelSpec, ddp_bucket_bytes: float) -> bool:
    """torch DDP (its reducer's bucket copies priced, zero 0, dp x cp > 1) reducing after every micro-batch: each
    backward finalized as the last one is (module docstring)."""
    return ddp_bucket_bytes > 0 and par.zero == 0 and par.dp * par.cp > 1 and every_micro_batch(par, ddp_bucket_bytes)


def zero2_waits(par: ParallelSpec, zero2_wait: bool, micro_batches: int) -> bool:
    """ZeRO-2 reducing after each of several micro-batches under a framework whose post-backward callback waits for
    the reduce-scatters (FrameworkSpec.zero2_wait): every backward finalized as the last one is (module docstring)."""
    return zero2_wait and par.zero == 2 and par.dp * par.cp > 1 and micro_batches > 1 and every_micro_batch(par)


def fsdp_no_sync(par: ParallelSpec, micro_batches: int) -> bool:
    """An FSDP step whose gradients are reduced once over several micro-batches: the unsynced backwards differ."""
    return par.zero == 3 and par.dp * par.cp > 1 and micro_batches > 1 and not every_micro_batch(par)


def check(par: ParallelSpec, eager: bool, name: str) -> None:
    """An explicit parallel.grad_sync where it is not modelled: one line at the key."""
    if not par.grad_sync:
        return
    if par.dp * par.cp < 2:
        raise LlmConfigError("parallel.grad_sync", f"chooses when data-parallel gradients are reduced: needs dp > 1 (FSDP "
                             f"or DDP), got dp {par.dp}", hint="remove it, or dp > 1")
    if not eager or par.zero in (1, 2) or par.pp > 1:
        raise LlmConfigError("parallel.grad_sync", f"is modelled for the eager frameworks' DDP (zero 0) and FSDP (zero 3) "
                             f"with pp 1 (FSDP2 set_requires_gradient_sync, DDP no_sync); got framework {name}, zero "
                             f"{par.zero}, pp {par.pp}", hint="framework: torch (or an FSDP framework), zero 0 or 3, pp 1")


def accumulated_grad_bytes(par: ParallelSpec, micro_batches: int, grad_bytes: float, params: float) -> float:
    """FSDP no-sync: the unsharded accumulator of the reduce dtype over the rank's `params` (0 otherwise)."""
    return grad_bytes * params if fsdp_no_sync(par, micro_batches) else 0.0


def reduce_hook_kernel_s(hook_kernel_s: float, fwd_kernels: int, bwd_kernels: int) -> float:
    """Host seconds per backward kernel that the reduce hook costs: FSDP2's host cost per kernel over the plain mode's
    (hook_kernel_s, fitted: llm/eager.py) spread over a layer's forward and backward kernels is HOOKS_PER_LAYER hooks;
    one of them over the backward's kernels."""
    if hook_kernel_s <= 0 or bwd_kernels <= 0:
        return 0.0
    return hook_kernel_s * (fwd_kernels + bwd_kernels) / (HOOKS_PER_LAYER * bwd_kernels)
