"""One platform description: every link of a machine as arrays, built once per scenario machine.

Vertices are endpoints (NICs, GPUs, hosts) and switches, numbered NICs first. Every vertex but a root has a
parent one tier up and `width` parallel up links to it (ECMP: a leaf's links to the spines of its plane, the
spines standing as one parent vertex); link k of vertex v up is `up0[v] + k`, the same choice down is
`down0[v] + k`. So one rule routes every platform, as array operations over many flows at once:
  climb from both ends (the lower tier first, both on a tie) until they meet; where a step has width > 1 the flow takes choice
  hash(source, destination, tag) mod width, the same up and down (deterministic ECMP through one spine);
  ends in different trees (two planes, a GPU and a NIC) have no path.
One node's NVLink domain is its GPUs under the node's NVSwitch; the multi-node fabric is NICs under leaves
under spines (network/builders.py). A switch adds its port-to-port latency and, store-and-forward, the
packet's serialisation on the link it arrives on. networkx is only the view (`graph()`, `bisection_Bps`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx
import numpy as np


@dataclass(frozen=True)
class Block:
    """A run of vertices named by one pattern: {i} the index in the run, {a} = i // per, {b} = i % per."""

    start: int
    count: int
    pattern: str
    kind: str              # 'nic' | 'gpu' | 'host' | 'switch'
    per: int = 1

    def names(self) -> list[str]:
        return [self.pattern.format(i=i, a=i // self.per, b=i % self.per) for i in range(self.count)]


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


@dataclass(frozen=True, eq=False)
class Platform:
    name: str
    blocks: tuple[Block, ...]
    parent: np.ndarray             # vertex one tier up, -1 for a root
    tier: np.ndarray               # 0 for endpoints, above every child for a switch
    width: np.ndarray              # parallel up links (ECMP choices), 1 for a tree edge
    up0: np.ndarray                # first link vertex -> parent
    down0: np.ndarray              # first link parent -> vertex
    switch_latency_s: np.ndarray   # port to port, per vertex (0 for endpoints)
    store_and_forward: np.ndarray  # bool per vertex
    capacity: np.ndarray           # bytes/s per link
    latency_s: np.ndarray          # per link (cable, PHY)
    link_to: np.ndarray            # the vertex each link enters
    nodes: int = 1
    gpus_per_node: int = 0
    nics_per_node: int = 0
    spine_links: tuple[int, int] = (0, 0)    # [first, end) of the leaf <-> spine links
    nvlink_links: tuple[int, int] = (0, 0)   # [first, end) of the GPU <-> NVSwitch links
    leaves: int = 0
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def links(self) -> int:
        return len(self.capacity)

    @property
    def vertices(self) -> int:
        return len(self.parent)

    @property
    def nics(self) -> int:
        return self.nodes * self.nics_per_node

    def names(self) -> list[str]:
        out = [""] * self.vertices
        for b in self.blocks:
            out[b.start:b.start + b.count] = b.names()
        return out

    def endpoints(self, kind: str) -> list[str]:
        """Names of the endpoints of one kind ('gpu', 'nic', 'host'), in index order."""
        return [n for b in self.blocks if b.kind == kind for n in b.names()]

    @property
    def gpus(self) -> list[str]:
        return self.endpoints("gpu") or self.endpoints("host")

    def vertex(self, name: str) -> int:
        index = self._cache.get(("vertex index",))
        if index is None:
            index = self._cache[("vertex index",)] = {n: v for v, n in enumerate(self.names())}
        if name not in index:
            raise ValueError(f"no endpoint {name!r} in platform {self.name!r}")
        return index[name]

    def nic(self, node, j) -> np.ndarray:
        """Vertex (= NIC index) of NIC j of a node."""
        return np.asarray(node) * self.nics_per_node + np.asarray(j)

    def routes(self, src, dst, tag=0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Flow-link incidence for flows src[i] -> dst[i] (vertices): (flow_idx, link_idx, hops), hops = the
        switches each flow crosses."""
        src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        n = len(src)
        choice = _mix(src, dst, np.broadcast_to(tag, src.shape)) if self.width.max(initial=1) > 1 else None
        a, b = src.copy(), dst.copy()
        flows, links = [], []
        while True:
            apart = np.nonzero(a != b)[0]
            if len(apart) == 0:
                break
            va, vb = a[apart], b[apart]
            ta, tb = self.tier[va], self.tier[vb]
            for side, v, moves in ((a, va, ta <= tb), (b, vb, tb <= ta)):
                i, v = apart[moves], v[moves]
                if np.any(self.parent[v] < 0):
                    raise ValueError(f"no path between those endpoints of platform {self.name!r} (different planes or domains)")
                k = 0 if choice is None else (choice[i] % self.width[v].astype(np.uint64)).astype(np.int64)
                flows.append(i)
                links.append((self.up0 if side is a else self.down0)[v] + k)
                side[i] = self.parent[v]
        flow_idx = np.concatenate(flows) if flows else np.zeros(0, dtype=np.int64)
        link_idx = np.concatenate(links) if links else np.zeros(0, dtype=np.int64)
        hops = np.maximum(np.bincount(flow_idx, minlength=n) - 1, 0)
        return flow_idx, link_idx, hops

    def path_latency_s(self, flow_idx: np.ndarray, link_idx: np.ndarray, nflows: int, packet_bytes: float) -> np.ndarray:
        """Per flow: its links' latency plus, at every switch it enters, the port latency and, store-and-forward,
        packet_bytes / the capacity of the link it arrives on."""
        into = self.link_to[link_idx]
        switch = self.switch_latency_s[into] + np.where(self.store_and_forward[into], packet_bytes / self.capacity[link_idx], 0.0)
        return (np.bincount(flow_idx, weights=self.latency_s[link_idx], minlength=nflows)
                + np.bincount(flow_idx, weights=switch, minlength=nflows))

    def path(self, src: str, dst: str, packet_bytes: float) -> tuple[list[int], float]:
        """(link indices, latency s) from one named endpoint to another; remembered per pair."""
        key = (src, dst, packet_bytes)
        if key not in self._cache:
            if src == dst:
                self._cache[key] = ([], 0.0)
            else:
                fi, li, _ = self.routes(np.array([self.vertex(src)]), np.array([self.vertex(dst)]))
                self._cache[key] = ([int(x) for x in li], float(self.path_latency_s(fi, li, 1, packet_bytes)[0]))
        return self._cache[key]

    def with_link_rate(self, span: tuple[int, int], Bps: float) -> Platform:
        """The same platform with the links in [span) at Bps (a card's own NVLink rate for the chunk DES)."""
        capacity = self.capacity.copy()
        capacity[span[0]:span[1]] = Bps
        fields = {f: getattr(self, f) for f in self.__dataclass_fields__ if f != "_cache"}
        return Platform(**{**fields, "capacity": capacity})

    def graph(self) -> nx.DiGraph:
        """The networkx view: one node per endpoint and switch (the spines of a plane one by one), an edge per link
        with bandwidth_Bps and latency_s."""
        names, g = self.names(), nx.DiGraph()
        for v in range(self.vertices):
            p = int(self.parent[v])
            if p < 0:
                continue
            for k in range(int(self.width[v])):
                top = names[p] + (str(k) if self.width[v] > 1 else "")
                up, down = int(self.up0[v]) + k, int(self.down0[v]) + k
                g.add_edge(names[v], top, bandwidth_Bps=float(self.capacity[up]), latency_s=float(self.latency_s[up]))
                g.add_edge(top, names[v], bandwidth_Bps=float(self.capacity[down]), latency_s=float(self.latency_s[down]))
        return g


def bisection_Bps(platform: Platform) -> float:
    """Max flow from the first half of the nodes' NICs to the second half (networkx; small platforms)."""
    g = platform.graph()
    half = platform.nodes // 2
    for node in range(platform.nodes):
        for j in range(platform.nics_per_node):
            name = f"n{node}.nic{j}"
            g.add_edge(*(("SRC", name) if node < half else (name, "DST")), capacity=float("inf"))
    for _, _, data in g.edges(data=True):
        if "bandwidth_Bps" in data:
            data["capacity"] = data["bandwidth_Bps"]
    return float(nx.maximum_flow_value(g, "SRC", "DST"))
