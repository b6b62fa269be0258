"""Platform builders: a scenario machine (NVLink domains + a multi-node fabric), one node, hosts on one switch, a chain.

The multi-node fabric (docs/models/fabric.md):
  - every NIC `n{node}.nic{j}` has an uplink to its leaf and a downlink from it (nic_Bps each);
  - leaf-spine: NICs fill leaves in order, `down_ports` per leaf;
    rail-optimized: NIC j of every node sits on a leaf of rail j (one leaf group per NIC index);
  - a leaf's uplink capacity is its ports' capacity (down_ports x the NIC rate, filled or not) / oversubscription,
    split evenly over its uplinks: one to and one from each of `spines` spines, but no more than the leaf has uplink
    ports (down_ports / oversubscription, rounded down, at least 1), so no uplink is slower than a NIC port (unless
    oversubscription > down_ports): spines past that add no path (a flow is pinned to one uplink by ECMP, and an
    uplink thinner than a port would throttle even a flow the fabric has room for);
  - planes > 1 repeats the leaf/spine layers: NIC j is in plane j % planes.
Inside a node every GPU `n{node}.gpu{g}` has one NVLink port each way to the node's NVSwitch.
Link layout: [NIC up | NIC down | leaf -> spine | spine -> leaf | GPU up | GPU down]; vertices: NICs, GPUs,
NVSwitches, leaves, spine planes. Everything is arrays, so 16,384 GPUs build in about a millisecond.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

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
    spine_ports: int | None = None  # ports of a spine (top-tier) switch; None: 2 x down_ports (the leaves' switch)
    tiers: int | None = None        # switch tiers; None: the fewest that hold the machine (tiers_needed)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"fabric kind must be one of {KINDS}, got {self.kind!r}")
        if self.oversubscription < 1.0:
            raise ValueError("oversubscription must be >= 1 (1 means non-blocking)")
        _forwarding(self.forwarding)

    @property
    def spine_radix(self) -> int:
        return self.spine_ports or 2 * self.down_ports

    @property
    def hop_latency_s(self) -> float:
        """One tier up (or down): a link and a switch port."""
        return self.link_latency_s + self.switch_latency_s


def leaf_uplinks(spec: FabricSpec) -> int:
    """Parallel uplinks of each leaf (ECMP width): one per spine, at most the leaf's uplink ports (module docstring)."""
    return max(1, min(spec.spines, int(spec.down_ports // spec.oversubscription)))   # oversubscription > down_ports: one link


def nodes_per_leaf(spec: FabricSpec) -> int:
    """Nodes whose NIC of one rail (NIC index) share a leaf: a rail-optimized leaf holds one rail of down_ports
    nodes; a leaf-spine leaf holds all of its nodes' NICs of its plane, one after another."""
    if spec.kind == "rail-optimized":
        return spec.down_ports
    per_node = -(-spec.nics_per_node // spec.planes)
    return max(1, spec.down_ports // per_node)


def leaves_per_plane(spec: FabricSpec) -> int:
    """Leaves under one plane's spines (the most of any plane)."""
    if spec.kind == "rail-optimized":
        return -(-spec.nics_per_node // spec.planes) * -(-spec.nodes // spec.down_ports)
    per_plane = -(-(spec.nodes * spec.nics_per_node) // spec.planes)
    return -(-per_plane // spec.down_ports)


def _tiers_for(leaves: int, spine_ports: int) -> int:
    """Switch tiers a fat tree needs to join `leaves` leaves: 1 for one leaf; 2 while a spine has a port for every
    leaf; each further tier of spine_ports-port switches (half down, half up) joins spine_ports / 2 times as many."""
    if leaves <= 1:
        return 1
    tiers, held = 2, spine_ports
    while held < leaves:
        held *= max(2, spine_ports // 2)
        tiers += 1
    return tiers


def tiers_needed(spec: FabricSpec) -> int:
    """The fewest switch tiers that hold every leaf of the machine (docs/models/fabric.md, "Tiers and trees")."""
    return _tiers_for(leaves_per_plane(spec), spec.spine_radix)


def fabric_tiers(spec: FabricSpec) -> int:
    """The fabric's switch tiers: as stated, else the fewest that hold it (at least 2: leaves and spines)."""
    return spec.tiers or max(2, tiers_needed(spec))


def aggregation_levels(spec: FabricSpec, nodes: int) -> int:
    """Switch levels of the in-network aggregation tree of one rail over `nodes` nodes placed in order: 1 if they
    share a leaf, 2 if their leaves meet at a spine, one more per fat-tree tier above (_tiers_for)."""
    return _tiers_for(-(-nodes // nodes_per_leaf(spec)), spec.spine_radix)


def nodes_within_levels(spec: FabricSpec, levels: int) -> int:
    """The most nodes (placed in order) whose aggregation tree fits `levels` switch levels."""
    leaves = 1 if levels <= 1 else spec.spine_radix * max(2, spec.spine_radix // 2) ** (levels - 2)
    return nodes_per_leaf(spec) * leaves


def trees_at_busiest_switch(spec: FabricSpec, nodes: int, jobs: int = 1) -> int:
    """Aggregation trees that need one switch at once: one tree per rail (NIC index) of each job. A leaf-spine leaf
    carries every rail of its nodes' plane; a rail-optimized leaf one; above the leaves the trees of a plane are
    spread over its spines (the ones a leaf has uplinks to)."""
    rails = -(-spec.nics_per_node // spec.planes)
    leaf = rails if spec.kind == "leaf-spine" else 1
    if aggregation_levels(spec, nodes) == 1:
        return leaf
    return max(leaf, -(-rails * jobs // leaf_uplinks(spec)))


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
    """A platform's parent and capacity arrays, allocated once at their final size, and its blocks, filled in turn."""

    def __init__(self, vertices: int, links: int):
        self.parent = np.full(vertices, -1, dtype=np.int32)
        self.capacity = np.empty(links)
        self.blocks: list[Block] = []
        self.links = 0

    def block(self, count: int, pattern: str, kind: str, per: int = 1, tier: int = 0, latency_s: float = 0.0,
              forwarding: str = "cut-through") -> int:
        """A block of `count` vertices at `tier` (0 endpoints, higher above); switches with their port latency and
        forwarding. Returns its index."""
        start = self.blocks[-1].start + self.blocks[-1].count if self.blocks else 0
        self.blocks.append(Block(start, count, pattern, kind, per, tier, switch_latency_s=latency_s,
                                 store_and_forward=forwarding == "store-and-forward"))
        return len(self.blocks) - 1

    def first(self, block: int) -> int:
        return self.blocks[block].start

    def attach(self, block: int, parents, Bps, latency_s: float, width: int = 1) -> int:
        """Give every vertex of a block `width` duplex links of Bps (one value, or one per vertex) to its parent:
        the up links of all of them, then their down links. Returns the first up link."""
        b = self.blocks[block]
        n = b.count * width
        first = self.links
        self.parent[b.start:b.start + b.count] = parents
        self.capacity[first:first + n] = Bps if np.ndim(Bps) == 0 else np.repeat(Bps, width)
        self.capacity[first + n:first + 2 * n] = self.capacity[first:first + n]
        self.blocks[block] = replace(b, width=width, up=first, link_latency_s=latency_s)
        self.links += 2 * n
        return first

    def platform(self, name: str, **shape) -> Platform:
        return Platform(name, tuple(self.blocks), self.parent, self.capacity, **shape)


def machine_platform(nodes: int, gpus_per_node: int, nvlink_Bps: float, fabric: FabricSpec | None = None,
                     nvlink_latency_s: float = 0.0) -> Platform:
    """A scenario machine: every node's NVLink domain and, for more than one node, the multi-node fabric."""
    nics = fabric.nodes * fabric.nics_per_node if fabric else 0
    leaf = leaf_of_nic(fabric) if fabric else np.zeros(0, dtype=np.int64)
    leaves = int(leaf.max()) + 1 if nics else 0
    planes = fabric.planes if fabric else 0
    gpus = nodes * gpus_per_node
    width = leaf_uplinks(fabric) if fabric else 0
    lay = _Layout(nics + gpus + nodes + leaves + planes, 2 * (nics + leaves * width + gpus))
    nic_b = lay.block(nics, "n{a}.nic{b}", "nic", fabric.nics_per_node if fabric else 1)
    gpu_b = lay.block(gpus, "n{a}.gpu{b}", "gpu", gpus_per_node)
    nvswitch_b = lay.block(nodes, "n{i}.nvswitch", "switch", tier=1)
    shape = {"nodes": nodes, "gpus_per_node": gpus_per_node}
    if fabric:
        f = fabric
        leaf_b = lay.block(leaves, "leaf{i}", "switch", tier=1, latency_s=f.switch_latency_s, forwarding=f.forwarding)
        spine_b = lay.block(planes, "p{i}.spine", "switch", tier=2, latency_s=f.switch_latency_s, forwarding=f.forwarding)
        lay.attach(nic_b, lay.first(leaf_b) + leaf, f.nic_Bps, f.link_latency_s)
        plane_of_leaf = np.zeros(leaves, dtype=np.int64)
        plane_of_leaf[leaf] = (np.arange(nics) % f.nics_per_node) % f.planes
        uplink = f.down_ports * f.nic_Bps / f.oversubscription / width   # the leaf's ports, filled or not
        first = lay.attach(leaf_b, lay.first(spine_b) + plane_of_leaf, uplink, f.link_latency_s, width=width)
        shape.update(nics_per_node=f.nics_per_node, spine_links=(first, lay.links), leaves=leaves, fabric=f)
    first = lay.links
    lay.attach(gpu_b, lay.first(nvswitch_b) + np.arange(gpus) // gpus_per_node, nvlink_Bps, nvlink_latency_s)
    name = f"{nodes} x {gpus_per_node} GPUs" + (f", {fabric.kind}" if fabric else "")
    return lay.platform(name, nvlink_links=(first, lay.links), **shape)


def single_node(gpus: int, nvlink_Bps: float, nvlink_latency_s: float = 0.0) -> Platform:
    """`gpus` GPUs on one NVSwitch: every GPU has one port of nvlink_Bps each way."""
    return machine_platform(1, gpus, nvlink_Bps, None, nvlink_latency_s)


def single_switch(hosts: int, link_Bps: float, link_latency_s: float = 0.0, switch_latency_s: float = 0.0,
                  forwarding: str = "cut-through") -> Platform:
    """`hosts` endpoints `h{i}` on one switch; each has one duplex link of link_Bps."""
    _forwarding(forwarding)
    lay = _Layout(hosts + 1, 2 * hosts)
    host_b = lay.block(hosts, "h{i}", "host")
    switch_b = lay.block(1, "sw0", "switch", tier=1, latency_s=switch_latency_s, forwarding=forwarding)
    lay.attach(host_b, lay.first(switch_b), link_Bps, link_latency_s)
    return lay.platform(f"single-switch x{hosts}", nodes=hosts)


def chain(hops: int, link_Bps: float, link_latency_s: float = 0.0, switch_latency_s: float = 0.0,
          forwarding: str = "cut-through") -> Platform:
    """Two endpoints `a`, `b` joined through hops-1 switches in a line (`hops` links): for latency formulas.
    As a tree: a hangs from the first switch, every further switch from the one before it, b from the last (with
    no switch, b is a's parent)."""
    _forwarding(forwarding)
    lay = _Layout(hops + 1, 2 * hops)
    a = lay.block(1, "a", "host")
    line = [lay.block(1, f"sw{i}", "switch", tier=hops - 1 - i, latency_s=switch_latency_s, forwarding=forwarding)
            for i in range(hops - 1)]
    line.append(lay.block(1, "b", "host", tier=1 if hops == 1 else 0))
    lay.attach(a, lay.first(line[0]), link_Bps, link_latency_s)
    for below, above in zip(line[1:], line, strict=False):
        lay.attach(below, lay.first(above), link_Bps, link_latency_s)
    return lay.platform(f"chain h={hops}", nodes=2)


def _forwarding(forwarding: str) -> None:
    if forwarding not in FORWARDING:
        raise ValueError(f"forwarding must be one of {FORWARDING}")
