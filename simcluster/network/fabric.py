"""Multi-node fabrics: leaf-spine (fat-tree) with an oversubscription ratio, and rail-optimized.

A Fabric is arrays, not a graph, so 16,384 NICs build and route in milliseconds:
  - every NIC `n{node}.nic{j}` has an uplink to its leaf and a downlink from it (nic_Bps each);
  - leaf-spine: NICs fill leaves in order, `down_ports` per leaf;
    rail-optimized: NIC j of every node sits on a leaf of rail j (one leaf group per NIC index);
  - every leaf has one uplink to and one downlink from each of `spines` spines; a leaf's uplink
    capacity is its downlink capacity / oversubscription, split evenly over the spines;
  - planes > 1 repeats the leaf/spine layers: NIC j is in plane j % planes.
Routing is up/down and deterministic: same leaf -> NIC, leaf, NIC; otherwise through the spine
picked by ECMP, a fixed hash of (source NIC, destination NIC, flow tag). `graph()` gives the
networkx view used for connectivity and bisection checks. See docs/models/fabric.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np

KINDS = ("leaf-spine", "rail-optimized")


@dataclass(frozen=True)
class FabricSpec:
    nodes: int
    nics_per_node: int
    nic_Bps: float
    kind: str = "rail-optimized"
    down_ports: int = 32            # NIC-facing ports per leaf
    spines: int = 16                # spines per plane
    oversubscription: float = 1.0   # leaf down capacity : up capacity
    planes: int = 1
    link_latency_s: float = 0.0     # per link (cable, PHY)
    switch_latency_s: float = 0.0   # port to port
    forwarding: str = "cut-through"

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"fabric kind must be one of {KINDS}, got {self.kind!r}")
        if self.oversubscription < 1.0:
            raise ValueError("oversubscription must be >= 1 (1 means non-blocking)")


def _mix(*values: np.ndarray) -> np.ndarray:
    """A fixed integer hash (splitmix64 finaliser) of several int arrays: deterministic ECMP."""
    h = np.zeros(np.broadcast(*values).shape, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for v in values:
            h = (h ^ np.asarray(v, dtype=np.uint64)) * np.uint64(0x9E3779B97F4A7C15)
            h ^= h >> np.uint64(31)
            h *= np.uint64(0xBF58476D1CE4E5B9)
            h ^= h >> np.uint64(29)
    return h


class Fabric:
    def __init__(self, spec: FabricSpec):
        self.spec = s = spec
        self.nics = s.nodes * s.nics_per_node
        nic = np.arange(self.nics)
        node, j = nic // s.nics_per_node, nic % s.nics_per_node
        plane = j % s.planes
        if s.kind == "rail-optimized":
            leaves_per_rail = -(-s.nodes // s.down_ports)
            self.leaf_of_nic = j * leaves_per_rail + node // s.down_ports
        else:
            per_plane = -(-self.nics // s.planes)
            rank_in_plane = nic // s.planes
            self.leaf_of_nic = plane * (-(-per_plane // s.down_ports)) + rank_in_plane // s.down_ports
        self.leaves = int(self.leaf_of_nic.max()) + 1
        self.plane_of_leaf = np.zeros(self.leaves, dtype=np.int64)
        self.plane_of_leaf[self.leaf_of_nic] = plane
        down_count = np.bincount(self.leaf_of_nic, minlength=self.leaves)
        # link layout: [nic up | nic down | leaf->spine | spine->leaf]
        self.nic_up0, self.nic_down0 = 0, self.nics
        self.leaf_up0 = 2 * self.nics
        self.leaf_down0 = self.leaf_up0 + self.leaves * s.spines
        uplink = down_count * s.nic_Bps / s.oversubscription / s.spines
        self.capacity = np.concatenate([np.full(2 * self.nics, s.nic_Bps), np.repeat(uplink, s.spines),
                                        np.repeat(uplink, s.spines)])

    @property
    def links(self) -> int:
        return len(self.capacity)

    def nic_index(self, node: np.ndarray, j: np.ndarray) -> np.ndarray:
        return np.asarray(node) * self.spec.nics_per_node + np.asarray(j)

    def routes(self, src: np.ndarray, dst: np.ndarray, tag: np.ndarray | int = 0):
        """Flow-link incidence for flows src[i] -> dst[i] (NIC indices): (flow_idx, link_idx, hops).

        hops: switches crossed (1 inside a leaf, 3 through a spine)."""
        src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        n = len(src)
        s = self.spec
        ls, ld = self.leaf_of_nic[src], self.leaf_of_nic[dst]
        local = ls == ld
        if np.any(self.plane_of_leaf[ls] != self.plane_of_leaf[ld]):
            raise ValueError("a flow between NICs of different planes has no path")
        spine = (_mix(src, dst, np.broadcast_to(tag, src.shape)) % np.uint64(s.spines)).astype(np.int64)
        flows = [np.arange(n), np.arange(n)]
        links = [self.nic_up0 + src, self.nic_down0 + dst]
        far = np.nonzero(~local)[0]
        flows += [far, far]
        links += [self.leaf_up0 + ls[far] * s.spines + spine[far], self.leaf_down0 + ld[far] * s.spines + spine[far]]
        hops = np.where(local, 1, 3)
        return np.concatenate(flows), np.concatenate(links), hops

    def path_latency_s(self, hops: np.ndarray, packet_bytes: float) -> np.ndarray:
        """Per flow: links * link latency + switches * (port latency [+ packet serialisation if SF])."""
        s = self.spec
        per_switch = s.switch_latency_s + (packet_bytes / s.nic_Bps if s.forwarding == "store-and-forward" else 0.0)
        return (hops + 1) * s.link_latency_s + hops * per_switch

    def graph(self) -> nx.DiGraph:
        """The networkx view (NICs, leaves, spines) with bandwidth_Bps on every edge."""
        s, g = self.spec, nx.DiGraph()
        for nic in range(self.nics):
            leaf = f"leaf{self.leaf_of_nic[nic]}"
            name = f"n{nic // s.nics_per_node}.nic{nic % s.nics_per_node}"
            g.add_edge(name, leaf, bandwidth_Bps=self.capacity[self.nic_up0 + nic])
            g.add_edge(leaf, name, bandwidth_Bps=self.capacity[self.nic_down0 + nic])
        for leaf in range(self.leaves):
            plane = self.plane_of_leaf[leaf]
            for sp in range(s.spines):
                spine = f"p{plane}.spine{sp}"
                g.add_edge(f"leaf{leaf}", spine, bandwidth_Bps=self.capacity[self.leaf_up0 + leaf * s.spines + sp])
                g.add_edge(spine, f"leaf{leaf}", bandwidth_Bps=self.capacity[self.leaf_down0 + leaf * s.spines + sp])
        return g


def bisection_Bps(fabric: Fabric) -> float:
    """Max flow from the first half of the nodes' NICs to the second half (networkx; small fabrics)."""
    g = fabric.graph()
    s = fabric.spec
    half = s.nodes // 2
    for node in range(s.nodes):
        side = "SRC" if node < half else "DST"
        for j in range(s.nics_per_node):
            name = f"n{node}.nic{j}"
            if side == "SRC":
                g.add_edge("SRC", name, capacity=float("inf"))
            else:
                g.add_edge(name, "DST", capacity=float("inf"))
    for _, _, data in g.edges(data=True):
        if "bandwidth_Bps" in data:
            data["capacity"] = data["bandwidth_Bps"]
    return float(nx.maximum_flow_value(g, "SRC", "DST"))
