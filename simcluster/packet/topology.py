"""A Platform's fabric and a set of flows, as the ns-3 run needs them (no ns-3 here: plain arrays).

The fabric is read from the Platform itself: its endpoints (NICs, or hosts), the leaves they hang from and, where the
leaves have up links, the spines (a plane vertex with W parallel links from each leaf stands for W spines, spine k
taking every leaf's k-th up link). Every Platform link becomes one duplex link at its capacity. Latency: a link's own
latency plus the port latency of the switch it enters; a host's link enters a switch one way only, so it carries
half the leaf's port latency each way, and every path gets the Platform's (switches + 1) link latencies + switches
port latencies.

Per-flow ECMP, the same on both sides: the flow model pins a flow to one leaf up link by its hash (platform.py); here
the flow's destination address names that link. Host h answers to W addresses A(h, k) = 10.(k+1).h_hi.h_lo, one
per spine; a leaf sends 10.(k+1)/16 up its k-th link, a spine routes each A(h, k) down to h's leaf, a leaf routes
its own hosts' addresses down. A flow from s to d whose Platform route takes up link k goes from A(s, k) to A(d, k),
so its data and its ACKs cross spine k, both ways pinned as the hash pins them (static routes per destination
address: ns-3's own ECMP, RandomEcmpRouting, picks a path per packet).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from simcluster.errors import SimclusterError
from simcluster.network.platform import Platform

MARK_S = 8e-6   # the ECN threshold K of a port: the bytes it sends in 8 us (about one base RTT), in packets


@dataclass
class Network:
    """One ns-3 run's input: nodes (hosts first, then leaves, then spines), links, addresses, routes, flows."""

    nodes: int
    hosts: int
    mtu: int
    queue_packets: int
    link_a: list = field(default_factory=list)
    link_b: list = field(default_factory=list)
    link_bps: list = field(default_factory=list)
    link_delay_s: list = field(default_factory=list)
    mark_packets: list = field(default_factory=list)
    addr_node: list = field(default_factory=list)
    addr: list = field(default_factory=list)
    route_node: list = field(default_factory=list)
    route_dest: list = field(default_factory=list)
    route_prefix: list = field(default_factory=list)
    route_link: list = field(default_factory=list)
    flow_src: list = field(default_factory=list)
    flow_dst: list = field(default_factory=list)
    flow_src_addr: list = field(default_factory=list)
    flow_dst_addr: list = field(default_factory=list)
    flow_bytes: list = field(default_factory=list)
    flow_spine: list = field(default_factory=list)   # the up link index k each flow takes (-1: inside one leaf)
    dep_flow: list = field(default_factory=list)
    dep_on: list = field(default_factory=list)


def address(host: int, k: int) -> int:
    """A(h, k): host h's address on spine k's path."""
    return (10 << 24) | ((k + 1) << 16) | (host + 1)


def fabric_blocks(platform: Platform):
    """(endpoint block, leaf block, spine block or None) of a Platform's fabric."""
    ends = [b for b in platform.blocks if b.kind in ("nic", "host") and b.count and b.up >= 0]
    if len(ends) != 1:
        raise SimclusterError(f"platform {platform.name!r}: the packet-level reference needs one block of NICs or hosts with a fabric")
    eb = ends[0]
    block = platform.per_block["block"]
    lb = platform.blocks[int(block[platform.parent[eb.start]])]
    if lb.kind != "switch" or eb.width != 1:
        raise SimclusterError(f"platform {platform.name!r}: endpoints must hang from switches by one link each")
    sb = None
    if lb.up >= 0:
        sb = platform.blocks[int(block[platform.parent[lb.start]])]
        if sb.up >= 0:
            raise SimclusterError(f"platform {platform.name!r}: more than two switch tiers")
    return eb, lb, sb


def network(platform: Platform, src, dst, nbytes, deps=(), mtu: int = 9000, queue_packets: int = 4000) -> Network:
    """The ns-3 input for flows src[i] -> dst[i] (Platform vertices) of nbytes[i] bytes on the platform's fabric;
    deps: (flow, flow it waits for) pairs."""
    eb, lb, sb = fabric_blocks(platform)
    cap, hosts, leaves = platform.capacity, eb.count, lb.count
    width = lb.width if sb is not None else 0
    spines = sb.count * width if sb is not None else 0
    net = Network(hosts + leaves + spines, hosts, mtu, queue_packets)
    host_leaf = platform.parent[eb.start:eb.start + hosts] - lb.start
    leaf_plane = platform.parent[lb.start:lb.start + leaves] - sb.start if sb is not None else np.zeros(leaves, dtype=int)

    def link(a, b, up_link, down_link, latency_s):
        if abs(cap[up_link] - cap[down_link]) > 1e-9 * cap[up_link]:
            raise SimclusterError(f"platform {platform.name!r}: link {up_link} is not the same speed both ways")
        net.link_a.append(int(a))
        net.link_b.append(int(b))
        net.link_bps.append(float(cap[up_link]) * 8)
        net.link_delay_s.append(float(latency_s))
        net.mark_packets.append(max(4, int(np.ceil(cap[up_link] * MARK_S / mtu))))
        return len(net.link_a) - 1

    host_link = [link(h, hosts + host_leaf[h], eb.up + h, eb.down + h, eb.link_latency_s + lb.switch_latency_s / 2)
                 for h in range(hosts)]
    up_link = {}
    if sb is not None:
        for j in range(leaves):
            for k in range(width):
                spine = hosts + leaves + leaf_plane[j] * width + k
                up_link[j, k] = link(hosts + j, spine, lb.up + j * width + k, lb.down + j * width + k,
                                     lb.link_latency_s + (lb.switch_latency_s + sb.switch_latency_s) / 2)
    for h in range(hosts):
        for k in range(max(width, 1)):
            net.addr_node.append(h)
            net.addr.append(address(h, k))
        _route(net, h, 0, 0, host_link[h])
        for k in range(max(width, 1)):
            _route(net, hosts + host_leaf[h], address(h, k), 32, host_link[h])
            if sb is not None:
                _route(net, hosts + leaves + leaf_plane[host_leaf[h]] * width + k, address(h, k), 32, up_link[host_leaf[h], k])
    for j in range(leaves):
        for k in range(width):
            _route(net, hosts + j, (10 << 24) | ((k + 1) << 16), 16, up_link[j, k])

    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    if np.any((src < eb.start) | (src >= eb.start + hosts) | (dst < eb.start) | (dst >= eb.start + hosts)):
        raise SimclusterError("the packet-level reference runs flows between the fabric's endpoints only")
    k = flow_spines(platform, src, dst)
    for i in range(len(src)):
        s, d = int(src[i] - eb.start), int(dst[i] - eb.start)
        net.flow_src.append(s)
        net.flow_dst.append(d)
        net.flow_src_addr.append(address(s, max(k[i], 0)))
        net.flow_dst_addr.append(address(d, max(k[i], 0)))
        net.flow_bytes.append(float(np.broadcast_to(nbytes, src.shape)[i]))
        net.flow_spine.append(int(k[i]))
    for flow, on in deps:
        net.dep_flow.append(int(flow))
        net.dep_on.append(int(on))
    return net


def flow_spines(platform: Platform, src, dst) -> np.ndarray:
    """The leaf up link k each flow's Platform route takes (its per-flow ECMP choice; -1 inside one leaf)."""
    _, lb, sb = fabric_blocks(platform)
    out = np.full(len(src), -1, dtype=np.int64)
    if sb is None or len(src) == 0:
        return out
    r = platform.routes(np.asarray(src), np.asarray(dst))
    up = (r.link_idx >= lb.up) & (r.link_idx < lb.down)
    out[r.flow_idx[up]] = (r.link_idx[up] - lb.up) % lb.width
    return out


def _route(net: Network, node: int, dest: int, prefix: int, link: int) -> None:
    net.route_node.append(int(node))
    net.route_dest.append(int(dest))
    net.route_prefix.append(int(prefix))
    net.route_link.append(int(link))
