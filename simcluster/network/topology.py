"""Topologies as networkx DiGraphs: nodes are GPUs, NICs and switches; edges are directed links.

Edge attributes: bandwidth_Bps, latency_s (propagation + PHY). Node attributes: kind ('gpu',
'switch'), and for switches forwarding ('cut-through' | 'store-and-forward') and latency_s (port
to port). Builders here: one node's NVLink/NVSwitch domain, and hosts on a single switch.
Routing is deterministic: the shortest path by hop count, ties broken by node names.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

FORWARDING = ("cut-through", "store-and-forward")


@dataclass(frozen=True)
class Link:
    index: int
    src: str
    dst: str
    bandwidth_Bps: float
    latency_s: float


class Topology:
    """A directed graph of links with an index per link (for the sharing solver)."""

    def __init__(self, graph: nx.DiGraph, name: str = ""):
        self.graph, self.name = graph, name
        self.links: list[Link] = []
        self._link_of: dict[tuple[str, str], int] = {}
        for src, dst in sorted(graph.edges()):
            attrs = graph.edges[src, dst]
            index = len(self.links)
            self.links.append(Link(index, src, dst, attrs["bandwidth_Bps"], attrs.get("latency_s", 0.0)))
            self._link_of[(src, dst)] = index
        self._paths: dict[tuple[str, str], list[int]] = {}

    @property
    def gpus(self) -> list[str]:
        return sorted((n for n, k in self.graph.nodes(data="kind") if k == "gpu"), key=_natural)

    def path(self, src: str, dst: str) -> list[int]:
        """Link indices from src to dst (deterministic shortest path)."""
        key = (src, dst)
        if key not in self._paths:
            nodes = min(nx.all_shortest_paths(self.graph, src, dst), key=lambda p: [_natural(n) for n in p])
            self._paths[key] = [self._link_of[(a, b)] for a, b in zip(nodes, nodes[1:], strict=False)]
        return self._paths[key]

    def path_latency_s(self, src: str, dst: str, packet_bytes: float) -> float:
        """Propagation plus switch latency along the path; a store-and-forward switch also waits
        for the whole packet (packet_bytes / ingress bandwidth) before forwarding it."""
        total = 0.0
        for index in self.path(src, dst):
            link = self.links[index]
            total += link.latency_s
            node = self.graph.nodes[link.dst]
            if node.get("kind") == "switch":
                total += node.get("latency_s", 0.0)
                if node.get("forwarding") == "store-and-forward":
                    total += packet_bytes / link.bandwidth_Bps
        return total


def _natural(name: str):
    head = name.rstrip("0123456789")
    tail = name[len(head):]
    return (head, int(tail) if tail else -1)


def _duplex(graph: nx.DiGraph, a: str, b: str, bandwidth_Bps: float, latency_s: float) -> None:
    graph.add_edge(a, b, bandwidth_Bps=bandwidth_Bps, latency_s=latency_s)
    graph.add_edge(b, a, bandwidth_Bps=bandwidth_Bps, latency_s=latency_s)


def single_node(gpus: int, nvlink_bandwidth_Bps: float, nvlink_latency_s: float = 0.0,
                node: str = "n0") -> Topology:
    """`gpus` GPUs on one NVSwitch: every GPU has one port of nvlink_bandwidth_Bps each way."""
    graph = nx.DiGraph()
    switch = f"{node}.nvswitch"
    graph.add_node(switch, kind="switch", forwarding="cut-through", latency_s=0.0)
    for g in range(gpus):
        gpu = f"{node}.gpu{g}"
        graph.add_node(gpu, kind="gpu", node=node, local_rank=g)
        _duplex(graph, gpu, switch, nvlink_bandwidth_Bps, nvlink_latency_s)
    return Topology(graph, name=f"single-node x{gpus}")


def single_switch(hosts: int, link_bandwidth_Bps: float, link_latency_s: float = 0.0,
                  switch_latency_s: float = 0.0, forwarding: str = "cut-through") -> Topology:
    """`hosts` endpoints on one switch; each has one duplex link of link_bandwidth_Bps."""
    if forwarding not in FORWARDING:
        raise ValueError(f"forwarding must be one of {FORWARDING}")
    graph = nx.DiGraph()
    graph.add_node("sw0", kind="switch", forwarding=forwarding, latency_s=switch_latency_s)
    for h in range(hosts):
        graph.add_node(f"h{h}", kind="gpu", node=f"h{h}", local_rank=0)
        _duplex(graph, f"h{h}", "sw0", link_bandwidth_Bps, link_latency_s)
    return Topology(graph, name=f"single-switch x{hosts}")


def chain(hops: int, link_bandwidth_Bps: float, link_latency_s: float = 0.0,
          switch_latency_s: float = 0.0, forwarding: str = "cut-through") -> Topology:
    """Two endpoints joined through hops-1 switches in a line (h links): for latency formulas."""
    graph = nx.DiGraph()
    names = ["a"] + [f"sw{i}" for i in range(hops - 1)] + ["b"]
    for name in names:
        if name.startswith("sw"):
            graph.add_node(name, kind="switch", forwarding=forwarding, latency_s=switch_latency_s)
        else:
            graph.add_node(name, kind="gpu", node=name, local_rank=0)
    for a, b in zip(names, names[1:], strict=False):
        _duplex(graph, a, b, link_bandwidth_Bps, link_latency_s)
    return Topology(graph, name=f"chain h={hops}")
