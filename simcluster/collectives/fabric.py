"""Collectives across nodes (steady-state flow form): ring, double binary tree, hierarchical, in-network.

Inputs are cards: the intra-node collective card (NVLink), the NIC card, the fabric and, where the
switches aggregate, an AggregationParams. The network part is solved as flows on the Fabric:
one flow per (rail, node) ring hop, rates shared max-min with every other flow and capped by
what the NIC can do (a TCP NIC is capped by the host cores it may use). Then, with
B_nvl = the per-GPU NVLink rate the intra card predicts for a large all_reduce on G ranks
(its busbw), B_net = the sum over rails of a node's slowest ring-hop flow, n = N * G:
  ring          T = 2(n-1)/n * S / min(B_nvl, B_net)             + 2(n-1) * l_step
  tree          T = max(2 S / B_nvl, w_N S / B_net)               + 2 log2(N) * l_nic + l_intra
  hierarchical  T = T_intra(reduce_scatter, S) + 2(N-1)/N * (S/G) / (B_net/G) + T_intra(all_gather, S)
  in-network    T = T_intra(reduce_scatter, S) + T_switch(S/K)    + T_intra(all_gather, S)   (K NICs per node)
  nvls-tree     T = max(S / algbw_NVLS(G), w_N S / B_net) + l_NVLS + 2 log2(N) l_nic (NVLink SHARP nodes)
(l_step = the larger of the NIC latency and the intra card's per-step latency; w_N = the busiest node's
network bytes on NCCL's double binary tree, in units of S: 1 at 2 nodes, 2 from 4 nodes on). Other
collectives scale the ring's bytes by their bus factor. As NCCL's tuner does, the algorithm run is
the fastest one unless the scenario forces one. See docs/models/fabric.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from simcluster.collectives.interface import CollectiveModel
from simcluster.collectives.model import Prediction, predict
from simcluster.collectives.schedule import bus_factor, canonical_op, tree_node_load
from simcluster.errors import SimclusterError
from simcluster.hardware.nic import NicParams
from simcluster.hardware.switch import AggregationParams
from simcluster.network.fabric import Fabric
from simcluster.network.sharing import max_min_rates

LARGE = 2**30  # bytes: the size at which the intra card's busbw stands for the NVLink rate


@dataclass(frozen=True)
class Cluster:
    intra: CollectiveModel
    nic: NicParams
    fabric: Fabric
    gpus_per_node: int
    host_cores: float = 64.0
    nic_streams: int = 1                      # sockets (TCP) per NIC, as NCCL_NSOCKS_PERTHREAD * NTHREADS
    aggregation: AggregationParams | None = None
    nvls: tuple[float, float] | None = None     # NVLink SHARP: (intra-node all_reduce algbw B/s, latency s)
    job_nodes: int | None = None                # a job on part of the fabric (concurrent jobs)

    @property
    def nodes(self) -> int:
        return self.job_nodes or self.fabric.spec.nodes

    @property
    def ranks(self) -> int:
        return self.nodes * self.gpus_per_node


@dataclass(frozen=True)
class RingFlows:
    """The steady-state solution for one ring hop per (rail, node)."""

    node_rate_Bps: float       # sum over rails of each rail's slowest hop
    flow_rates_Bps: np.ndarray
    ecmp_collisions: int       # leaf<->spine links (up or down) carrying more than one ring flow
    cpu_cores_per_node: float  # host cores the NICs' transport takes at these rates
    max_hops: int


@dataclass(frozen=True)
class FabricPrediction(Prediction):
    """A Prediction across nodes: which algorithm ran and where the time went."""

    algorithm: str = ""
    breakdown: dict = field(default_factory=dict)


def ring_flows(cluster: Cluster, tag: int = 0) -> RingFlows:
    """Solve one ring step over every node of the fabric: NIC j of node i sends to NIC j of node i+1,
    every rail at once."""
    return concurrent_ring_flows(cluster, [np.arange(cluster.fabric.spec.nodes)], tag)[0]


def concurrent_ring_flows(cluster: Cluster, groups: list[np.ndarray], tag: int = 0) -> list[RingFlows]:
    """One ring step for several jobs at once, each a ring over its own nodes (in the given order),
    every rail; all flows share the fabric max-min. One RingFlows per job."""
    fab, spec, nic = cluster.fabric, cluster.fabric.spec, cluster.nic
    k = spec.nics_per_node
    src_all, dst_all, owner = [], [], []
    for g, nodes in enumerate(groups):
        nodes = np.asarray(nodes)
        nxt = np.roll(nodes, -1)
        src_all.append(fab.nic_index(np.repeat(nodes, k), np.tile(np.arange(k), len(nodes))))
        dst_all.append(fab.nic_index(np.repeat(nxt, k), np.tile(np.arange(k), len(nodes))))
        owner.append(np.full(len(nodes) * k, g))
    src, dst, owner = np.concatenate(src_all), np.concatenate(dst_all), np.concatenate(owner)
    fi, li, hops = fab.routes(src, dst, tag)
    cap = np.full(len(src), nic.rate_Bps(cluster.nic_streams, cluster.host_cores / k))
    rates = max_min_rates(fi, li, fab.capacity, len(src), caps=cap)
    out = []
    spine = li >= fab.leaf_up0
    shared = np.bincount(li[spine] - fab.leaf_up0)  # flows (of any job) per leaf<->spine link
    for g, nodes in enumerate(groups):
        mine = owner == g
        per_rail = rates[mine].reshape(len(nodes), k).min(axis=0)
        on_spine = spine & mine[fi]
        collisions = int(np.sum(shared[np.unique(li[on_spine] - fab.leaf_up0)] > 1)) if on_spine.any() else 0
        node_rate = float(per_rail.sum())
        out.append(RingFlows(node_rate, rates[mine], collisions, nic.cores_used(node_rate),
                             int(hops[mine].max(initial=0))))
    return out


def _intra_time(cluster: Cluster, op: str, size: float) -> float:
    return predict(cluster.intra, op, max(1, int(size)), cluster.gpus_per_node).time_s if cluster.gpus_per_node > 1 else 0.0


def _nvlink_rate(cluster: Cluster) -> float:
    g = max(2, cluster.gpus_per_node)
    return predict(cluster.intra, "all_reduce", LARGE, g).busbw_Bps


@dataclass(frozen=True)
class FabricCall:
    """One collective call across nodes, with the rates every algorithm prices it from."""

    cluster: Cluster
    op: str
    size_bytes: float
    b_net: float               # a node's network rate on the ring step (sum over rails), bytes/s
    b_nvl: float               # the NVLink busbw of a large all_reduce inside a node, bytes/s
    l_nic: float               # one network hop: NIC latency + path latency, s
    flows: RingFlows

    @property
    def n(self) -> int:
        return self.cluster.ranks

    @property
    def nodes(self) -> int:
        return self.cluster.nodes

    @property
    def base(self) -> float:
        return self.cluster.intra.base_latency_s

    @property
    def intra_step(self) -> float:
        return self.cluster.intra.simple_step_latency_s


class Ring:
    """T = base + busbw bytes / min(B_nvl, B_net) + steps x max(l_nic, intra step): every op."""

    name = "ring"

    def applies(self, call: FabricCall) -> bool:
        return True

    def time(self, call: FabricCall) -> tuple[float, dict]:
        steps = 2 * (call.n - 1) if call.op == "all_reduce" else max(1, call.n - 1)
        rate = min(call.b_nvl, call.b_net)
        t = call.base + bus_factor(call.op, call.n) * call.size_bytes / rate + steps * max(call.l_nic, call.intra_step)
        return t, {"bandwidth_Bps": rate, "nvlink_Bps": call.b_nvl, "network_Bps": call.b_net}


class Tree:
    """NCCL's double binary tree across nodes (all_reduce): the busiest node moves w_N S on its NICs."""

    name = "tree"

    def applies(self, call: FabricCall) -> bool:
        return call.op == "all_reduce" and call.nodes >= 2

    def time(self, call: FabricCall) -> tuple[float, dict]:
        load = tree_node_load(call.nodes)
        t = (call.base + max(2 * call.size_bytes / call.b_nvl, load * call.size_bytes / call.b_net)
             + 2 * math.log2(call.nodes) * call.l_nic + call.cluster.gpus_per_node * call.intra_step)
        return t, {"nvlink_Bps": call.b_nvl, "network_Bps": call.b_net, "tree_node_load": load}


class Hierarchical:
    """reduce_scatter inside the node, a ring of the node's shard across nodes, all_gather inside (all_reduce)."""

    name = "hierarchical"

    def applies(self, call: FabricCall) -> bool:
        return call.op == "all_reduce" and call.nodes >= 2

    def time(self, call: FabricCall) -> tuple[float, dict]:
        rs, ag = _intra_time(call.cluster, "reduce_scatter", call.size_bytes), _intra_time(call.cluster, "all_gather", call.size_bytes)
        g, nodes = call.cluster.gpus_per_node, call.nodes
        t_net = 2 * (nodes - 1) / nodes * (call.size_bytes / g) / (call.b_net / g) + 2 * (nodes - 1) * call.l_nic
        return rs + t_net + ag, {"intra_reduce_scatter_s": rs, "inter_s": t_net, "intra_all_gather_s": ag}


class NvlsTree:
    """NVLink SHARP inside the node pipelined with the inter-node tree (all_reduce, a machine with an NVLS card)."""

    name = "nvls-tree"

    def applies(self, call: FabricCall) -> bool:
        return call.op == "all_reduce" and call.nodes >= 2 and call.cluster.nvls is not None

    def time(self, call: FabricCall) -> tuple[float, dict]:
        nvls_bw, nvls_lat = call.cluster.nvls
        load = tree_node_load(call.nodes)
        t = (call.base + nvls_lat + max(call.size_bytes / nvls_bw, load * call.size_bytes / call.b_net)
             + 2 * math.log2(call.nodes) * call.l_nic)
        return t, {"nvls_algbw_Bps": nvls_bw, "network_Bps": call.b_net, "tree_node_load": load}


class InNetwork:
    """reduce_scatter inside the node, each NIC streams its share through the aggregating switch, all_gather inside
    (all_reduce, a machine with an aggregation card)."""

    name = "in-network"

    def applies(self, call: FabricCall) -> bool:
        return call.op == "all_reduce" and call.nodes >= 2 and call.cluster.aggregation is not None

    def time(self, call: FabricCall) -> tuple[float, dict]:
        rs, ag = _intra_time(call.cluster, "reduce_scatter", call.size_bytes), _intra_time(call.cluster, "all_gather", call.size_bytes)
        t_sw = call.cluster.aggregation.allreduce_time_s(call.size_bytes / call.cluster.fabric.spec.nics_per_node)
        return rs + t_sw + ag, {"intra_reduce_scatter_s": rs, "switch_s": t_sw, "intra_all_gather_s": ag}


ALGORITHM_MODELS = (Ring(), Tree(), Hierarchical(), NvlsTree(), InNetwork())
ALGORITHMS = tuple(a.name for a in ALGORITHM_MODELS)


def predict_fabric(cluster: Cluster, op: str, size_bytes: int, algorithm: str | None = None,
                   flows: RingFlows | None = None) -> FabricPrediction:
    """Predicted time of one collective across the cluster's nodes: the fastest algorithm that applies (as NCCL's
    tuner picks), or the one asked for."""
    flows = flows or ring_flows(cluster)
    l_nic = cluster.nic.latency_s + float(cluster.fabric.path_latency_s(np.array([flows.max_hops]), 4096.0)[0])
    call = FabricCall(cluster, canonical_op(op), size_bytes, flows.node_rate_Bps, _nvlink_rate(cluster), l_nic, flows)
    options = {a.name: a.time(call) for a in ALGORITHM_MODELS if a.applies(call)}
    if algorithm is not None:
        if algorithm not in options:
            raise SimclusterError(f"algorithm {algorithm!r} does not apply to {call.op} on {call.nodes} nodes",
                                  hint=f"applicable here: {', '.join(options)}")
        chosen = algorithm
    else:
        chosen = min(options, key=lambda a: options[a][0])
    time, detail = options[chosen]
    detail = {**detail, "cpu_cores_per_node": flows.cpu_cores_per_node, "ecmp_collisions": flows.ecmp_collisions}
    return FabricPrediction(call.op, int(size_bytes), call.n, time, "Simple", chosen, detail)
