"""Collectives across nodes (steady-state flow form): ring, double binary tree, hierarchical, in-network.

Inputs are cards: the intra-node collective card (NVLink), the NIC card, the fabric and, where the
switches aggregate, an AggregationParams. The network part is solved as flows on the machine's Platform:
one flow per (rail, node) ring hop, rates shared max-min with every other flow and capped by
what the NIC can do (a TCP NIC is capped by the host cores it may use) and by the PCIe path between the GPU and the
NIC (hardware/pcie.py). Then, with B_nvl = the per-GPU NVLink rate the intra card predicts for a large all_reduce
on G ranks (its busbw), B_net = the sum over rails of a node's slowest ring-hop flow, n = N * G:
  ring          T = 2(n-1)/n * S / min(B_nvl, B_net)             + 2(n-1) * l_step
  tree          T = max(2 S / B_nvl, w_N S / B_net, 2 S / B_tree) + 2 D_N * l_step + l_intra + F
                  (B_tree: NCCL's tree-kernel ceiling, channels x per-channel rate: collectives/tree_kernel.py)
  hierarchical  T = T_intra(reduce_scatter, S) + 2(N-1)/N * (S/G) / (B_net/G) + T_intra(all_gather, S)
  in-network    T = T_node(S) + T_tree(S/K)  (K NICs per node; above one chunk: max of the two + the faster one's chunk)
                  T_node = the node's own all_reduce of S (NVLS with an NVLS card), T_tree = L switch levels
                  (hardware/switch.py)
  nvls-tree     T = max(S / algbw_NVLS(G), w_N S / B_net) + l_NVLS + 2 D_N l_step + F (NVLink SHARP nodes)
(F: the tree's pipeline fill, one chunk through every stage but the slowest: collectives/pipeline_fill.py; D_N: the
depth of NCCL's double binary tree over N nodes, ceil(log2 N), schedule.tree_depth)
(w_N = the busiest node's network bytes on NCCL's double binary tree, in units of S: 1 at 2 nodes, 2 from 4
nodes on; l_step = a network step: l_nic times the NIC card's `step_operations` for Simple and LL128, l_nic for
LL). Other collectives scale the ring's bytes by their bus factor. These are the Simple-protocol forms;
each algorithm also runs LL and LL128 (LL: twice the data time, capped by NCCL's LL limit; LL128: 120/128 of
Simple's rate), its step latencies NCCL's NVLink and network values, and only the 2(N-1) ring steps that cross
nodes pay the network latency. Which algorithm and protocol run is NCCL's own decision for the topology
(collectives/nccl_tuner.py), the fastest of the model's options only where NCCL's model has none; a scenario may
force an algorithm. alltoall and sendrecv across nodes run on NCCL's point-to-point path (`Alltoall`, `SendRecv`:
each GPU's remote bytes through its own NIC, the fabric's share from the alltoall's routes, collectives/alltoall.py),
not as a ring. Every answer names the limit that binds it (`binding_limit` in its breakdown: the bandwidth term
that takes longest - NVLink, NVLS, NCCL's tree and NVLS-tree kernels, the NIC, the PCIe path, a fabric link, the switch tree -
or 'latency' where the fixed terms take longer). The call each algorithm prices (`FabricCall`) and its per-protocol
terms (data fraction, step latencies, LL's ceiling): collectives/fabric_call.py. docs/models/fabric.md has every term.
"""

from __future__ import annotations

import math

from simcluster.collectives.alltoall import p2p_rounds, unit_link_load
from simcluster.collectives.cluster import Cluster
from simcluster.collectives.fabric_call import (
    DATA_FRACTION,
    LARGE,
    FabricCall,
    network_name,
    nvlink_rate,
    protocol_terms,
    step_latencies,
)
from simcluster.collectives.in_network import InNetwork
from simcluster.collectives.limits import NVLINK, NVLS, NVLS_TREE_KERNEL, PIPELINE_FILL, binding
from simcluster.collectives.model import FabricPrediction, predict
from simcluster.collectives.nccl_constants import TUNED_OPS
from simcluster.collectives.nccl_search import graphs
from simcluster.collectives.nccl_tuner import best_protocol as nccl_best_protocol
from simcluster.collectives.nccl_tuner import call_channels, decide
from simcluster.collectives.pipeline_fill import (
    fill_s,
    nvlink_wait_bytes,
    nvls_tree_chunk_bytes,
    stream_chunk_bytes,
    tree_chunk_bytes,
    tree_stages_s,
)
from simcluster.collectives.ring_flows import RingFlows, ring_flows
from simcluster.collectives.schedule import bus_factor, canonical_op, tree_depth, tree_node_load
from simcluster.collectives.tree_kernel import nvls_tree_kernel_algbw, tree_ceiling
from simcluster.errors import SimclusterError


def _intra_time(cluster: Cluster, op: str, size: float) -> float:
    return predict(cluster.intra, op, max(1, int(size)), cluster.gpus_per_node).time_s if cluster.gpus_per_node > 1 else 0.0


P2P_OPS = ("sendrecv", "alltoall")


class Ring:
    """T = base + busbw bytes / (min(B_nvl, B_net) x f_p) + intra steps x l_intra,p + inter steps x l_inter,p: the
    collectives, and point-to-point ops inside one node."""

    name = "ring"
    nccl_name = "Ring"
    protocols = ("LL", "LL128", "Simple")

    def applies(self, call: FabricCall) -> bool:
        return call.op not in P2P_OPS or call.nodes == 1

    def time(self, call: FabricCall, protocol: str = "Simple") -> tuple[float, dict]:
        steps = 2 * (call.n - 1) if call.op == "all_reduce" else max(1, call.n - 1)
        inter_steps = (2 * (call.nodes - 1) if call.op == "all_reduce" else call.nodes - 1) if call.nodes > 1 else 0
        l_intra, l_inter = step_latencies(call, "Ring", protocol)
        bus_bytes = bus_factor(call.op, call.n) * call.size_bytes
        links = {NVLINK: bus_bytes / call.b_nvl}
        if inter_steps:   # one node: no step crosses a NIC (its ring flows carry nothing, B_net = 0)
            links[network_name(call)] = bus_bytes / call.b_net
        rate = min(call.b_nvl, call.b_net) if inter_steps else call.b_nvl
        data, terms = protocol_terms(call, links, bus_bytes, protocol)
        latency = call.base + (steps - inter_steps) * l_intra + inter_steps * l_inter
        latency += call.rendezvous("Ring", protocol) if inter_steps else 0.0
        return latency + data, {"bandwidth_Bps": rate, "nvlink_Bps": call.b_nvl, "network_Bps": call.b_net,
                                "step_latency_intra_s": l_intra, "step_latency_inter_s": l_inter,
                                "binding_limit": binding(latency, terms)}


class Tree:
    """NCCL's double binary tree across nodes (all_reduce): the busiest node moves w_N S on its NICs."""

    name = "tree"
    nccl_name = "Tree"
    protocols = ("LL", "LL128", "Simple")

    def applies(self, call: FabricCall) -> bool:
        return call.op == "all_reduce" and call.nodes >= 2

    def data_s(self, call: FabricCall, protocol: str = "Simple") -> tuple[float, dict]:
        """(data time, named terms): 2 S on NVLink and w_N S on the busiest node's NICs, over the protocol, and 2 S
        through NCCL's tree kernel at its ceiling (collectives/tree_kernel.py; the protocol's already in it)."""
        links = {NVLINK: 2 * call.size_bytes / call.b_nvl,
                 network_name(call): tree_node_load(call.nodes) * call.size_bytes / call.b_net}
        data, terms = protocol_terms(call, links, 2 * call.size_bytes, protocol)
        kernel_Bps, kernel = tree_ceiling(call.cluster, protocol)
        return max(data, 2 * call.size_bytes / kernel_Bps), {**terms, kernel: 2 * call.size_bytes / kernel_Bps}

    def time(self, call: FabricCall, protocol: str = "Simple") -> tuple[float, dict]:
        load = tree_node_load(call.nodes)
        l_intra, l_inter = step_latencies(call, "Tree", protocol)
        data, terms = self.data_s(call, protocol)
        latency = call.base + 2 * tree_depth(call.nodes) * l_inter + 2 * (call.cluster.gpus_per_node - 1) * l_intra
        latency += call.rendezvous("Tree", protocol)
        fill = tree_fill_s(call, protocol, load)
        return latency + data + fill, {"nvlink_Bps": call.b_nvl, "network_Bps": call.b_net, "tree_node_load": load,
                                "pipeline_fill_s": fill,
                                "step_latency_intra_s": l_intra, "step_latency_inter_s": l_inter,
                                "binding_limit": binding(latency, {**terms, PIPELINE_FILL: fill})}


class Hierarchical:
    """reduce_scatter inside the node, a ring of the node's shard across nodes, all_gather inside (all_reduce)."""

    name = "hierarchical"
    nccl_name = None            # not one of NCCL's algorithms: runs only when forced
    protocols = ("Simple",)

    def applies(self, call: FabricCall) -> bool:
        return call.op == "all_reduce" and call.nodes >= 2

    def time(self, call: FabricCall, protocol: str = "Simple") -> tuple[float, dict]:
        rs, ag = _intra_time(call.cluster, "reduce_scatter", call.size_bytes), _intra_time(call.cluster, "all_gather", call.size_bytes)
        g, nodes = call.cluster.gpus_per_node, call.nodes
        net_data = 2 * (nodes - 1) / nodes * (call.size_bytes / g) / (call.b_net / g)
        t_net = net_data + 2 * (nodes - 1) * call.l_step()
        binds = binding(2 * (nodes - 1) * call.l_step(), {NVLINK: rs + ag, network_name(call): net_data})
        return rs + t_net + ag, {"intra_reduce_scatter_s": rs, "inter_s": t_net, "intra_all_gather_s": ag,
                                 "binding_limit": binds}


class NvlsTree:
    """NVLink SHARP inside the node pipelined with the inter-node tree (all_reduce, a machine with an NVLS card)."""

    name = "nvls-tree"
    nccl_name = "NVLSTree"
    protocols = ("Simple",)     # NCCL runs NVLS and NVLS tree with Simple only

    def applies(self, call: FabricCall) -> bool:
        return call.op == "all_reduce" and call.nodes >= 2 and call.cluster.nvls is not None

    def time(self, call: FabricCall, protocol: str = "Simple") -> tuple[float, dict]:
        nvls_bw, nvls_lat = call.cluster.nvls
        load = tree_node_load(call.nodes)
        kernel = nvls_tree_kernel_algbw(call)
        terms = {NVLS: call.size_bytes / nvls_bw, network_name(call): load * call.size_bytes / call.b_net,
                 NVLS_TREE_KERNEL: call.size_bytes / kernel}
        latency = call.base + nvls_lat + 2 * tree_depth(call.nodes) * call.l_step() + call.rendezvous("NVLSTree", "Simple")
        fill = nvls_tree_fill_s(call, nvls_bw, load)
        return latency + max(terms.values()) + fill, {"nvls_algbw_Bps": nvls_bw, "network_Bps": call.b_net, "tree_node_load": load,
                                               "pipeline_fill_s": fill,
                                               "nvls_tree_kernel_algbw_Bps": kernel,
                                               "binding_limit": binding(latency, {**terms, PIPELINE_FILL: fill})}


def tree_fill_s(call: FabricCall, protocol: str, load: float) -> float:
    """The tree's pipeline fill (collectives/pipeline_fill.py): 2(G-1) NVLink stages at 2 w C / (B_nvl f) and
    2 D_N network stages at w_N c C / (B_net f), C the channels NCCL gives the call, c a channel's first chunk, w what
    an NVLink stage waits for (c under Simple, a grain under LL / LL128), f the protocol's data fraction (each stage's
    share of the tree's NVLink and network terms)."""
    topo, f = call.cluster.nccl_topology, DATA_FRACTION[protocol]
    channels = call_channels(topo, "all_reduce", "Tree", protocol, call.size_bytes)[0]
    chunk = stream_chunk_bytes(tree_chunk_bytes(protocol, call.size_bytes, channels, call.nodes, call.n),
                               call.size_bytes, channels)
    return fill_s(tree_stages_s(chunk, nvlink_wait_bytes(protocol, chunk), channels, call.nodes,
                                2 * (call.cluster.gpus_per_node - 1), 2 / (call.b_nvl * f), load / (call.b_net * f)))


def nvls_tree_fill_s(call: FabricCall, nvls_bw: float, load: float) -> float:
    """The NVLS tree's pipeline fill: the NVLS reduce and broadcast stages (c C H / algbw_NVLS each) and
    2 D_N network stages (w_N c C H / B_net), C x H chunks in flight per loop (NCCL's loop), c a stream's first chunk
    (Simple: every stage waits for the whole chunk)."""
    topo = call.cluster.nccl_topology
    channels = call_channels(topo, "all_reduce", "NVLSTree", "Simple", call.size_bytes)[0]
    heads = graphs(topo)["NVLSTree"].channels or call.cluster.gpus_per_node
    chunk = stream_chunk_bytes(nvls_tree_chunk_bytes(call.size_bytes, channels, heads, call.nodes), call.size_bytes,
                               channels * heads)
    return fill_s(tree_stages_s(chunk, chunk, channels * heads, call.nodes, 2, 1 / nvls_bw, load / call.b_net))


class Alltoall:
    """alltoall across nodes as NCCL's grouped sends (collectives/alltoall.py), n = N G ranks, S each rank's bytes:
    T = base + max(S (n-G)/n / (R_gpu / max(1, phi)), B_nvl bytes / B_a2a) + rounds x l_inter, R_gpu = K r / G_node
    (a GPU's share of its node's K NICs at rate r), phi the fabric's excess on the alltoall's routes, NVLink bytes
    S (G-1)/n plus, with PXN, the (G-1)/G of S (n-G)/n relayed to the rail-aligned GPU; B_a2a the intra card's
    alltoall busbw on G GPUs. Simple protocol only."""

    name = "alltoall"
    nccl_name = None            # NCCL's p2p path, not a tuned algorithm
    protocols = ("Simple",)

    def applies(self, call: FabricCall) -> bool:
        return call.op == "alltoall" and call.nodes >= 2

    def time(self, call: FabricCall, protocol: str = "Simple") -> tuple[float, dict]:
        cluster, g, n, s = call.cluster, call.cluster.gpus_per_node, call.n, call.size_bytes
        plat = cluster.platform
        if call.nodes > plat.nodes:
            raise SimclusterError(f"alltoall over {call.nodes} nodes on a machine of {plat.nodes}")
        k = plat.nics_per_node
        r, nic_name = cluster.wired_nic_limit
        phi = max(1.0, r * unit_link_load(plat, call.nodes, cluster.pxn))
        per_gpu = k * r / (plat.gpus_per_node or g) / phi
        net_bytes = s * (n - g) / n
        nvl_bytes = s * (g - 1) / n + (net_bytes * (g - 1) / g if cluster.pxn else 0.0)
        b_a2a = predict(cluster.intra, "alltoall", LARGE, g).busbw_Bps if g > 1 else math.inf
        t_net, t_nvl = net_bytes / per_gpu, nvl_bytes / b_a2a
        rounds = p2p_rounds(n, graphs(cluster.nccl_topology)["coll_channels"])
        latency = call.base + rounds * call.l_step() + call.rendezvous(None, "Simple", s / n)
        net = nic_name if phi <= 1.0 else f"fabric links on the alltoall's routes ({phi:.2f}x what they carry)"
        binds = binding(latency, {"NVLink (the intra card's alltoall rate)": t_nvl, net: t_net})
        return latency + max(t_net, t_nvl), {"network_Bps_per_gpu": per_gpu, "fabric_excess": phi, "network_s": t_net,
                                             "nvlink_s": t_nvl, "nvlink_Bps": b_a2a, "p2p_rounds": rounds, "pxn": cluster.pxn,
                                             "binding_limit": binds}


class SendRecv:
    """sendrecv across nodes (nccl-tests: rank r sends S to r+1): the pairs that cross a node boundary each send S
    through one GPU's NICs, the others over NVLink, at once: T = base + S / (min(B_nvl, B_net / min(G, K)) f_p) +
    l_inter,p with K NICs per node (a node's NICs are not combined for one peer; one GPU per node in the view, as a
    pipeline boundary is, gets the view's whole B_net, which is already that GPU's share)."""

    name = "p2p"
    nccl_name = None
    protocols = ("LL", "LL128", "Simple")

    def applies(self, call: FabricCall) -> bool:
        return call.op == "sendrecv" and call.nodes >= 2

    def time(self, call: FabricCall, protocol: str = "Simple") -> tuple[float, dict]:
        _, l_inter = step_latencies(call, "Ring", protocol)
        one_nic = call.b_net / max(1, min(call.cluster.gpus_per_node, call.cluster.platform.nics_per_node))
        rate = min(call.b_nvl, one_nic)
        data, terms = protocol_terms(call, {NVLINK: call.size_bytes / call.b_nvl,
                                            network_name(call): call.size_bytes / one_nic}, call.size_bytes, protocol)
        latency = call.base + l_inter + call.rendezvous(None, protocol)
        return latency + data, {"bandwidth_Bps": rate, "nvlink_Bps": call.b_nvl, "network_Bps": call.b_net,
                                "one_nic_Bps": one_nic, "step_latency_inter_s": l_inter, "binding_limit": binding(latency, terms)}


ALGORITHM_MODELS = (Ring(), Tree(), Hierarchical(), NvlsTree(), InNetwork(), Alltoall(), SendRecv())
ALGORITHMS = tuple(a.name for a in ALGORITHM_MODELS)
# NCCL's algorithm -> the class that prices it here (PAT, one GPU per node, runs as a ring of the same steps;
# NVLS across nodes needs CollNet, so it is priced as in-network aggregation)
FROM_NCCL = {"Ring": "ring", "PAT": "ring", "Tree": "tree", "NVLSTree": "nvls-tree", "NVLS": "in-network",
             "CollNetDirect": "in-network", "CollNetChain": "in-network"}


def runnable_protocols(model, topo) -> list[str]:
    """The model's protocols NCCL may run here (NCCL_PROTO as the NIC card's plugin sets it), else all its own."""
    return [p for p in model.protocols if p in topo.protocols] or list(model.protocols)


def _choose(cluster: Cluster, call: FabricCall, models: dict, algorithm: str | None, protocol=None) -> tuple[str, str, dict]:
    """(algorithm, protocol, what NCCL chose): NCCL's decision for the topology, or, with the algorithm forced, the protocol given (AWS's region
    tuner) else NCCL's for it (one NCCL cannot run here is skipped, as the tuner skips a pair NCCL marked ignored: chooser_protocol_skipped).
    Where NCCL does not tune the op (p2p) or its choice has no model here (a one-node view), the fastest applicable algorithm at its fastest protocol."""
    topo = cluster.nccl_topology
    if protocol is not None and algorithm is None:
        raise SimclusterError(f"protocol {protocol!r} is given without an algorithm")
    if algorithm is not None:
        model, allowed = models[algorithm], runnable_protocols(models[algorithm], topo)
        skipped = {"chooser_protocol_skipped": protocol} if protocol is not None and protocol not in allowed else {}
        tuned = model.nccl_name and call.op in TUNED_OPS   # NCCL's protocol for the algorithm where NCCL tunes the op
        proto = protocol if protocol in allowed else tuned and nccl_best_protocol(topo, call.op, model.nccl_name, call.size_bytes)
        proto = proto if proto in allowed else min(allowed, key=lambda p: model.time(call, p)[0])
        return algorithm, proto, skipped
    nccl = {}
    if call.op in TUNED_OPS:
        d = decide(topo, call.op, call.size_bytes)
        chosen = FROM_NCCL[d.algorithm]
        nccl = {"nccl_algorithm": d.algorithm, "nccl_protocol": d.protocol, "nccl_channels": d.channels}
        if chosen in models:
            return chosen, d.protocol if d.protocol in models[chosen].protocols else "Simple", nccl
    options = {(name, p): m.time(call, p)[0] for name, m in models.items() for p in runnable_protocols(m, topo)}
    name, proto = min(options, key=options.get)
    return name, proto, nccl


def predict_fabric(cluster: Cluster, op: str, size_bytes: int, algorithm: str | None = None,
                   flows: RingFlows | None = None, protocol: str | None = None) -> FabricPrediction:
    """Predicted time of one collective across the cluster's nodes: the algorithm and protocol NCCL's tuner picks
    for this topology (collectives/nccl_tuner.py), or the algorithm asked for at `protocol`, else NCCL's for it."""
    flows = flows or ring_flows(cluster)
    l_nic = cluster.nic.latency_s + flows.path_latency_s
    call = FabricCall(cluster, canonical_op(op), size_bytes, flows.node_rate_Bps, nvlink_rate(cluster), l_nic, flows)
    models = {a.name: a for a in ALGORITHM_MODELS if a.applies(call)}
    if algorithm is not None and algorithm not in models:
        raise SimclusterError(f"algorithm {algorithm!r} does not apply to {call.op} on {call.nodes} nodes",
                              hint=f"applicable here: {', '.join(models)}")
    chosen, proto, nccl = _choose(cluster, call, models, algorithm, protocol)
    time, detail = models[chosen].time(call, proto)
    if call.nodes > 1 and cluster.nic.call_setup_s > 0:   # the network pipeline's start-up (NIC card `call_setup`)
        time += cluster.nic.call_setup_s
        detail = {**detail, "network_call_setup_s": cluster.nic.call_setup_s}
    detail = {**detail, **nccl, "cpu_cores_per_node": flows.cpu_cores_per_node, "ecmp_collisions": flows.ecmp_collisions,
              "network_limit": flows.limit}
    return FabricPrediction(call.op, int(size_bytes), call.n, time, proto, chosen, detail)
