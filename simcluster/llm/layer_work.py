"""One transformer layer's work for one micro-batch, computed once (llm/work.py scales it by the layers of each chunk):
its ops as the framework runs them and their forward and backward Tasks (llm/tasks.py), compute on the GPU card plus
the exposed in-layer communication and host:
  forward  = compute_fwd + tp_fwd + max(0, cp_fwd - attention_fwd) + ep_fwd  [+ host]
  backward likewise with the backward ops (recomputed forward ops first).
TP: exposed as priced (comm.layer_comm), or what TE's userbuffer overlap leaves (llm/overlap.py, parallel.tp_comm_overlap),
or KempnerForge's DTensor collectives (llm/dtensor_tp.py). CP: Megatron's ring beside its attention, or torch's context
parallelism, the slowest rank's layer (llm/torch_cp.py). EP: exposed_ep (the A2A overlap's merged pair and the
dispatcher's SM share, or the shared expert beside its dispatch). Host of a MoE layer: the local spec's kernel by kernel
(framework.MoeHost, _moe_host), Transformer Engine's after each dispatcher sync (llm/moe_sync.py), and the serial host
floor (llm/moe_host_floor.py, OFF). Every N-th block checkpointed (llm/eager_ac.py): the mean block's backward, and the
plain blocks' backward ops for the host's issue (work._host_bound). A MoE model's first dense layers: the dense MLP's
ops and communication (no alltoall). Split out of llm/work.py in session 55 (house55)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from simcluster.llm import comm, compiled, dtensor_tp, eager_ac, host, moe_sync, ops, overlap, torch_cp
from simcluster.llm.framework import FrameworkSpec, MoeHost
from simcluster.llm.moe_compute import MoeCompute, a2a_pair_s, moe_compute
from simcluster.llm.moe_host_floor import applies as host_floor_applies
from simcluster.llm.moe_host_floor import extra_s as host_floor_s
from simcluster.llm.simulate import Task
from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec
from simcluster.llm.tasks import add, task


@dataclass(frozen=True)
class LayerWork:
    """One layer's work for one micro-batch (build_layer): the ops the host issues (forward, backward; the backward ops of
    a block not checkpointed where every N-th block is, else []) and the layer's Tasks, with those of a MoE model's
    first dense layers (the layer's own where it has none)."""

    fwd_ops: list
    bwd_ops: list
    plain_bwd_ops: list
    forward: Task
    backward: Task
    dense_forward: Task
    dense_backward: Task


def build_layer(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, gpu, net: comm.Network, g: comm.Groups,
                fw: FrameworkSpec) -> LayerWork:
    """The layer's ops and Tasks (module docstring)."""
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
    layer_f = task(compute=comp_f, tp=tp_f, cp=cp_f, ep=ep_f)
    layer_b = task(compute=comp_b, tp=tp_b, cp=cp_b, ep=ep_b)
    if model.moe and fw.moe_host is not None:
        layer_f, layer_b = _moe_host(layer_f, layer_b, split, fw.moe_host, model.experts // par.ep)
    elif model.moe and moe_sync.applies(fw, par):   # Transformer Engine: the host after each dispatcher sync (llm/moe_sync.py)
        host_f, host_b = moe_sync.sync_host_s(gpu, fwd_ops, bwd_ops, dtype, ep_f, ep_b, max(par.layer_split(model.layers)), fw.moe_sync_kernel_s, fw)
        layer_f, layer_b = add(layer_f, task(host=host_f)), add(layer_b, task(host=host_b))
    if model.moe and host_floor_applies(fw, par):   # the MoE serial host floor: OFF (llm/moe_host_floor.py, never enabled)
        x_f, x_b = host_floor_s(gpu, fwd_ops, bwd_ops, dtype, fw, comp_f + comp_b, layer_f.parts["host"] + layer_b.parts["host"])
        layer_f, layer_b = add(layer_f, task(host=x_f)), add(layer_b, task(host=x_b))
    plain_bwd_ops = compiled.layer_ops(model, replace(par, recompute="none", recompute_every=1), batch, fw)[1] \
        if par.recompute_every > 1 else []   # every N-th block checkpointed (llm/eager_ac.py; tp, pp, cp 1): the mean block
    if plain_bwd_ops:
        share = eager_ac.checkpointed_layers(par, model.layers) / model.layers
        layer_b = add(layer_b, task(compute=(1 - share) * (ops.ops_time_s(gpu, plain_bwd_ops, dtype) - comp_b)))
    dense_f, dense_b = _dense_layer(model, par, batch, gpu, net, g, fw) if model.dense_layers else (layer_f, layer_b)
    return LayerWork(fwd_ops, bwd_ops, plain_bwd_ops, layer_f, layer_b, dense_f, dense_b)


# SMs a MoE dispatcher's kernels occupy while they run: DeepEP's default Buffer.num_sms (the DeepSeek-V3 report: 20 of the
# H800's 132); NCCL's alltoall runs one block per channel, 16-32 on H100: taken as the same 20
EP_COMM_SMS = 20


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
        return overlap.beside_excess(c.shared_f, ep_f, gpu, fw), overlap.beside_excess(c.shared_b, ep_b, gpu, fw)
    return ep_f, ep_b


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
    return add(layer_f, task(host=extra_f)), add(layer_b, task(host=extra_b))


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


def _dense_layer(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, gpu, net: comm.Network, g: comm.Groups,
                 fw: FrameworkSpec) -> tuple[Task, Task]:
    """(forward, backward) of one of a MoE model's first dense layers (the MLP of width ffn, no experts, no alltoall)."""
    dense = model.dense_layer()
    lc = comm.layer_comm(dense, par, batch, net, g, fw)
    fwd_ops, bwd_ops = compiled.layer_ops(dense, par, batch, fw)
    tp_f, tp_b = lc.tp_fwd_s, lc.tp_bwd_s
    if par.tp_comm_overlap:
        tp_f, tp_b = overlap.tp_layer_exposed(dense, par, batch, gpu, net, g.tp, fwd_ops, bwd_ops)
    return (task(compute=ops.ops_time_s(gpu, fwd_ops, batch.precision), tp=tp_f, cp=lc.cp_fwd_s),
            task(compute=ops.ops_time_s(gpu, bwd_ops, batch.precision), tp=tp_b, cp=lc.cp_bwd_s))
