"""One ring step over the fabric, solved max-min: NIC j of each node sends to NIC j of the next node of its ring, every
rail at once, alone or beside other jobs' rings (concurrent jobs, the LLM's parallel groups). The rate of each ring's
slowest hop per rail, the spine links it shares, the host cores its transport takes and its longest path's latency are
what the multi-node algorithms (collectives/fabric.py) price a call with.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from simcluster.network.sharing import max_min_rates

if TYPE_CHECKING:
    from simcluster.collectives.cluster import Cluster

PACKET_BYTES = 4096.0  # the packet a store-and-forward switch waits for, on the network hop's latency


@dataclass(frozen=True)
class RingFlows:
    """The steady-state solution for one ring hop per (rail, node)."""

    node_rate_Bps: float       # sum over rails of each rail's slowest hop
    flow_rates_Bps: np.ndarray
    ecmp_collisions: int       # leaf<->spine links (up or down) carrying more than one ring flow
    cpu_cores_per_node: float  # host cores the NICs' transport takes at these rates
    max_hops: int
    path_latency_s: float      # the longest ring hop's links and switches (a PACKET_BYTES packet)
    limit: str = ""            # what bounds the slowest ring hop: the NIC, the PCIe path to it, or a fabric link


def ring_flows(cluster: Cluster, tag: int = 0) -> RingFlows:
    """Solve one ring step over every node of the fabric: NIC j of node i sends to NIC j of node i+1,
    every rail at once."""
    return concurrent_ring_flows(cluster, [np.arange(cluster.platform.nodes)], tag)[0]


def concurrent_ring_flows(cluster: Cluster, groups: list[np.ndarray], tag: int = 0, spread: bool = False) -> list[RingFlows]:
    """One ring step for several jobs at once, each a ring over its own nodes (in the given order),
    every rail; all flows share the fabric max-min. One RingFlows per job. `spread`: the counterfactual of ideal
    ECMP (a leaf's up links to the spines pooled into one link of their summed capacity, and its down links likewise,
    as if every flow were spread over all of them), against which the per-flow hash's collisions are measured
    (llm/scaleout.py)."""
    plat, nic = cluster.platform, cluster.nic
    k = plat.nics_per_node
    src_all, dst_all = [], []
    for nodes in groups:
        nodes = np.asarray(nodes)
        nxt = np.roll(nodes, -1)
        src_all.append(plat.nic(np.repeat(nodes, k), np.tile(np.arange(k), len(nodes))))
        dst_all.append(plat.nic(np.repeat(nxt, k), np.tile(np.arange(k), len(nodes))))
    src, dst = np.concatenate(src_all), np.concatenate(dst_all)
    bounds = np.cumsum([0] + [len(x) for x in src_all])   # job g's flows are [bounds[g], bounds[g+1])
    routes = plat.routes(src, dst, tag)
    fi, li, hops = routes.flow_idx, routes.link_idx, routes.hops
    nic_Bps, nic_name = cluster.nic_limit
    cap = np.full(len(src), nic_Bps)
    # NIC flows cross fabric links only, which come first in a machine's link layout (network/builders.py)
    fabric_capacity = plat.capacity[:plat.nvlink_links[0]]
    if spread:
        li, fabric_capacity = _pooled_uplinks(plat, li, fabric_capacity)
    rates = max_min_rates(fi, li, fabric_capacity, len(src), caps=cap)
    load = np.bincount(li, weights=rates[fi], minlength=len(fabric_capacity))
    latency = routes.latency_s(PACKET_BYTES)
    out = []
    first, end = plat.spine_links
    spine = (li >= first) & (li < end)
    spine_flow, spine_link = fi[spine], li[spine] - first
    shared = np.bincount(spine_link)  # flows (of any job) per leaf<->spine link
    for g, nodes in enumerate(groups):
        mine = slice(bounds[g], bounds[g + 1])
        per_rail = rates[mine].reshape(len(nodes), k).min(axis=0)
        on_spine = spine_link[(spine_flow >= bounds[g]) & (spine_flow < bounds[g + 1])]
        collisions = int(np.sum(shared[np.unique(on_spine)] > 1))
        node_rate = float(per_rail.sum())
        slowest = bounds[g] + int(np.argmin(rates[mine])) if bounds[g + 1] > bounds[g] else None
        limit = nic_name if slowest is None or rates[slowest] >= nic_Bps * (1 - 1e-9) else \
            _fabric_limit(plat, li[fi == slowest], load, fabric_capacity, collisions)
        out.append(RingFlows(node_rate, rates[mine], collisions, nic.cores_used(node_rate),
                             int(hops[mine].max(initial=0)), float(latency[mine].max(initial=0.0)), limit))
    return out


def _pooled_uplinks(plat, li: np.ndarray, capacity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Link indices and capacities with each leaf's W parallel links to the spines (one bundle per leaf and direction,
    contiguous in the layout) replaced by the bundle's first link at the bundle's summed capacity."""
    first, end = plat.spine_links
    if end <= first or not plat.leaves:
        return li, capacity
    width = (end - first) // (2 * plat.leaves)
    if width <= 1:
        return li, capacity
    on = (li >= first) & (li < end)
    li = li.copy()
    li[on] = first + (li[on] - first) // width * width
    capacity = capacity.copy()
    bundles = first + np.arange(0, end - first, width)
    capacity[bundles] = np.add.reduceat(capacity[first:end], np.arange(0, end - first, width))
    return li, capacity


def _fabric_limit(plat, links: np.ndarray, load: np.ndarray, capacity: np.ndarray, collisions: int) -> str:
    """The name of the full link that holds a flow below its NIC's rate."""
    full = links[load[links] >= capacity[links] * (1 - 1e-6)]
    first, end = plat.spine_links
    if len(full) and ((full >= first) & (full < end)).any():
        over = getattr(plat.fabric, "oversubscription", 1.0)
        why = [f"{over:g}:1 oversubscription"] if over > 1 else []
        why += [f"{collisions} links shared by ring flows (ECMP)"] if collisions else []
        return "leaf uplinks" + (f" ({', '.join(why)})" if why else "")
    return "NIC ports shared by several flows"
