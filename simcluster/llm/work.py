"""Per-stage work of one micro-batch, computed once: forward and backward durations of each pipeline stage's
model chunks (compute on the GPU card + the exposed in-layer communication), gradient buckets, parameter
gathers and the optimizer step. The DES (llm/simulate.py) then only schedules these, so its event count
grows with pp x micro-batches, not with layers or ops.

  forward(chunk)  = L_c layer_fwd   (one layer's forward, llm/layer_work.py: compute + exposed TP, CP, EP and host)
                    [+ embedding (+ its TP all_reduce / reduce_scatter) on virtual stage 0]
                    [+ final norm, LM head, cross-entropy (+ the SP all_gather) on the last virtual stage]
  backward(chunk) likewise with the backward ops (recomputed forward ops first)
A MoE model's first `dense_layers` layers (those of virtual stage 0, then onwards) use the dense layer's ops and
communication (no alltoall); each MTP module adds one more (MoE) layer and one more head and loss on the last virtual
stage (its 2h -> h projection and two norms are left out: under 1% of a DeepSeek-V3 step's FLOPs).
With parallel.overlap_param_gather a chunk's ZeRO-1/2 parameter all_gather runs bucket by bucket beside its first forward
(the DES waits for the first bucket only; overlap.param_gather_s is the closed form for one chunk).
ZeRO-3 (FSDP, pp = 1): the stage's parameters are gathered once per micro-batch forward and again backward, and
its gradients reduce-scattered every micro-batch, one collective call per layer (each paying the ring's latency
over the DP group), prefetched one layer ahead (llm/hsdp.py; HSDP adds the replica group's all_reduce stream):
  forward = max(compute, AG) + AG / L;  backward = max(compute, AG + RS) + AG / L   (L calls: layers, or weight matrices under
DeepSpeed's per-module fetch; on the compute stream under its overlap_comm false: compute + AG (+ RS); llm/dp_beside.py)
the excess over compute is exposed data-parallel time. Optimizer: Adam reads and writes 30 bytes per
parameter it updates under Megatron (fp32 master, m, v and grad read; master, m, v and the bf16 copy written;
28 for torch's fused AdamW on fp32 weights), on P / dp parameters with ZeRO >= 1. Under autocast with fp32
weights every weight is cast to bf16 each forward and its gradient up-cast each backward (FrameworkSpec.cast_bytes,
one kernel per weight). torch DDP's reducer adds its bucket copies (4 x ddp_bucket_bytes per parameter) to the optimizer's
step (ddp_bucket_copies_s; m times under grad_sync micro_batch, whose every backward waits for its buckets: grad_sync.py).
Eager torch checkpointing casts each block's weights again in its backward (_recast);
torch pipelining casts the weights once per step (one autocast around the schedule: priced with the optimizer step),
divides the gradients by m (grad_scale_bytes) and merges the last stage's logits after its last backward.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from simcluster.llm import comm, dtensor_tp, eager_ac, fsdp2_zero2, grad_sync, host, hsdp, launch_backlog, layer_work, ops, vocab_ops
from simcluster.llm.dp_beside import buckets_beside, calls_per_layer, forward_gather_s
from simcluster.llm.framework import MEGATRON, FrameworkSpec
from simcluster.llm.param_counts import chunk_dense_layers, layer_params, stage_params
from simcluster.llm.simulate import PipelineWork, StageWork, Task
from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec
from simcluster.llm.tasks import add, scale, task


def _host_step_s(fw: FrameworkSpec, par, layers: int) -> float:
    """The step's fixed host seconds: every N-th block checkpointed (fw.host_plain_kernel_s set, llm/eager.py) blends
    the ckpt mode's and the single mode's by the share of blocks checkpointed, floor(L / N) / L."""
    if not fw.host_plain_kernel_s:
        return fw.host_step_s
    share = eager_ac.checkpointed_layers(par, layers) / layers
    return share * fw.host_step_s + (1 - share) * fw.host_plain_step_s


def _host_bound(done: Task, gpu, dtype: str, fw: FrameworkSpec, casts, before, layer_ops, layers: int, after,
                plain_ops=(), plain_layers: int = 0, kernel_s: float | None = None) -> Task:
    """The task's (done's) compute when the host issues its kernels one at a time (llm/host.py), each at kernel_s host seconds
    (None: fw.host_kernel_s); the excess over the GPU-bound compute is the 'host' part. plain_layers blocks of
    plain_ops (every N-th block checkpointed: the others) issue theirs at fw.host_plain_kernel_s. fw.casts_in_block: the
    weight casts issued inside each block (_block_casts), not before the first."""
    if fw.compiled and fw.casts_in_block and layers:
        casts, inside = _block_casts(casts, layers)
        layer_ops = inside + list(layer_ops)
    head = host.kernel_times(gpu, before + casts, dtype)
    plain = np.tile(host.kernel_times(gpu, list(plain_ops), dtype), plain_layers)
    seq = np.concatenate([head, plain] + [host.kernel_times(gpu, layer_ops, dtype)] * layers + [host.kernel_times(gpu, after, dtype)])
    each = fw.host_kernel_s if kernel_s is None else kernel_s
    cost = np.full(len(seq), each)
    cost[len(head):len(head) + len(plain)] = fw.host_plain_kernel_s or each
    issued = host.issue_bound_s(seq, cost)
    excess = max(0.0, issued - done.parts["compute"])
    out = add(done, task(host=excess)) if excess > 0 else done
    # the host's own issue time and the issue-bound end, for a pipeline whose hosts run free (launch_backlog.free_host)
    return replace(out, issue_s=float(cost.sum()), bound_s=max(issued, out.duration_s - excess), kernels=len(seq))


def _block_casts(casts: list, layers: int) -> tuple[list, list]:
    """(the casts left before the first block, one block's casts) of a compiled step: each block's autocast weight casts
    (weight_cast, weight_recast: one kernel per weight matrix) are traced into its graph (AOTAutograd traces under the
    caller's autocast, so the graph holds the bf16 copies: llm/compiled.py's saved set) and issued with its kernels,
    the forward graph's at the block's start, again in its recomputed forward (checkpointed), the weight gradients'
    up-casts in its backward graph; the LM head's cast (eager) and any remainder stay before the first block."""
    moved = {"weight_cast", "weight_recast"}
    inside = [replace(o, count=o.count // layers) for o in casts if o.name in moved and o.count >= layers]
    left = [replace(o, count=o.count - o.count // layers * layers) if o.name in moved else o for o in casts]
    return [o for o in left if o.count], inside


def _forward_gathers(f: Task, z: hsdp.Zero3Calls, gpu, fw: FrameworkSpec) -> Task:
    """A forward beside its per-layer parameter all_gathers (each prefetched one layer ahead; ZeRO-3's, and FSDP2
    ZeRO-2's under zero2_regather): what they cost the compute, their excess over it, and the first layer's ahead."""
    return add(f, task(dp=forward_gather_s(f.duration_s, z.gather_s, z.layers, gpu, fw)))


def ddp_bucket_copies_s(gpu, par: ParallelSpec, fw: FrameworkSpec, params, last_params: float = 0.0,
                         last_s: float = 0.0) -> float:
    """torch DDP's reducer (FrameworkSpec.ddp_bucket_bytes > 0, dp > 1, no ZeRO): each gradient is copied into its
    bucket, divided by the world size on the way (reducer.cpp's mul_out: read + write), and after the all_reduce the
    bucket is copied back into param.grad (gradient_as_bucket_view off: read + write): 4 x ddp_bucket_bytes per parameter
    per step on the compute stream (the copy-in runs in the backward's hooks, the copy-out when the backward is
    finalized; both end before the optimizer, so they are priced with it). finalize_backward waits for each bucket's
    all_reduce on the stream and then enqueues its copy-out, so the copy-outs of all buckets but the last (of
    `last_params` parameters, reduced in `last_s`: the embedding's where it is tied) run beside the last all_reduce,
    which the step waits for anyway: up to last_s of them is hidden."""
    if fw.ddp_bucket_bytes <= 0 or par.dp * par.cp <= 1 or par.zero != 0:   # torch CP: DDP over dp x cp (llm/torch_cp.py)
        return 0.0
    total = params.dense + params.expert
    others = gpu.memory_time_s(2 * fw.ddp_bucket_bytes * max(0.0, total - last_params)) if last_s > 0 else 0.0
    return gpu.memory_time_s(4 * fw.ddp_bucket_bytes * total) - min(others, last_s)


def build_work(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, gpu, net: comm.Network,
               groups: comm.Groups | None = None, fw: FrameworkSpec = MEGATRON) -> PipelineWork:
    g = groups or comm.groups(par, net)
    dtype = batch.precision
    layer = layer_work.build_layer(model, par, batch, gpu, net, g, fw)
    tokens = batch.micro_batch * model.seq // par.cp
    act = tokens * model.hidden * 2
    sp = par.sequence_parallel
    emb_fwd, emb_bwd = vocab_ops.embedding_forward(model, par, batch, fw), vocab_ops.embedding_backward(model, par, batch, fw)
    head_fwd, head_bwd = vocab_ops.head_forward(model, par, batch, fw), vocab_ops.head_backward(model, par, batch, fw)
    # the vocabulary-parallel embedding's and head's TP collectives; none where they are replicated (torch DTensor TP)
    vocab_tp = 1.0 if fw.tp_vocab_split else 0.0
    emb_f = task(compute=ops.ops_time_s(gpu, emb_fwd, dtype),
                 tp=vocab_tp * comm.collective_s(net, g.tp, "reduce_scatter" if sp else "all_reduce", act))
    emb_b = task(compute=ops.ops_time_s(gpu, emb_bwd, dtype),
                 tp=comm.collective_s(net, g.tp, "all_gather", act) if sp else 0.0)
    head_f = task(compute=ops.ops_time_s(gpu, head_fwd, dtype),
                  tp=comm.collective_s(net, g.tp, "all_gather", act) if sp else 0.0)
    head_b = task(compute=ops.ops_time_s(gpu, head_bwd, dtype),
                  tp=vocab_tp * comm.collective_s(net, g.tp, "reduce_scatter" if sp else "all_reduce", act))
    if dtensor_tp.applies(fw, par):   # its replicated embedding and gathered logits (llm/dtensor_tp.py)
        tps = dtensor_tp.ends_s(model, par, batch, net, g.tp)
        emb_f, emb_b, head_f, head_b = (task(**{**t.parts, "tp": s}) for t, s in zip((emb_f, emb_b, head_f, head_b), tps, strict=True))
    pp, v = par.pp, par.virtual_stages
    split = par.layer_split(model.layers)
    last_vs = pp * v - 1
    stages = []
    m = batch.micro_batches(par.dp)
    no_sync = grad_sync.fsdp_no_sync(par, m)
    ddp_each = grad_sync.ddp_every_micro_batch(par, fw.ddp_bucket_bytes)   # every backward copies and waits (grad_sync.py)
    for s in range(pp):
        fwd, bwd, buckets, gathers, gather_buckets, slowdowns, synced = [], [], [], [], [], [], []
        opt_casts, ddp_last = 0.0, (0.0, 0.0)
        whole = fw.ddp_bucket_bytes > 0 and par.zero == 0 and not model.moe   # torch DDP (comm.ddp_bucket_bytes)
        params = stage_params(model, par, s)
        for c in range(v):
            vs = c * pp + s
            layers_per_chunk = split[vs]
            dense_here = chunk_dense_layers(model, par, vs) if model.dense_layers else 0   # the first k layers: dense MLP
            f = add(scale(layer.forward, layers_per_chunk - dense_here), scale(layer.dense_forward, dense_here))
            b = add(scale(layer.backward, layers_per_chunk - dense_here), scale(layer.dense_backward, dense_here))
            if vs == 0:
                f, b = add(f, emb_f), add(b, emb_b)
            if vs == last_vs:   # MTP modules after the last layer: each one more layer and one more head and loss
                f = add(add(f, head_f), scale(add(layer.forward, head_f), model.mtp_layers))
                b = add(add(b, head_b), scale(add(layer.backward, head_b), model.mtp_layers))
            dense, expert, accumulate = params.dense / v, params.expert / v, []
            if par.zero == 3:   # FULL_SHARD or HSDP (llm/hsdp.py): per layer, prefetched one layer ahead
                z = hsdp.zero3_calls(net, g, par, fw, dense, expert, max(1, layers_per_chunk) * calls_per_layer(model, fw))
                f = _forward_gathers(f, z, gpu, fw)
                if no_sync:   # every backward adds into the unsharded accumulator; only the last reduce-scatters (grad_sync.py)
                    kernels = (host.weight_matrices(model, fw) + 2) * layers_per_chunk
                    accumulate = [ops.memory("grad_accumulate_unsharded", grad_sync.ACCUMULATE_BYTES * (dense + expert) / kernels,
                                             count=kernels)]
                    b = add(b, task(compute=ops.ops_time_s(gpu, accumulate, dtype)))
                    synced.append(add(b, task(dp=z.backward_dp_s(b.duration_s, gpu, fw))))
                b = add(b, task(dp=(z.unsynced() if no_sync else z).backward_dp_s(b.duration_s, gpu, fw)))
                chunk_buckets = [z.tail_s] if c == 0 else []
                gathers.append(0.0)
            else:
                z2 = fsdp2_zero2.chunk_calls(gpu, net, g, par, fw, dense, expert, layers_per_chunk, m)   # FSDP2 ZeRO-2's there
                dense_buckets = comm.bucket_times(net, g.dense_grad, par.zero, dense, z2.per_call)
                if whole:   # torch DDP's buckets: whole tensors (zero 0: never with fsdp2)
                    sizes = comm.ddp_bucket_bytes(model, par, dense, layers_per_chunk, vs == 0, vs == last_vs, fw.bucket_params)
                    dense_buckets = [comm.collective_s(net, g.dense_grad, "all_reduce", b) for b in sizes]
                    ddp_last = (sizes[-1] / comm.GRAD_BYTES, dense_buckets[-1]) if c == 0 else ddp_last
                chunk_buckets = dense_buckets + comm.bucket_times(net, g.expert_dp, par.zero, expert, z2.per_call)
                if z2.beside is not None:   # FSDP2's per-layer re-gathers beside each forward, the copy-outs on its stream
                    f = _forward_gathers(add(f, task(compute=z2.copy_s)), z2.beside, gpu, fw)
                gathers.append(z2.gather_s)
                gather_buckets.append(len(comm.buckets(dense, g.dense_grad.size, fw.bucket_params))
                                      + len(comm.buckets(expert, g.expert_dp.size, fw.bucket_params)) if par.overlap_param_gather else 0)
            casts, step_casts, bwd_casts = [], [], []
            if fw.cast_bytes:  # autocast: every weight cast to bf16 in the forward, its gradient up-cast in the backward
                kernels = host.weight_matrices(model, fw) * layers_per_chunk + 1
                casts = [ops.memory("weight_cast", fw.cast_bytes / 2 * (dense + expert) / kernels, count=kernels)]
                bwd_casts = list(casts) if fw.compiled else [replace(c, kind="upcast") for c in casts]   # eager: bf16 -> fp32 copies
                casts = fsdp2_zero2.forward_casts(par, fw, casts)   # none where FSDP2 computes with bf16 parameters
                if host.recasts_weights(par, fw):   # the checkpointed blocks' weights cast again
                    bwd_casts += _recast(model, par, fw, eager_ac.checkpointed_layers(par, layers_per_chunk))
                if par.pp > 1:   # torch.distributed.pipelining: the step's micro-batches run under one autocast, whose cache
                    step_casts, casts = casts, []   # casts each weight once per step (priced with the optimizer step)
                f = add(f, task(compute=ops.ops_time_s(gpu, casts, dtype)))
                b = add(b, task(compute=ops.ops_time_s(gpu, bwd_casts, dtype)))
            if fw.host_kernel_s > 0:  # eager: the host issues every kernel; the slower of host and GPU sets the pace
                ckpt = eager_ac.checkpointed_layers(par, layers_per_chunk) if layer.plain_bwd_ops else layers_per_chunk
                f = _host_bound(f, gpu, dtype, fw, casts, (emb_fwd if vs == 0 else []), layer.fwd_ops, ckpt,
                                (head_fwd if vs == last_vs else []), layer.fwd_ops, layers_per_chunk - ckpt)
                args = (gpu, dtype, fw, bwd_casts + accumulate, (head_bwd if vs == last_vs else []), layer.bwd_ops, ckpt,
                        (emb_bwd if vs == 0 else []), layer.plain_bwd_ops, layers_per_chunk - ckpt, fw.host_bwd_kernel_s or fw.host_kernel_s)
                synced[c:] = [_host_bound(t, *args) for t in synced[c:]]   # no-sync: the unsynced spare the reduce hook's host
                b = _host_bound(b, *args[:-1], args[-1] - (grad_sync.reduce_hook_kernel_s(fw.host_hook_kernel_s, sum(
                    o.count for o in layer.fwd_ops), sum(o.count for o in layer.bwd_ops)) if no_sync else 0.0))
            opt_casts += ops.ops_time_s(gpu, step_casts, dtype)
            fwd.append(f)
            bwd.append(b)
            slow = 0.0
            if par.zero != 3 and chunk_buckets:   # the reductions of the chunk's last backward run beside it; torch DDP's
                alone = chunk_buckets[-1:] if whole else []   # last is ready when its compute ends: alone (the copy-outs)
                beside = chunk_buckets[:len(chunk_buckets) - len(alone)]
                slow, stretched = buckets_beside(b.duration_s, beside, gpu, fw)   # or on the compute stream
                chunk_buckets = stretched + alone
            slowdowns.append(slow)
            buckets.append(tuple(chunk_buckets))
        updated = params.dense / (par.shard * par.cp if par.zero >= 1 else 1) + params.expert / (par.expert_dp if par.zero >= 1 else 1)
        opt = (gpu.memory_time_s(fw.adam_bytes * updated) + _beside_backlog(fw, par, bwd, _host_step_s(fw, par, model.layers))
               + ddp_bucket_copies_s(gpu, par, fw, params, *ddp_last) * (m if ddp_each else 1) + opt_casts
               + gpu.memory_time_s(fw.grad_scale_bytes * params.total))
        if fw.torch_pipelining and s == pp - 1:   # torch pipelining's step() merges the last stage's bf16 logits (read + write)
            opt += gpu.memory_time_s(4.0 * m * tokens * model.vocab * (1 + model.mtp_layers))
        stages.append(StageWork(tuple(fwd), tuple(bwd), tuple(buckets), tuple(gathers), opt, tuple(gather_buckets),
                                tuple(slowdowns), tuple(synced)))
    free = free_hosts(fw, stages, par.gpus)
    backlog = fw.launch_backlog and free   # session 45's ppfree term (off in the product)
    return PipelineWork(tuple(stages), m, comm.p2p_s(model, par, batch, net, g, fw.residual_bytes),
                        fw.grad_reduce_after_backward, fw.blocking_p2p,
                        grads_every_micro_batch=par.zero != 3 and grad_sync.every_micro_batch(par, fw.ddp_bucket_bytes),   # ZeRO-2; DDP sync
                        grads_wait_each_backward=ddp_each or grad_sync.zero2_waits(par, fw.zero2_wait, m),   # grad_sync.py
                        gpipe=par.pp_schedule == "gpipe", torch_p2p=fw.torch_pipelining and v > 1,
                        free_hosts=free, launch_queue=host.LAUNCH_QUEUE_KERNELS,
                        launch_backlog=backlog,
                        action_host_s=host.PIPELINE_ACTION_HOST_S if backlog else 0.0)


def free_hosts(fw: FrameworkSpec, stages: list[StageWork], gpus: int) -> bool:
    """torch.distributed.pipelining's eager stages over NCCL issuing without waiting for their inputs (launch_backlog.free_host,
    llm.md 'Eager pipelines: the stage hosts' coupling') where the framework asks (free_stage_hosts: the candidate), prices a
    host, and no stage reduces or gathers over data parallelism (a PP x DP step's host waits keep the hosts in series);
    free_phase_host on one GPU only (`gpus`: a TP step stays in series); never fsdp_free_phases (launch_backlog.fsdp_step)."""
    return ((fw.torch_pipelining and fw.free_stage_hosts or launch_backlog.frees_phases(fw, gpus, False))
            and fw.host_kernel_s > 0
            and not any(t > 0 for st in stages for t in st.param_gather_s)
            and not any(t > 0 for st in stages for chunk in st.grad_buckets_s for t in chunk))


def _beside_backlog(fw: FrameworkSpec, par: ParallelSpec, bwd: list, host_s: float) -> float:
    """The step's fixed host seconds left in series: all, but where launch_backlog.frees_phases asks (fsdp_free_phases's only
    effect) what outlasts the last backward's GPU backlog at its host's last issue (its duration less its issue seconds)."""
    free = launch_backlog.frees_phases(fw, par.gpus, launch_backlog.fsdp_step(par))
    return max(0.0, host_s - max(0.0, bwd[-1].duration_s - bwd[-1].issue_s)) if free else host_s


def _recast(model: TransformerSpec, par: ParallelSpec, fw: FrameworkSpec, layers: int) -> list:
    """The forward weight casts of `layers` checkpointed blocks, run again in their recomputation (cast_bytes / 2 per
    parameter: the fp32 weight read, its bf16 copy written; one kernel per weight matrix)."""
    kernels = host.weight_matrices(model, fw) * layers
    params = layers * layer_params(model, par).total
    return [ops.memory("weight_recast", fw.cast_bytes / 2 * params / kernels, count=kernels)] if kernels else []
