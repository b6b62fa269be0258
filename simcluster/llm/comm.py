"""The communication each parallelism implies, and its time on the project's collective and fabric models.

Ranks are numbered TP innermost, then CP, then DP, then PP (Megatron's default order):
  rank = tp_i + tp (cp_i + cp (dp_i + dp pp_i))
so a group of `size` ranks `stride` apart has min(size, G / stride) ranks in a node of G GPUs (at least 1)
and spans size / that nodes. A group inside a node is timed on the NVLink collective card
(collectives.model.predict); a group across nodes on the fabric model: every distinct node set of that
kind of group runs its ring at once (collectives.ring_flows.concurrent_ring_flows, max-min over the shared
leaf/spine links: rails and oversubscription included), each node's NIC rate is split evenly among the
G / ranks_per_node groups that share the node, and collectives.fabric.predict_fabric times the call on
that share (the algorithm and protocol NCCL's decision model picks).

Volumes (bytes, per GPU; T tokens of a micro-batch on the GPU, h hidden, t = tp):
  TP   no SP: all_reduce T h 2, twice per layer forward and twice backward
       SP:    all_gather + reduce_scatter of T h 2 (the full tensor), twice each way
       full recompute repeats the forward's calls in the backward; recompute_modules mlp / moe the MLP block's one
       a MoE layer: the attention block's calls only, plus a shared expert's own (mlp_block_tp_calls): its router
       and dispatcher take the rank's sequence shard and the dispatcher's expert-TP all_gather / reduce_scatter (EP
       below) stands where the dense MLP's SP gather was (Megatron-Core 0.10)
  CP   ring attention: the layer's K and V (all_gather of b s 2 g' d 2) forward; again plus a reduce_scatter of
       dK, dV backward; overlapped with the attention core: only max(0, comm - attention) is exposed
  EP   dispatch + combine of S = T' k h 2 per MoE layer each way, T' the tokens the rank holds (T / t under SP, else
       T); the MoE block's recomputation (full, or recompute_modules moe) dispatches and combines again in the backward.
       moe_dispatcher alltoall (dispatch_bytes, Megatron-Core 0.10): one alltoall of S over EP (each of a token's k
       copies its own message), then with expert TP = t an all_gather of t S over the TP group (the combine: a
       reduce_scatter of t S, then the alltoall). deepep (S = T k h 2 / (t / etp), no TP gather) across N nodes:
       a token goes once to each remote node that holds one of its experts (D of the N nodes, ep_nodes_per_token), then over NVLink to its experts' GPUs there:
       max(alltoall of S D / k across nodes, alltoall of S over the node's ranks on NVLink); inside a node as alltoall
  PP   one activation (forward) and one gradient (backward) of T h 2 / t per micro-batch per stage boundary
       (Megatron scatters the boundary tensor over the TP ranks)
  DP   DDP: all_reduce of the stage's gradients (GRAD_BYTES per parameter), in buckets of
       max(40M, 1M dp) parameters; ZeRO-1/2: reduce_scatter of the gradients + all_gather of the bf16
       parameters; ZeRO-3 (FSDP): per micro-batch all_gather of the parameters forward and backward and
       reduce_scatter of the gradients. Expert parameters reduce over dp / ep ranks.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from simcluster.collectives.cluster import Cluster
from simcluster.collectives.fabric import predict_fabric
from simcluster.collectives.model import predict
from simcluster.collectives.ring_flows import RingFlows, concurrent_ring_flows
from simcluster.errors import ScenarioError
from simcluster.llm.framework import MEGATRON, FrameworkSpec
from simcluster.llm.spec import BatchSpec, LlmConfigError, ParallelSpec, TransformerSpec

GRAD_BYTES = 4      # gradients reduced in fp32 (Megatron's main_grad buffers under bf16)
PARAM_BYTES = 2     # bf16 parameters (ZeRO / FSDP all_gather)
BUCKET_PARAMS = 40_000_000


@dataclass(frozen=True)
class Network:
    """What the collectives run on: the NVLink card inside a node, the fabric across nodes."""

    intra: object                 # a CollectiveModel (collectives/interface.py)
    gpus_per_node: int            # GPUs of one NVLink domain (a node, or an MNNVL domain of several nodes)
    cluster: Cluster | None = None
    aligned: bool = True          # False: groups must tile the domain (checked in `place`; machine.nvlink_domain)
    placed: dict = field(default_factory=dict, init=False, repr=False, compare=False)   # place() and groups(), once each


@dataclass(frozen=True)
class Group:
    name: str
    size: int
    stride: int
    ranks_per_node: int
    nodes: int
    sets: int = 1                        # distinct node sets running this kind of group at once
    node_rate_Bps: float = 0.0           # this group's share of a node's NIC rate (slowest set)
    flows: RingFlows | None = None
    times: dict = field(default_factory=dict, init=False, repr=False, compare=False)   # (op, bytes) -> s: collective_s once each

    @property
    def inside_node(self) -> bool:
        return self.nodes == 1

    def describe(self) -> dict:
        return {"size": self.size, "ranks_per_node": self.ranks_per_node, "nodes": self.nodes,
                "placement": "none" if self.size == 1 else "NVLink" if self.inside_node else "fabric", "concurrent_node_sets": self.sets,
                "network_Bps_per_group": self.node_rate_Bps}


def ranks_per_node(size: int, stride: int, domain_gpus: int) -> int:
    """Ranks of a group of `size` ranks `stride` apart on one NVLink domain of domain_gpus GPUs (module docstring)."""
    return min(size, max(1, domain_gpus // stride))


def place(name: str, size: int, stride: int, gpus: int, net: Network) -> Group:
    """The group of `size` ranks `stride` apart on the network, placed once (every split with this group shares it)."""
    key = (name, size, stride, gpus)
    if key not in net.placed:
        net.placed[key] = _place(name, size, stride, gpus, net)
    return net.placed[key]


def _place(name: str, size: int, stride: int, gpus: int, net: Network) -> Group:
    g = net.gpus_per_node
    if not net.aligned and size > 1:
        _check_tiles(name, size, stride, g)
    per_node = ranks_per_node(size, stride, g)
    nodes = math.ceil(size / per_node)
    if nodes == 1 or size == 1:
        return Group(name, size, stride, per_node, 1)
    if net.cluster is None:
        raise ValueError(f"the {name} group spans {nodes} nodes but the machine has no fabric")
    ranks = np.arange(gpus)
    base = ranks[(ranks // stride) % size == 0]
    node_sets = np.unique((base[:, None] + stride * np.arange(size)[None, :]) // g, axis=0)[:, ::per_node]
    solved = concurrent_ring_flows(net.cluster, list(node_sets))
    slowest = min(solved, key=lambda f: f.node_rate_Bps)
    share = slowest.node_rate_Bps * per_node / g
    return Group(name, size, stride, per_node, nodes, len(node_sets), share,
                 dataclasses.replace(slowest, node_rate_Bps=share))


def _check_tiles(name: str, size: int, stride: int, g: int) -> None:
    """The placement below holds when the groups tile the NVLink domain: a group inside it divides it, a group across
    domains has a whole number of its ranks in each. A multi-node NVLink domain (72 GPUs) need not be a power of two,
    so a group (64 ranks) may straddle two domains; that layout is refused rather than priced as if aligned."""
    span = size * stride
    inside = span <= g and g % span == 0
    across = span >= g and (g % stride == 0 and span % g == 0 or stride % g == 0)
    if not (inside or across):
        raise ScenarioError(f"the {name} group ({size} ranks, {stride} apart) does not tile the {g}-GPU NVLink domain: "
                              "some groups would straddle two domains",
                              hint=f"a degree whose groups divide {g} GPUs, or machine.nvlink_domain a multiple of {span}")


def collective_s(net: Network, group: Group, op: str, size_bytes: float) -> float:
    """One collective of `size_bytes` (nccl-tests' size convention) on every group of this kind at once; priced once per
    group, op and size (a chunk's equal gradient buckets, the layers' equal TP calls: one model call each)."""
    if group.size == 1 or size_bytes <= 0:
        return 0.0
    key = (op, max(1, int(size_bytes)))
    if key not in group.times:
        if group.inside_node:
            group.times[key] = predict(net.intra, op, key[1], group.size).time_s
        else:
            view = dataclasses.replace(net.cluster, gpus_per_node=group.ranks_per_node, job_nodes=group.nodes)
            group.times[key] = predict_fabric(view, op, key[1], None, group.flows).time_s
    return group.times[key]


@dataclass(frozen=True)
class Groups:
    tp: Group
    cp: Group
    dp: Group
    pp: Group
    ep: Group
    expert_dp: Group
    dense_grad: Group | None = None   # the dense weights' gradient / parameter group: dp x cp (CP ranks hold the same
                                      # weights; Megatron's data-parallel group with context parallelism); dp when cp = 1

    def describe(self) -> dict:
        extra = (self.dense_grad,) if self.dense_grad is not None and self.dense_grad is not self.dp else ()
        return {g.name: g.describe() for g in (self.tp, self.cp, self.dp, self.pp, self.ep, self.expert_dp) + extra}


def groups(par: ParallelSpec, net: Network) -> Groups:
    """Every group of the split placed on the network, once per network and degrees (a plan's splits share them)."""
    key = (par.tp, par.cp, par.dp, par.pp, par.ep, par.etp, par.expert_dp)
    if key not in net.placed:
        net.placed[key] = _groups(par, net)
    return net.placed[key]


def _groups(par: ParallelSpec, net: Network) -> Groups:
    n = par.gpus
    tp = place("tp", par.tp, 1, n, net)
    cp = place("cp", par.cp, par.tp, n, net)
    dp = place("dp", par.dp, par.tp * par.cp, n, net)
    stride = par.etp                   # expert TP 1: the experts' group runs over the TP ranks too; CP ranks fold into ep
    ep = place("ep", par.ep, stride, n, net)
    edp = place("expert_dp", par.expert_dp, stride * par.ep, n, net)
    if par.pp > 1:
        pp = place("pp", par.pp, par.tp * par.cp * par.dp, n, net)
    else:
        pp = Group("pp", 1, n, 1, 1)
    grad = place("dp_cp", par.dp * par.cp, par.tp, n, net) if par.cp > 1 else dp
    return Groups(tp, cp, dp, pp, ep, edp, grad)


@dataclass(frozen=True)
class LayerComm:
    """Exposed communication of one layer for one micro-batch (seconds)."""

    tp_fwd_s: float
    tp_bwd_s: float
    cp_fwd_s: float          # K/V exchange (before subtracting the overlap with attention)
    cp_bwd_s: float
    ep_fwd_s: float
    ep_bwd_s: float


def layer_comm(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, net: Network, g: Groups,
               fw: FrameworkSpec = MEGATRON) -> LayerComm:
    tokens = batch.micro_batch * model.seq // par.cp
    act = tokens * model.hidden * 2
    mlp = mlp_block_tp_calls(model)
    if par.sequence_parallel:
        one = collective_s(net, g.tp, "all_gather", act) + collective_s(net, g.tp, "reduce_scatter", act)
        grads = (1 + mlp) * one
    else:
        one = collective_s(net, g.tp, "all_reduce", act)
        # the input gradients' all_reduces: Megatron's two bf16 ones (fused QKV, fused up-gate); torch DTensor TP all-reduces
        # each column-parallel linear's fp32 input gradient (5 calls; counted on a profiled 2-GPU step, llm-findings.md);
        # a MoE layer without a shared expert: the attention block's share (half)
        grads = fw.tp_bwd_allreduces * collective_s(net, g.tp, "all_reduce", act * fw.tp_bwd_bytes // 2) * (1 + mlp) / 2
    tp_fwd = (1 + mlp) * one
    again = (1 + mlp if par.recompute == "full" else mlp * int(par.recomputes_mlp_block(model)))   # checkpointed blocks' calls
    tp_bwd = grads + again * one
    kv = batch.micro_batch * model.seq * 2 * max(1, model.kv_heads // par.tp) * model.head_dim * 2
    cp_fwd = collective_s(net, g.cp, "all_gather", kv)
    cp_bwd = cp_fwd + collective_s(net, g.cp, "reduce_scatter", kv)
    ep_one = 0.0
    if model.moe:
        sent, gathered = dispatch_bytes(model, par, batch)
        ep_one = 2 * ep_dispatch_s(model, par, net, g.ep, sent)
        ep_one += collective_s(net, g.tp, "all_gather", gathered) + collective_s(net, g.tp, "reduce_scatter", gathered)
    return LayerComm(tp_fwd, tp_bwd, cp_fwd, cp_bwd, ep_one, ep_one * (2 if par.recomputes("moe") else 1))


def mlp_block_tp_calls(model: TransformerSpec) -> int:
    """The MLP block's own TP calls per layer and direction (1 or 0). A dense MLP: 1. A MoE layer (Megatron-Core 0.10
    moe_layer.py MoELayer.forward: the router and the dispatcher get the rank's hidden states as they come, the sequence
    shard under SP; the experts' linears run no TP communication, explicit_expert_comm; the dispatcher's all_gather /
    reduce_scatter over expert TP, token_dispatcher.py, are priced with EP): 0, unless a shared expert runs (shared_experts.py
    SharedExpertMLP is an MLP of TP column / row linears: its own SP all_gather / reduce_scatter of T h): 1."""
    return int(not model.moe or model.shared_expert_ffn > 0)


def dispatch_bytes(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec) -> tuple[float, float]:
    """Bytes per GPU of one MoE dispatch (the combine moves the same back): (the alltoall over the EP group, the
    all_gather over the expert-TP group after it, nccl-tests' size: the gathered whole; 0 without expert TP).

    alltoall (Megatron-Core 0.10, token_dispatcher.py MoEAlltoAllTokenDispatcher at core_v0.10.0 7ee599a2): the
    dispatcher gets the rank's own hidden states, under sequence parallelism its sequence shard of T / t tokens (T =
    b s / c), else all T (tp 1; Megatron-Core 0.10 refuses MoE with tp > 1 and no SP in training, moe_layer.py
    MoELayer.forward, so that case follows the code's arithmetic unchecked); permutes k copies of each, alltoalls them
    over EP (stride etp), then with expert TP > 1 all_gathers the received rows over the expert-TP group
    (gather_from_sequence_parallel_region on tp_group = the expert-TP group, here the TP ranks) and the combine
    reduce_scatters them back before its alltoall. deepep (the flex dispatcher, Megatron-Core main d98e8a64): one
    dispatch over the TP x EP group of the rank's T / t tokens, each sent to every TP replica of its k experts (topk
    t k): T k h 2 / (t / etp) over the EP group as modelled, no TP gather."""
    tokens = batch.micro_batch * model.seq // par.cp
    row = model.top_k * model.hidden * 2
    if par.moe_dispatcher == "deepep":
        return float(tokens // (par.tp // par.etp) * row), 0.0
    held = tokens // par.tp if par.sequence_parallel else tokens
    return float(held * row), float(held * row * par.etp) if par.etp > 1 else 0.0


def ep_nodes_per_token(model: TransformerSpec, nodes: int) -> float:
    """Expected number of the EP group's `nodes` nodes that hold at least one of a token's top_k experts, routing
    balanced (every expert equally likely; experts placed in order, E / N per node). P(a node is missed) is the
    hypergeometric C(E - E/N, k) / C(E, k); with group-limited routing (expert_groups G, group_topk M) the k experts
    are drawn from the M E / G experts of M groups drawn among G: a node holding whole groups (G a multiple of N) is
    missed when j of its G / N groups are drawn (hypergeometric in j) and none of its j E / G experts is picked; a
    group spread over N / G nodes, when it is not drawn or none of the node's E / N experts of it is picked."""
    e, k = model.experts, model.top_k
    if nodes <= 1:
        return 1.0
    per_node = e / nodes

    def none_picked(pool: float, held: float) -> float:     # k drawn without replacement from `pool`, none of `held`
        return math.comb(int(pool - held), k) / math.comb(int(pool), k) if pool - held >= k else 0.0

    if not model.expert_groups or model.group_topk == model.expert_groups:
        missed = none_picked(e, per_node)
    elif model.expert_groups % nodes == 0:
        g, m, q, size = model.expert_groups, model.group_topk, model.expert_groups // nodes, e // model.expert_groups
        missed = sum(math.comb(q, j) * math.comb(g - q, m - j) / math.comb(g, m) * none_picked(m * size, j * size)
                     for j in range(0, min(q, m) + 1))
    elif nodes % model.expert_groups == 0:
        g, m = model.expert_groups, model.group_topk
        missed = (1 - m / g) + m / g * none_picked(m * e / g, per_node)
    else:
        raise ScenarioError(f"model.expert_groups {model.expert_groups} and the EP group's {nodes} nodes: neither divides the other",
                            hint="the deepep dispatcher's volume is modelled for groups aligned with nodes")
    return nodes * (1 - missed)


def check_dispatch(model: TransformerSpec, par: ParallelSpec, domain_gpus: int) -> None:
    """deepep with group-limited routing is priced for groups aligned with the EP group's nodes (ep_nodes_per_token):
    whole groups on a node, or a group over whole nodes; the EP group placed as groups() places it. Checked when the
    scenario is read, so the refusal names the model key."""
    g, m = model.expert_groups, model.group_topk
    if par.moe_dispatcher != "deepep" or par.ep == 1 or not g or m == g:
        return
    nodes = -(-par.ep // ranks_per_node(par.ep, par.etp, domain_gpus))
    if nodes > 1 and g % nodes and nodes % g:
        raise LlmConfigError("model.expert_groups", f"{g} groups and the EP group's {nodes} nodes: neither divides the other "
                             "(deepep's volume is modelled for groups aligned with nodes)")


def ep_dispatch_s(model: TransformerSpec, par: ParallelSpec, net: Network, group: Group, nbytes: float) -> float:
    """One dispatch (or combine) of `nbytes` per GPU (T k h 2) on the EP group, by par.moe_dispatcher."""
    if par.moe_dispatcher == "alltoall" or group.inside_node:
        return collective_s(net, group, "alltoall", nbytes)
    dedup = ep_nodes_per_token(model, group.nodes) / model.top_k
    across = collective_s(net, group, "alltoall", nbytes * dedup)
    r = group.ranks_per_node
    forward = predict(net.intra, "alltoall", max(1, int(nbytes)), r).time_s if r > 1 else 0.0
    return max(across, forward)


def p2p_s(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, net: Network, g: Groups, elem_bytes: int = 2) -> float:
    """One boundary tensor (activation or its gradient, `elem_bytes` per element: the residual stream's) between
    neighbouring stages."""
    if par.pp == 1:
        return 0.0
    nbytes = batch.micro_batch * model.seq // par.cp * model.hidden * elem_bytes / par.tp
    key = ("p2p", max(1, int(nbytes)), nbytes)       # priced once per PP group and size, like its collectives
    if key not in g.pp.times:
        pair = dataclasses.replace(g.pp, size=2, nodes=1 if g.pp.inside_node else 2)
        g.pp.times[key] = (predict(net.intra, "sendrecv", key[1], 2).time_s if pair.inside_node
                           else collective_s(net, pair, "sendrecv", nbytes))
    return g.pp.times[key]


MAX_BUCKETS = 100_000       # gradient buckets of one pipeline chunk (Megatron at 405B, dp 1: about 10,000)


def buckets(params: float, dp: int, bucket_params: int = 0) -> list[float]:
    """Gradient buckets (parameter counts), in the order the backward produces them: `bucket_params` each, or
    Megatron's max(40M, 1M dp) when 0."""
    if params <= 0:
        return []
    size = bucket_params or max(BUCKET_PARAMS, 1_000_000 * dp)
    full, rest = divmod(params, size)
    if full >= MAX_BUCKETS:   # refused before a list of billions of buckets (MemoryError) or a DES of as many events
        from simcluster.llm.spec import LlmConfigError

        raise LlmConfigError("framework.bucket_params" if bucket_params else "model.layers",
                             f"{params:.3g} gradient parameters in buckets of {size:,} are more than {MAX_BUCKETS:,} buckets",
                             hint="a larger gradient bucket, or fewer layers / a smaller model per pipeline stage")
    return [float(size)] * int(full) + ([float(rest)] if rest else [])


def grad_sync_s(net: Network, group: Group, zero: int, params: float) -> float:
    """Time of one gradient bucket of `params` parameters on the DP group (DDP all_reduce, ZeRO reduce_scatter)."""
    op = "all_reduce" if zero == 0 else "reduce_scatter"
    return collective_s(net, group, op, params * GRAD_BYTES)


def bucket_times(net: Network, group: Group, zero: int, params: float, bucket_params: int = 0) -> list[float]:
    """Each gradient bucket's reduction (grad_sync_s), in the order the backward produces them; the equal ones priced once."""
    sizes = buckets(params, group.size, bucket_params)
    full = grad_sync_s(net, group, zero, sizes[0]) if sizes else 0.0
    return [full if n == sizes[0] else grad_sync_s(net, group, zero, n) for n in sizes]


DDP_FIRST_BUCKET_BYTES = 2**20   # torch DDP's first bucket (torch.distributed._DEFAULT_FIRST_BUCKET_BYTES, 1 MiB)


def ddp_buckets(tensors: list[float], cap_bytes: float, first_cap_bytes: float = DDP_FIRST_BUCKET_BYTES) -> list[float]:
    """torch DDP's gradient buckets (bytes) from its gradient tensors (bytes) in the order the backward fills them:
    reducer.cpp's compute_bucket_assignment_by_size adds whole tensors to the open bucket and closes it once it holds
    its limit or more (1 MiB for the first, bucket_cap_mb after), so a tensor larger than the cap is a bucket of its
    own and is never split."""
    out, size, limit = [], 0.0, first_cap_bytes
    for t in tensors:
        size += t
        if size >= limit:
            out.append(size)
            size, limit = 0.0, cap_bytes
    return out + ([size] if size > 0 else [])


def ddp_bucket_bytes(model: TransformerSpec, par: ParallelSpec, params: float, layers: int, first: bool, last: bool,
                     cap_params: int) -> list[float]:
    """torch DDP's buckets (ddp_buckets, bytes of fp32 gradients: GRAD_BYTES) of a chunk of `layers` decoder layers
    holding `params` parameters: the runner's tensors in reverse registration order (the LM head where last and untied,
    the final norm; per layer down, up, gate, the MLP norm, o, v, k, q, the attention norm; the embedding where first);
    what the layers do not hold is the embedding (first) and the head (last), halved where a chunk holds both untied."""
    t, h, d = par.tp, model.hidden, model.head_dim
    q, kv = model.heads * d * h / t, model.kv_heads * d * h / t
    layer = [model.mlp_params() / t / model.mlp_matrices] * model.mlp_matrices + [h, q, kv, kv, q, h]
    rest = max(0.0, params - layers * sum(layer))
    head = rest / 2 if first and last and not model.tied_embeddings else (0.0 if first else rest)
    tensors = ([head] if head else []) + layer * layers + ([rest - head] if rest - head > 0 else [])
    return ddp_buckets([x * GRAD_BYTES for x in tensors], cap_params * GRAD_BYTES)


def param_gather_s(net: Network, group: Group, params: float) -> float:
    return collective_s(net, group, "all_gather", params * PARAM_BYTES)
