"""Platform builders: a scenario machine (NVLink domains + a multi-node fabric), one node, hosts on one switch, a chain.

The multi-node fabric (docs/models/fabric.md):
  - every NIC `n{node}.nic{j}` has an uplink to its leaf and a downlink from it (nic_Bps each);
  - leaf-spine: NICs fill leaves in order, `down_ports` per leaf;
    rail-optimized: NIC j of every node sits on a leaf of rail j (one leaf group per NIC index);
  - every leaf has one uplink to and one downlink from each of `spines` spines; a leaf's uplink capacity is its
    downlink capacity / oversubscription, split evenly over the spines;
  - planes > 1 repeats the leaf/spine layers: NIC j is in plane j % planes.
Inside a node every GPU `n{node}.gpu{g}` has one NVLink port each way to the node's NVSwitch.
Link layout: [NIC up | NIC down | leaf -> spine | spine -> leaf | GPU up | GPU down]; vertices: NICs, GPUs,
NVSwitches, leaves, spine planes. Everything is arrays, so 16,384 GPUs build in about a millisecond.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simcluster.network.platform import Block, Platform

KINDS = ("leaf-spine", "rail-optimized")
FORWARDING = ("cut-through", "store-and-forward")


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
        if self.forwarding not in FORWARDING:
            raise ValueError(f"forwarding must be one of {FORWARDING}")


def leaf_of_nic(spec: FabricSpec) -> np.ndarray:
    """The leaf each NIC hangs from."""
    s = spec
    nic = np.arange(s.nodes * s.nics_per_node)
    node, j = nic // s.nics_per_node, nic % s.nics_per_node
    if s.kind == "rail-optimized":
        return j * -(-s.nodes // s.down_ports) + node // s.down_ports
    per_plane = -(-len(nic) // s.planes)
    return (j % s.planes) * (-(-per_plane // s.down_ports)) + (nic // s.planes) // s.down_ports


class _Layout:
    """Vertex and link arrays filled block by block (every block one kind of vertex and its up/down links)."""

    def __init__(self, vertices: int):
        self.parent = np.full(vertices, -1, dtype=np.int64)
        self.tier = np.zeros(vertices, dtype=np.int64)
        self.width = np.ones(vertices, dtype=np.int64)
        self.up0 = np.full(vertices, -1, dtype=np.int64)
        self.down0 = np.full(vertices, -1, dtype=np.int64)
        self.switch_latency_s = np.zeros(vertices)
        self.store_and_forward = np.zeros(vertices, dtype=bool)
        self.capacity, self.latency, self.link_to = [], [], []
        self.blocks: list[Block] = []
        self.links = 0

    def block(self, count: int, pattern: str, kind: str, per: int = 1, tier=0, latency_s: float = 0.0,
              forwarding: str = "cut-through") -> np.ndarray:
        """`count` vertices at `tier` (0 endpoints, higher above; one value or one per vertex)."""
        start = self.blocks[-1].start + self.blocks[-1].count if self.blocks else 0
        self.blocks.append(Block(start, count, pattern, kind, per))
        self.tier[start:start + count] = tier
        if kind == "switch":
            self.switch_latency_s[start:start + count] = latency_s
            self.store_and_forward[start:start + count] = forwarding == "store-and-forward"
        return np.arange(start, start + count)

    def attach(self, children, parents, up_Bps, latency_s: float, width: int = 1, down_Bps=None) -> int:
        """Give every child (vertex array) `width` duplex links to its parent; returns the first up link. Up links
        of all children first, then their down links; `up_Bps` / `down_Bps` per child (or one value)."""
        children, parents = np.asarray(children, dtype=np.int64), np.asarray(parents, dtype=np.int64)
        n = len(children) * width
        first = self.links
        self.parent[children] = parents
        self.width[children] = width
        self.up0[children] = first + np.arange(len(children)) * width
        self.down0[children] = first + n + np.arange(len(children)) * width
        up = _per_link(up_Bps, len(children), width)
        self.capacity += [up, up if down_Bps is None else _per_link(down_Bps, len(children), width)]
        self.latency.append(np.full(2 * n, latency_s))
        self.link_to += [np.repeat(parents, width), np.repeat(children, width)]
        self.links += 2 * n
        return first

    def platform(self, name: str, **shape) -> Platform:
        return Platform(name, tuple(self.blocks), self.parent, self.tier, self.width, self.up0, self.down0,
                        self.switch_latency_s, self.store_and_forward, _cat(self.capacity, float), _cat(self.latency, float),
                        _cat(self.link_to, np.int64), **shape)


def _per_link(Bps, children: int, width: int) -> np.ndarray:
    """A rate per link: one value for all, or one per child repeated over its `width` links."""
    if np.ndim(Bps) == 0:
        return np.full(children * width, float(Bps))
    return np.repeat(np.asarray(Bps, dtype=float), width)


def _cat(parts: list, dtype) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)


def machine_platform(nodes: int, gpus_per_node: int, nvlink_Bps: float, fabric: FabricSpec | None = None,
                     nvlink_latency_s: float = 0.0) -> Platform:
    """A scenario machine: every node's NVLink domain and, for more than one node, the multi-node fabric."""
    nics = fabric.nodes * fabric.nics_per_node if fabric else 0
    leaf = leaf_of_nic(fabric) if fabric else np.zeros(0, dtype=np.int64)
    leaves = int(leaf.max()) + 1 if nics else 0
    planes = fabric.planes if fabric else 0
    lay = _Layout(nics + nodes * gpus_per_node + nodes + leaves + planes)
    nic_v = lay.block(nics, "n{a}.nic{b}", "nic", fabric.nics_per_node if fabric else 1)
    gpu_v = lay.block(nodes * gpus_per_node, "n{a}.gpu{b}", "gpu", gpus_per_node)
    nvswitch_v = lay.block(nodes, "n{i}.nvswitch", "switch", tier=1)
    shape = {"nodes": nodes, "gpus_per_node": gpus_per_node}
    if fabric:
        f = fabric
        leaf_v = lay.block(leaves, "leaf{i}", "switch", tier=1, latency_s=f.switch_latency_s, forwarding=f.forwarding)
        spine_v = lay.block(planes, "p{i}.spine", "switch", tier=2, latency_s=f.switch_latency_s, forwarding=f.forwarding)
        lay.attach(nic_v, leaf_v[0] + leaf, f.nic_Bps, f.link_latency_s)
        plane_of_leaf = np.zeros(leaves, dtype=np.int64)
        plane_of_leaf[leaf] = (np.arange(nics) % f.nics_per_node) % f.planes
        uplink = np.bincount(leaf, minlength=leaves) * f.nic_Bps / f.oversubscription / f.spines
        first = lay.attach(leaf_v, spine_v[0] + plane_of_leaf, uplink, f.link_latency_s, width=f.spines)
        shape.update(nics_per_node=f.nics_per_node, spine_links=(first, lay.links), leaves=leaves)
    first = lay.links
    lay.attach(gpu_v, nvswitch_v[0] + np.arange(nodes * gpus_per_node) // gpus_per_node, nvlink_Bps, nvlink_latency_s)
    name = f"{nodes} x {gpus_per_node} GPUs" + (f", {fabric.kind}" if fabric else "")
    return lay.platform(name, nvlink_links=(first, lay.links), **shape)


def single_node(gpus: int, nvlink_Bps: float, nvlink_latency_s: float = 0.0) -> Platform:
    """`gpus` GPUs on one NVSwitch: every GPU has one port of nvlink_Bps each way."""
    return machine_platform(1, gpus, nvlink_Bps, None, nvlink_latency_s)


def single_switch(hosts: int, link_Bps: float, link_latency_s: float = 0.0, switch_latency_s: float = 0.0,
                  forwarding: str = "cut-through") -> Platform:
    """`hosts` endpoints `h{i}` on one switch; each has one duplex link of link_Bps."""
    _forwarding(forwarding)
    lay = _Layout(hosts + 1)
    host_v = lay.block(hosts, "h{i}", "host")
    sw = lay.block(1, "sw0", "switch", tier=1, latency_s=switch_latency_s, forwarding=forwarding)
    lay.attach(host_v, np.full(hosts, sw[0]), link_Bps, link_latency_s)
    return lay.platform(f"single-switch x{hosts}", nodes=hosts)


def chain(hops: int, link_Bps: float, link_latency_s: float = 0.0, switch_latency_s: float = 0.0,
          forwarding: str = "cut-through") -> Platform:
    """Two endpoints `a`, `b` joined through hops-1 switches in a line (`hops` links): for latency formulas."""
    _forwarding(forwarding)
    lay = _Layout(hops + 1)
    a = lay.block(1, "a", "host")
    sw = lay.block(hops - 1, "sw{i}", "switch", tier=np.arange(hops - 1, 0, -1), latency_s=switch_latency_s, forwarding=forwarding)
    b = lay.block(1, "b", "host", tier=1 if hops == 1 else 0)   # one link: b is a's parent
    # as a tree rooted at the first switch (at b with no switch): a and sw1 hang from sw0, sw2 from sw1, ..., b last
    line = [*sw, b[0]]
    lay.attach(a, [line[0]], link_Bps, link_latency_s)
    if len(line) > 1:
        lay.attach(line[1:], line[:-1], link_Bps, link_latency_s)
    return lay.platform(f"chain h={hops}", nodes=2)


def _forwarding(forwarding: str) -> None:
    if forwarding not in FORWARDING:
        raise ValueError(f"forwarding must be one of {FORWARDING}")
