"""Per-stage work of one micro-batch, computed once: forward and backward durations of each pipeline stage's
model chunks (compute on the GPU card + the exposed in-layer communication), gradient buckets, parameter
gathers and the optimizer step. The DES (llm/simulate.py) then only schedules these, so its event count
grows with pp x micro-batches, not with layers or ops.

  forward(chunk)  = L_c (compute_fwd + tp_fwd + max(0, cp_fwd - attention_fwd) + ep_fwd)
                    [+ embedding (+ its TP all_reduce / reduce_scatter) on virtual stage 0]
                    [+ final norm, LM head, cross-entropy (+ the SP all_gather) on the last virtual stage]
  backward(chunk) likewise with the backward ops (recomputed forward ops first)
A MoE model's first `dense_layers` layers (those of virtual stage 0, then onwards) use the dense layer's ops and
communication (no alltoall); each MTP module adds one more (MoE) layer and one more head and loss on the last virtual
stage (its 2h -> h projection and two norms are left out: under 1% of a DeepSeek-V3 step's FLOPs).
With parallel.tp_comm_overlap the layer's TP part is what TE's userbuffer overlap leaves exposed (llm/overlap.py); with
parallel.overlap_param_gather a chunk's ZeRO-1/2 parameter all_gather runs bucket by bucket beside its first forward
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

from simcluster.llm import comm, compiled, dtensor_tp, eager_ac, fsdp2_zero2, grad_sync, host, hsdp, launch_backlog, moe_sync, ops, overlap, torch_cp, vocab_ops
from simcluster.llm.dp_beside import beside as _beside
from simcluster.llm.dp_beside import buckets_beside, calls_per_layer, forward_gather_s
from simcluster.llm.framework import MEGATRON, FrameworkSpec, MoeHost
from simcluster.llm.moe_compute import MoeCompute, a2a_pair_s, moe_compute
from simcluster.llm.moe_host_floor import applies as host_floor_applies
from simcluster.llm.moe_host_floor import extra_s as host_floor_s
from simcluster.llm.param_counts import chunk_dense_layers, layer_params, stage_params
from simcluster.llm.simulate import PARTS, PipelineWork, StageWork, Task
from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec


def _task(**parts) -> Task:
    full = dict.fromkeys(PARTS, 0.0)
    full.update(parts)
    return Task(sum(full.values()), full)


def _add(a: Task, b: Task) -> Task:
    return Task(a.duration_s + b.duration_s, {k: a.parts[k] + b.parts[k] for k in a.parts})


def _scale(a: Task, k: float) -> Task:
    return Task(a.duration_s * k, {p: v * k for p, v in a.parts.items()})


def _host_step_s(fw: FrameworkSpec, par, layers: int) -> float:
    """The step's fixed host seconds: every N-th block checkpointed (fw.host_plain_kernel_s set, llm/eager.py) blends
    the ckpt mode's and the single mode's by the share of blocks checkpointed, floor(L / N) / L."""
    if not fw.host_plain_kernel_s:
        return fw.host_step_s
    share = eager_ac.checkpointed_layers(par, layers) / layers
    return share * fw.host_step_s + (1 - share) * fw.host_plain_step_s


def _host_bound(task: Task, gpu, dtype: str, fw: FrameworkSpec, casts, before, layer_ops, layers: int, after,
                plain_ops=(), plain_layers: int = 0, kernel_s: float | None = None) -> Task:
    """The task's compute when the host issues its kernels one at a time (llm/host.py), each at kernel_s host seconds
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
    excess = max(0.0, issued - task.parts["compute"])
    out = _add(task, _task(host=excess)) if excess > 0 else task
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
    return _add(f, _task(dp=forward_gather_s(f.duration_s, z.gather_s, z.layers, gpu, fw)))


# SMs a MoE dispatcher's kernels occupy while they run: DeepEP's default Buffer.num_sms (the DeepSeek-V3 report: 20 of the
# H800's 132); NCCL's alltoall runs one block per channel, 16-32 on H100: taken as the same 20
EP_COMM_SMS = 20


def _beside_excess(compute_s: float, comm_s: float, gpu, fw: FrameworkSpec) -> float:
    """What communication running beside `compute_s` of compute adds to it (_beside: the compute's loss, then the
    communication's tail)."""
    slow, span = _beside(compute_s, comm_s, gpu, fw)
    return max(compute_s + slow, span) - compute_s


def _moe_host(layer_f: Task, layer_b: Task, c: MoeCompute, h: MoeHost, local_experts: int) -> tuple[Task, Task]:
    """A MoE layer issued kernel by kernel from the host (framework.MoeHost). The forward runs from one dispatcher sync
    (host and GPU aligned: the host waited for the token counts) to the next: the dispatch part's kernels (permutation,
    dispatch, the local experts, combine; its GPU time the MLP's compute and the EP exposed time) then the rest (attention
    block, router), each part's GPU time spread evenly over its kernels, issued at the host's measured seconds per kernel
    (llm/host.issue_bound_s). The backward likewise without a sync. The excess over the GPU-bound layer is its 'host'
    part."""
    post = h.post_kernels + h.expert_kernels * local_experts
    times = np.concatenate([np.full(post, (c.mlp_f + layer_f.parts["ep"]) / post), np.full(h.pre_kernels, c.pre_f / h.pre_kernels)])
    issue = np.concatenate([np.full(h.post_kernels, h.kernel_s), np.full(post - h.post_kernels, h.expert_kernel_s),
                            np.full(h.pre_kernels, h.kernel_s)]) / h.profiled_over_plain
    fwd = host.issue_bound_s(times, issue)
    n_b = h.bwd_kernels + h.bwd_expert_kernels * local_experts
    bwd = host.issue_bound_s(np.full(n_b, (layer_b.parts["compute"] + layer_b.parts["ep"]) / n_b), h.bwd_kernel_s / h.profiled_over_plain)
    extra_f = max(0.0, fwd - layer_f.parts["compute"] - layer_f.parts["ep"])
    extra_b = max(0.0, bwd - layer_b.parts["compute"] - layer_b.parts["ep"])
    return _add(layer_f, _task(host=extra_f)), _add(layer_b, _task(host=extra_b))


def exposed_ep(par: ParallelSpec, lc: comm.LayerComm, gpu, fw: FrameworkSpec, c: MoeCompute | None) -> tuple[float, float]:
    """Exposed EP time of one MoE layer (forward, backward). moe_a2a_overlap (Megatron's
    overlap_moe_expert_parallel_comm): in the 1F1B steady state a micro-batch's forward runs merged with another's
    backward, phase by phase (a2a_pair_s), so the pair exposes what its phases add to its compute (split between the
    two by their EP shares; the warm-up forwards and cool-down backwards, pp x virtual_stages of m, are priced the same:
    an approximation for m >> pp v). The dispatcher's kernels take EP_COMM_SMS of the GPU's SMs while they run, so
    compute beside them runs on the rest: exposed = max(phases' excess, EP_COMM_SMS / sm_count x ep).
    moe_shared_expert_overlap: the shared expert's GEMMs run beside the dispatch and combine of their own pass."""
    ep_f, ep_b = lc.ep_fwd_s, lc.ep_bwd_s
    if par.moe_a2a_overlap and ep_f + ep_b > 0:
        ep = ep_f + ep_b   # the dispatcher's kernels hold EP_COMM_SMS of the SMs while they run
        exposed = max(a2a_pair_s(c, ep_f, ep_b) - c.total, EP_COMM_SMS / gpu.sm_count * ep)
        return exposed * ep_f / ep, exposed * ep_b / ep
    if par.moe_shared_expert_overlap:
        return _beside_excess(c.shared_f, ep_f, gpu, fw), _beside_excess(c.shared_b, ep_b, gpu, fw)
    return ep_f, ep_b


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


def _torch_cp_layer(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, gpu, net: comm.Network, g: comm.Groups,
                    fw: FrameworkSpec) -> tuple[list, list, float, float]:
    """torch's context parallelism (llm/torch_cp.py): the layer of the CP rank whose forward + backward, its CP waits
    included, is longest (each layer's all_gather couples the ranks): (fwd ops, bwd ops, exposed fwd, exposed bwd)."""
    best: tuple = ()
    for rank in range(par.cp):
        f, b = compiled.layer_ops(model, par, batch, fw, cp_rank=rank)
        e_f, e_b = torch_cp.exposed_s(gpu, batch.precision, model, par, batch, net, g.cp, rank)
        total = ops.ops_time_s(gpu, f + b, batch.precision) + e_f + e_b
        if not best or total > best[0]:
            best = (total, f, b, e_f, e_b)
    return best[1:]


def _dense_layer_tasks(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, gpu, net: comm.Network, g: comm.Groups,
                       fw: FrameworkSpec) -> tuple[Task, Task]:
    """(forward, backward) of one of a MoE model's first dense layers (the MLP of width ffn, no experts, no alltoall)."""
    dense = model.dense_layer()
    lc = comm.layer_comm(dense, par, batch, net, g, fw)
    fwd_ops, bwd_ops = compiled.layer_ops(dense, par, batch, fw)
    tp_f, tp_b = lc.tp_fwd_s, lc.tp_bwd_s
    if par.tp_comm_overlap:
        tp_f, tp_b = overlap.tp_layer_exposed(dense, par, batch, gpu, net, g.tp, fwd_ops, bwd_ops)
    return (_task(compute=ops.ops_time_s(gpu, fwd_ops, batch.precision), tp=tp_f, cp=lc.cp_fwd_s),
            _task(compute=ops.ops_time_s(gpu, bwd_ops, batch.precision), tp=tp_b, cp=lc.cp_bwd_s))


def build_work(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, gpu, net: comm.Network,
               groups: comm.Groups | None = None, fw: FrameworkSpec = MEGATRON) -> PipelineWork:
    g = groups or comm.groups(par, net)
    dtype = batch.precision
    lc = comm.layer_comm(model, par, batch, net, g, fw)
    fwd_ops, bwd_ops = compiled.layer_ops(model, par, batch, fw)
    attn_f = sum(ops.op_time_s(gpu, o, dtype) for o in fwd_ops if o.kind == "attention")
    attn_b = sum(ops.op_time_s(gpu, o, dtype) for o in bwd_ops if o.kind == "attention")
    cp_f, cp_b = max(0.0, lc.cp_fwd_s - attn_f), max(0.0, lc.cp_bwd_s - attn_b)   # Megatron's ring beside its attention
    if fw.torch_cp and par.cp > 1:   # torch's: the slowest rank's ops and the CP waits it exposes (llm/torch_cp.py)
        fwd_ops, bwd_ops, cp_f, cp_b = _torch_cp_layer(model, par, batch, gpu, net, g, fw)
    tp_f, tp_b = lc.tp_fwd_s, lc.tp_bwd_s
    if par.tp_comm_overlap:   # TE userbuffers: each TP collective pipelined with its GEMM (llm/overlap.py)
        tp_f, tp_b = overlap.tp_layer_exposed(model, par, batch, gpu, net, g.tp, fwd_ops, bwd_ops)
    if dtensor_tp.applies(fw, par):   # KempnerForge's DTensor TP under torch.compile: its collectives, all exposed
        tp_f, tp_b = dtensor_tp.layer_s(model, par, batch, net, g.tp, fw.ckpt_in_graph)
    comp_f, comp_b = ops.ops_time_s(gpu, fwd_ops, dtype), ops.ops_time_s(gpu, bwd_ops, dtype)
    needs_split = model.moe and (par.moe_a2a_overlap or par.moe_shared_expert_overlap or fw.moe_host is not None)
    split = moe_compute(gpu, fwd_ops, bwd_ops, dtype, comp_f, comp_b) if needs_split else None   # only these read it
    ep_f, ep_b = exposed_ep(par, lc, gpu, fw, split) if model.moe else (0.0, 0.0)
    layer_f = _task(compute=comp_f, tp=tp_f, cp=cp_f, ep=ep_f)
    layer_b = _task(compute=comp_b, tp=tp_b, cp=cp_b, ep=ep_b)
    if model.moe and fw.moe_host is not None:
        layer_f, layer_b = _moe_host(layer_f, layer_b, split, fw.moe_host, model.experts // par.ep)
    elif model.moe and moe_sync.applies(fw, par):   # Transformer Engine: the host after each dispatcher sync (llm/moe_sync.py)
        host_f, host_b = moe_sync.sync_host_s(gpu, fwd_ops, bwd_ops, dtype, ep_f, ep_b, max(par.layer_split(model.layers)), fw.moe_sync_kernel_s, fw)
        layer_f, layer_b = _add(layer_f, _task(host=host_f)), _add(layer_b, _task(host=host_b))
    if model.moe and host_floor_applies(fw, par):   # the MoE serial host floor: OFF (llm/moe_host_floor.py, never enabled)
        x_f, x_b = host_floor_s(gpu, fwd_ops, bwd_ops, dtype, fw, comp_f + comp_b, layer_f.parts["host"] + layer_b.parts["host"])
        layer_f, layer_b = _add(layer_f, _task(host=x_f)), _add(layer_b, _task(host=x_b))
    plain_b_ops = compiled.layer_ops(model, replace(par, recompute="none", recompute_every=1), batch, fw)[1] \
        if par.recompute_every > 1 else []   # every N-th block checkpointed (llm/eager_ac.py; tp, pp, cp 1): the mean block
    if plain_b_ops:
        share = eager_ac.checkpointed_layers(par, model.layers) / model.layers
        layer_b = _add(layer_b, _task(compute=(1 - share) * (ops.ops_time_s(gpu, plain_b_ops, dtype) - comp_b)))
    tokens = batch.micro_batch * model.seq // par.cp
    act = tokens * model.hidden * 2
    sp = par.sequence_parallel
    emb_fwd, emb_bwd = vocab_ops.embedding_forward(model, par, batch, fw), vocab_ops.embedding_backward(model, par, batch, fw)
    head_fwd, head_bwd = vocab_ops.head_forward(model, par, batch, fw), vocab_ops.head_backward(model, par, batch, fw)
    # the vocabulary-parallel embedding's and head's TP collectives; none where they are replicated (torch DTensor TP)
    vocab_tp = 1.0 if fw.tp_vocab_split else 0.0
    emb_f = _task(compute=ops.ops_time_s(gpu, emb_fwd, dtype),
                  tp=vocab_tp * comm.collective_s(net, g.tp, "reduce_scatter" if sp else "all_reduce", act))
    emb_b = _task(compute=ops.ops_time_s(gpu, emb_bwd, dtype),
                  tp=comm.collective_s(net, g.tp, "all_gather", act) if sp else 0.0)
    head_f = _task(compute=ops.ops_time_s(gpu, head_fwd, dtype),
                   tp=comm.collective_s(net, g.tp, "all_gather", act) if sp else 0.0)
    head_b = _task(compute=ops.ops_time_s(gpu, head_bwd, dtype),
                   tp=vocab_tp * comm.collective_s(net, g.tp, "reduce_scatter" if sp else "all_reduce", act))
    if dtensor_tp.applies(fw, par):   # its replicated embedding and gathered logits (llm/dtensor_tp.py)
        tps = dtensor_tp.ends_s(model, par, batch, net, g.tp)
        emb_f, emb_b, head_f, head_b = (_task(**{**t.parts, "tp": s}) for t, s in zip((emb_f, emb_b, head_f, head_b), tps, strict=True))
    dense_f, dense_b = _dense_layer_tasks(model, par, batch, gpu, net, g, fw) if model.dense_layers else (layer_f, layer_b)
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
            f = _add(_scale(layer_f, layers_per_chunk - dense_here), _scale(dense_f, dense_here))
            b = _add(_scale(layer_b, layers_per_chunk - dense_here), _scale(dense_b, dense_here))
            if vs == 0:
                f, b = _add(f, emb_f), _add(b, emb_b)
            if vs == last_vs:   # MTP modules after the last layer: each one more layer and one more head and loss
                f = _add(_add(f, head_f), _scale(_add(layer_f, head_f), model.mtp_layers))
                b = _add(_add(b, head_b), _scale(_add(layer_b, head_b), model.mtp_layers))
            dense, expert, accumulate = params.dense / v, params.expert / v, []
            if par.zero == 3:   # FULL_SHARD or HSDP (llm/hsdp.py): per layer, prefetched one layer ahead
                z = hsdp.zero3_calls(net, g, par, fw, dense, expert, max(1, layers_per_chunk) * calls_per_layer(model, fw))
                f = _forward_gathers(f, z, gpu, fw)
                if no_sync:   # every backward adds into the unsharded accumulator; only the last reduce-scatters (grad_sync.py)
                    kernels = (host.weight_matrices(model, fw) + 2) * layers_per_chunk
                    accumulate = [ops.memory("grad_accumulate_unsharded", grad_sync.ACCUMULATE_BYTES * (dense + expert) / kernels,
                                             count=kernels)]
                    b = _add(b, _task(compute=ops.ops_time_s(gpu, accumulate, dtype)))
                    synced.append(_add(b, _task(dp=z.backward_dp_s(b.duration_s, gpu, fw, _beside))))
                b = _add(b, _task(dp=(z.unsynced() if no_sync else z).backward_dp_s(b.duration_s, gpu, fw, _beside)))
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
                    f = _forward_gathers(_add(f, _task(compute=z2.copy_s)), z2.beside, gpu, fw)
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
                f = _add(f, _task(compute=ops.ops_time_s(gpu, casts, dtype)))
                b = _add(b, _task(compute=ops.ops_time_s(gpu, bwd_casts, dtype)))
            if fw.host_kernel_s > 0:  # eager: the host issues every kernel; the slower of host and GPU sets the pace
                ckpt = eager_ac.checkpointed_layers(par, layers_per_chunk) if plain_b_ops else layers_per_chunk
                f = _host_bound(f, gpu, dtype, fw, casts, (emb_fwd if vs == 0 else []), fwd_ops, ckpt,
                                (head_fwd if vs == last_vs else []), fwd_ops, layers_per_chunk - ckpt)
                args = (gpu, dtype, fw, bwd_casts + accumulate, (head_bwd if vs == last_vs else []), bwd_ops, ckpt,
                        (emb_bwd if vs == 0 else []), plain_b_ops, layers_per_chunk - ckpt, fw.host_bwd_kernel_s or fw.host_kernel_s)
                synced[c:] = [_host_bound(t, *args) for t in synced[c:]]   # no-sync: the unsynced spare the reduce hook's host
                b = _host_bound(b, *args[:-1], args[-1] - (grad_sync.reduce_hook_kernel_s(fw.host_hook_kernel_s, sum(
                    o.count for o in fwd_ops), sum(o.count for o in bwd_ops)) if no_sync else 0.0))
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
