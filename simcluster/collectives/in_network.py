"""In-network aggregation across nodes (`InNetwork`, one of collectives/fabric.py's algorithms): the node's own
reduce and broadcast over NVLink (or NVLink SHARP) and each NIC's share up and down a tree of aggregating switches
(hardware/switch.py), pipelined over chunks as NCCL's CollNet runs them. docs/models/fabric.md, "Collectives across
nodes" and "Tiers and aggregation trees". `call` below is a fabric_call.FabricCall, `cluster` a fabric.Cluster.
"""

from __future__ import annotations

from dataclasses import dataclass

from simcluster.collectives.domain import domain_predict
from simcluster.collectives.limits import NVLINK, NVLS, binding
from simcluster.network.builders import aggregation_levels, trees_at_busiest_switch

COLLNET_CHUNK_BYTES = 4 * 2**20   # the pipeline's grain: NCCL CollNet moves a call in chunks (Simple, 512 KiB a channel)


@dataclass(frozen=True)
class AggregationTree:
    """Where one call's aggregation runs: the tree's switch levels (network/builders.aggregation_levels), one level's
    link + switch latency, and the trees (one per rail, of every job at once) that need its busiest switch."""

    levels: int
    hop_latency_s: float
    trees: int


def aggregation_tree(cluster) -> AggregationTree:
    spec = cluster.platform.fabric
    if spec is None:            # a platform without a fabric description (teaching shapes): one switch
        return AggregationTree(1, 0.0, cluster.tree_jobs)
    return AggregationTree(aggregation_levels(spec, cluster.nodes), spec.hop_latency_s,
                           trees_at_busiest_switch(spec, cluster.nodes, cluster.tree_jobs))


def node_allreduce_s(cluster, size: float) -> float:
    """One node's own all_reduce of `size` on its G GPUs (NVLS where the node has it and NCCL picks it, else the
    NVLink card; the NCCL version the cluster runs): no multi-node all_reduce can move the node's bytes faster than
    this. On a board (8 GPUs) it carries no NVLS pipeline fill; on a domain above 8 GPUs it carries the one-domain
    kernel's fill besides CollNet's own pipeline term (possibly counted twice; no published in-network row there)."""
    g = cluster.gpus_per_node
    if g < 2:
        return 0.0
    nvls = ({g: cluster.nvls[0]}, cluster.nvls[1]) if cluster.nvls is not None else None
    return domain_predict(cluster.intra, "all_reduce", max(1, int(size)), g, cluster.arch, nvls, cluster.nccl).time_s


def group_nics(cluster) -> tuple[float, float, str]:
    """(NICs, PCIe bytes/s a NIC, its name) of the call's ranks on one node. A group view of g ranks a node (llm/comm's
    copy of the Cluster for a group across nodes) streams through its ranks' own share of the node's K NICs, K g /
    G_wired (Platform.gpus_per_node; below 1 where a NIC serves several GPUs: the rank's share of it), each behind the
    PCIe path as the board wires it: the rule the alltoall's per-GPU rate follows (collectives/cluster.wired_nic_limit,
    NICS_AS_WIRED; session 52 mendB52). Before, the view read as its g ports spread over all K NICs."""
    k_node, g, wired = max(1, cluster.platform.nics_per_node), max(1, cluster.gpus_per_node), max(1, cluster.wired_gpus)
    if wired == g:
        return (k_node, *cluster.pcie_per_nic)
    return (k_node * g / wired, *cluster.wired_pcie_per_nic)


class InNetwork:
    """In-network aggregation (all_reduce, a machine with an aggregation card): the node reduces inside (NVLink
    SHARP where it has an NVLS card, NCCL's NVLS + CollNet; else CollNet Direct's scatter to the NICs' GPUs over
    NVLink), each of its K NICs streams its S/K up a tree of switches and back (hardware/switch.py: the tree's levels,
    per-level latency, the switch's aggregation rate and concurrent-tree limit; the stream at most the switch port's,
    the NIC's own line rate (where slower, at the card's frame payload) and its PCIe path's rate; a group view's ranks
    stream through their own NICs only, group_nics), the node broadcasts the result inside (NVLS, or a gather over NVLink). The in-node reduce and
    broadcast run in one kernel and share each GPU's NVLink: together they are one stage, the node's own all_reduce
    of S (with NVLS: l_NVLS + S / algbw_NVLS, never below the node's own all_reduce). NCCL's CollNet runs
    the stages as a pipeline over chunks: a call larger than COLLNET_CHUNK_BYTES takes its slower stage plus the
    faster one's time for one chunk; a call of one chunk or less, their sum."""

    name = "in-network"
    nccl_name = "CollNetDirect"
    protocols = ("Simple",)     # CollNet runs Simple only

    def applies(self, call) -> bool:
        agg = call.cluster.aggregation
        if call.op != "all_reduce" or call.nodes < 2 or agg is None:
            return False
        return agg.max_levels is None or aggregation_tree(call.cluster).levels <= agg.max_levels

    @staticmethod
    def node_stage(call, size: float) -> tuple[float, float]:
        """(time, data part) of the in-node reduce and broadcast of `size`."""
        cluster, g = call.cluster, call.cluster.gpus_per_node
        if g < 2:
            return 0.0, 0.0
        own = node_allreduce_s(cluster, size)
        if cluster.nvls is not None:
            bw, latency = cluster.nvls
            return max(latency + size / bw, own), size / bw
        return own, 2 * (g - 1) / g * size / call.b_nvl

    def time(self, call, protocol: str = "Simple") -> tuple[float, dict]:
        cluster, agg = call.cluster, call.cluster.aggregation
        tree = aggregation_tree(cluster)
        k, pcie_Bps, pcie_name = group_nics(cluster)
        nic_line = cluster.nic.line_rate_Bps
        # a NIC slower than the switch's ports: its own wire, the card's frames (mendB52; session 52's second fabric fact,
        # off with the Cluster's nics_as_wired)
        if cluster.nics_as_wired and nic_line < agg.line_rate_Bps:
            nic_cap = (nic_line * agg.frame_payload_bytes / agg.frame_wire_bytes,
                       f"NIC line rate ({nic_line * 8 / 1e9:g} Gb/s, below the switch's {agg.line_rate_Bps * 8 / 1e9:g})")
            pcie_Bps, pcie_name = min((pcie_Bps, pcie_name), nic_cap)

        def switch(size: float) -> dict:
            return agg.terms(size / k, tree.levels, tree.hop_latency_s, pcie_Bps, tree.trees)

        (node, node_data), sw = self.node_stage(call, call.size_bytes), switch(call.size_bytes)
        pipelined = call.size_bytes > COLLNET_CHUNK_BYTES
        if pipelined:
            chunk_node, chunk_sw = self.node_stage(call, COLLNET_CHUNK_BYTES)[0], switch(COLLNET_CHUNK_BYTES)["time_s"]
            total = max(node, sw["time_s"]) + min(chunk_node, chunk_sw)
        else:
            total = node + sw["time_s"]
        names = {"payload": f"NIC line rate ({agg.line_rate_Bps * 8 / 1e9:g} Gb/s, aggregation frames "
                            f"{agg.frame_payload_bytes:g}/{agg.frame_wire_bytes:g} B payload)",
                 "stream cap": pcie_name,
                 "alu": f"switch aggregation ALU ({agg.aggregation_Bps * 8 / 1e9:g} Gb/s per tree)",
                 "trees": f"switch aggregation shared: {tree.trees} trees on a switch that runs {agg.trees_per_switch} at once"}
        terms = {NVLS if cluster.nvls is not None else NVLINK: node_data, names[sw["binds"]]: sw["stream_s"]}
        binds = binding(node - node_data + sw["fixed_s"], terms)
        return total, {"node_stage_s": node, "switch_s": sw["time_s"], "switch_latency_s": sw["fixed_s"],
                       "tree_levels": tree.levels, "trees_per_switch": tree.trees, "switch_rate_Bps": sw["rate_Bps"],
                       "pipelined": pipelined, "binding_limit": binds}
