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

ALGORITHMS = ("ring", "tree", "hierarchical", "in-network", "nvls-tree")
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


def predict_fabric(cluster: Cluster, op: str, size_bytes: int, algorithm: str | None = None,
                   flows: RingFlows | None = None) -> FabricPrediction:
    """Predicted time of one collective across the cluster's nodes."""
    op = canonical_op(op)
    n, N, G = cluster.ranks, cluster.nodes, cluster.gpus_per_node
    flows = flows or ring_flows(cluster)
    b_net = flows.node_rate_Bps
    b_nvl = _nvlink_rate(cluster)
    intra_step = cluster.intra.simple_step_latency_s
    l_nic = cluster.nic.latency_s + float(cluster.fabric.path_latency_s(np.array([flows.max_hops]), 4096.0)[0])
    factor = bus_factor(op, n)
    bytes_on_ring = factor * size_bytes
    base = cluster.intra.base_latency_s
    options = {}
    steps = 2 * (n - 1) if op == "all_reduce" else max(1, n - 1)
    options["ring"] = (base + bytes_on_ring / min(b_nvl, b_net) + steps * max(l_nic, intra_step),
                       {"bandwidth_Bps": min(b_nvl, b_net), "nvlink_Bps": b_nvl, "network_Bps": b_net})
    if op == "all_reduce" and N >= 2:
        load = tree_node_load(N)
        t_tree = (base + max(2 * size_bytes / b_nvl, load * size_bytes / b_net) + 2 * math.log2(N) * l_nic
                  + G * intra_step)
        options["tree"] = (t_tree, {"nvlink_Bps": b_nvl, "network_Bps": b_net, "tree_node_load": load})
        rs, ag = _intra_time(cluster, "reduce_scatter", size_bytes), _intra_time(cluster, "all_gather", size_bytes)
        shard = size_bytes / G
        t_net = 2 * (N - 1) / N * shard / (b_net / G) + 2 * (N - 1) * l_nic
        options["hierarchical"] = (rs + t_net + ag, {"intra_reduce_scatter_s": rs, "inter_s": t_net, "intra_all_gather_s": ag})
        if cluster.nvls is not None:
            nvls_bw, nvls_lat = cluster.nvls
            # NVLSTree: NVSwitch reduces inside the node while the node's NICs run the inter-node tree,
            # pipelined: the slower of the two streams sets the time
            t_nvls = base + nvls_lat + max(size_bytes / nvls_bw, load * size_bytes / b_net) + 2 * math.log2(N) * l_nic
            options["nvls-tree"] = (t_nvls, {"nvls_algbw_Bps": nvls_bw, "network_Bps": b_net, "tree_node_load": load})
        if cluster.aggregation is not None:
            # each NIC streams its share of the node's S bytes through the switch, all NICs at once
            t_sw = cluster.aggregation.allreduce_time_s(size_bytes / cluster.fabric.spec.nics_per_node)
            options["in-network"] = (rs + t_sw + ag, {"intra_reduce_scatter_s": rs, "switch_s": t_sw,
                                                      "intra_all_gather_s": ag})
    if algorithm is not None:
        if algorithm not in options:
            raise SimclusterError(f"algorithm {algorithm!r} does not apply to {op} on {N} nodes",
                                  hint=f"applicable here: {', '.join(options)}")
        chosen = algorithm
    else:
        chosen = min(options, key=lambda a: options[a][0])
    time, detail = options[chosen]
    detail = {**detail, "cpu_cores_per_node": flows.cpu_cores_per_node, "ecmp_collisions": flows.ecmp_collisions}
    return FabricPrediction(op, int(size_bytes), n, time, "Simple", chosen, detail)
