"""One platform description: every link of a machine as arrays, built once per scenario machine.

A platform is a few blocks of like vertices (a machine: its NICs, GPUs, NVSwitches, leaves, spine planes), numbered
NICs first. Every vertex but a root has a parent one tier up and `width` parallel links to it each way (ECMP: a
leaf's links to the spines of its plane, the plane's spines standing as one parent vertex). A block's links are
contiguous: child i's up link k is `up + i * width + k`, its down link the same past the block's up links. So a
platform is one parent per vertex, one capacity per link and a small table per block (tier, width, first link,
link latency, switch latency and forwarding), and one rule routes every platform, as array operations over many
flows at once:
  climb from both ends (the lower tier first, both on a tie) until they meet; where a step has width > 1 the flow
  takes choice hash(source, destination, tag) mod width, the same up and down (deterministic ECMP through one spine);
  ends in different trees (two planes, a GPU and a NIC) have no path.
One node's NVLink domain is its GPUs under the node's NVSwitch; the multi-node fabric is NICs under leaves under
spines (network/builders.py). A switch adds its port-to-port latency and, store-and-forward, the packet's
serialisation on the link it arrives on. networkx is only the view (`graph()`, `bisection_Bps`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import networkx as nx
import numpy as np


@dataclass(frozen=True)
class Block:
    """A run of like vertices. Names: `pattern` with {i} the index in the run, {a} = i // per, {b} = i % per."""

    start: int
    count: int
    pattern: str
    kind: str                       # 'nic' | 'gpu' | 'host' | 'switch'
    per: int = 1
    tier: int = 0                   # 0 for endpoints; a parent's tier is above its children's
    width: int = 1                  # parallel links to the parent (ECMP choices)
    up: int = -1                    # first up link (-1: roots, no links)
    link_latency_s: float = 0.0     # of its links to the parent (cable, PHY)
    switch_latency_s: float = 0.0   # port to port (switches)
    store_and_forward: bool = False

    def names(self) -> list[str]:
        return [self.pattern.format(i=i, a=i // self.per, b=i % self.per) for i in range(self.count)]

    @property
    def down(self) -> int:
        return self.up + self.count * self.width


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
class Routes:
    """Flows routed on a platform: one entry per (flow, link) crossing, in flow_idx / link_idx."""

    platform: Platform
    flow_idx: np.ndarray
    link_idx: np.ndarray
    hops: np.ndarray          # switches each flow crosses
    child_block: np.ndarray   # per entry: the block of the link's lower end (its link latency)
    into_block: np.ndarray    # per entry: the block of the vertex the link enters (its switch cost)

    def latency_s(self, packet_bytes: float) -> np.ndarray:
        """Per flow: its links' latency plus, at every switch it enters, the port latency and, store-and-forward,
        packet_bytes / the capacity of the link it arrives on."""
        t, n = self.platform.per_block, len(self.hops)
        switch = t["switch"][self.into_block]
        if t["sf"].any():
            switch = switch + np.where(t["sf"][self.into_block], packet_bytes / self.platform.capacity[self.link_idx], 0.0)
        return (np.bincount(self.flow_idx, weights=t["latency"][self.child_block], minlength=n)
                + np.bincount(self.flow_idx, weights=switch, minlength=n))


@dataclass(frozen=True, eq=False)
class Platform:
    name: str
    blocks: tuple[Block, ...]
    parent: np.ndarray              # vertex one tier up, -1 for a root
    capacity: np.ndarray            # bytes/s per link
    nodes: int = 1
    gpus_per_node: int = 0
    nics_per_node: int = 0
    spine_links: tuple[int, int] = (0, 0)    # [first, end) of the leaf <-> spine links
    nvlink_links: tuple[int, int] = (0, 0)   # [first, end) of the GPU <-> NVSwitch links
    leaves: int = 0
    fabric: object = None                    # the FabricSpec the multi-node fabric was built from (network/builders.py)
    _cache: dict = field(default_factory=dict, repr=False)
    per_block: dict = field(init=False, repr=False)   # the blocks' fields as arrays, and 'block': each vertex's block

    def __post_init__(self):
        b = self.blocks
        table = {"start": [x.start for x in b], "tier": [x.tier for x in b], "width": [x.width for x in b],
                 "up": [x.up for x in b], "down": [x.down for x in b], "latency": [x.link_latency_s for x in b],
                 "switch": [x.switch_latency_s for x in b], "sf": [x.store_and_forward for x in b]}
        t = {k: np.array(v) for k, v in table.items()}
        t["block"] = np.repeat(np.arange(len(b), dtype=np.int16), [x.count for x in b])   # block of every vertex
        object.__setattr__(self, "per_block", t)

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
        return [n for b in self.blocks for n in b.names()]

    def endpoints(self, kind: str) -> list[str]:
        """Names of the endpoints of one kind ('gpu', 'nic', 'host'), in index order."""
        return [n for b in self.blocks if b.kind == kind for n in b.names()]

    @property
    def gpus(self) -> list[str]:
        return self.endpoints("gpu") or self.endpoints("host")

    def vertex(self, name: str) -> int:
        index = self._cache.setdefault("vertex index", {})
        if not index:
            index.update((n, v) for v, n in enumerate(self.names()))
        if name not in index:
            raise ValueError(f"no endpoint {name!r} in platform {self.name!r}")
        return index[name]

    def nic(self, node, j) -> np.ndarray:
        """Vertex (= NIC index) of NIC j of a node."""
        return np.asarray(node) * self.nics_per_node + np.asarray(j)

    def routes(self, src, dst, tag=0) -> Routes:
        """Route flows src[i] -> dst[i] (vertices)."""
        src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        ends = (src, dst, np.broadcast_to(np.asarray(tag, dtype=np.int64), src.shape))
        tier, block = self.per_block["tier"], self.per_block["block"]
        i, a, b = np.arange(len(src)), src, dst
        steps: list[tuple] = []
        while True:
            apart = a != b
            if not apart.all():
                i, a, b = i[apart], a[apart], b[apart]
            if len(i) == 0:
                break
            ba, bb = block[a], block[b]
            ta, tb = tier[ba], tier[bb]
            a, b = (self._step(i, a, ba, ta <= tb, "up", ends, steps),
                    self._step(i, b, bb, tb <= ta, "down", ends, steps))
        empty = np.zeros(0, dtype=np.int64)
        flow_idx, link_idx, child, into = (np.concatenate(x) for x in zip(*steps, strict=True)) if steps else (empty,) * 4
        hops = np.maximum(np.bincount(flow_idx, minlength=len(src)) - 1, 0)
        return Routes(self, flow_idx, link_idx, hops, child, into)

    def _step(self, i, v, blk, moves, direction: str, ends, steps: list) -> np.ndarray:
        """Move the flows i (now at vertices v, of blocks blk) where `moves` one tier up; record the link each takes
        (`direction` 'up': from v, 'down': into v), ECMP-chosen where the step has several."""
        t = self.per_block
        everyone = moves.all()
        fi, fv, fb = (i, v, blk) if everyone else (i[moves], v[moves], blk[moves])
        up = self.parent[fv]
        if np.any(up < 0):
            raise ValueError(f"no path between those endpoints of platform {self.name!r} (different planes or domains)")
        width = t["width"][fb]
        link = t[direction][fb] + (fv - t["start"][fb]) * width
        wide = np.nonzero(width > 1)[0]
        if len(wide):
            src, dst, tags = (x[fi[wide]] for x in ends)
            link[wide] += (_mix(src, dst, tags) % width[wide].astype(np.uint64)).astype(np.int64)
        steps.append((fi, link, fb, t["block"][up] if direction == "up" else fb))
        if everyone:
            return up
        out = v.copy()
        out[moves] = up
        return out

    def path(self, src: str, dst: str, packet_bytes: float) -> tuple[list[int], float]:
        """(link indices, latency s) from one named endpoint to another; remembered per pair."""
        key = (src, dst, packet_bytes)
        if key not in self._cache:
            if src == dst:
                self._cache[key] = ([], 0.0)
            else:
                r = self.routes(np.array([self.vertex(src)]), np.array([self.vertex(dst)]))
                self._cache[key] = ([int(x) for x in r.link_idx], float(r.latency_s(packet_bytes)[0]))
        return self._cache[key]

    def with_link_rate(self, span: tuple[int, int], Bps: float) -> Platform:
        """The same platform with the links in [span) at Bps (a card's own NVLink rate for the chunk DES)."""
        capacity = self.capacity.copy()
        capacity[span[0]:span[1]] = Bps
        return replace(self, capacity=capacity, _cache={})

    def graph(self) -> nx.DiGraph:
        """The networkx view: one node per endpoint and switch (the spines of a plane one by one), an edge per link
        with bandwidth_Bps and latency_s."""
        names, g = self.names(), nx.DiGraph()
        for b in self.blocks:
            if b.up < 0:
                continue
            for i in range(b.count):
                v = b.start + i
                for k in range(b.width):
                    top = names[self.parent[v]] + (str(k) if b.width > 1 else "")
                    up, down = b.up + i * b.width + k, b.down + i * b.width + k
                    g.add_edge(names[v], top, bandwidth_Bps=float(self.capacity[up]), latency_s=b.link_latency_s)
                    g.add_edge(top, names[v], bandwidth_Bps=float(self.capacity[down]), latency_s=b.link_latency_s)
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
