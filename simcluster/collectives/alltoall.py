"""What an alltoall across nodes asks of the fabric: NCCL's point-to-point traffic on the machine's routes.

NCCL runs alltoall as n - 1 grouped sends and receives (every rank sends S/n to every other rank, S = nccl-tests'
size), scheduled in rounds of peers by node delta (init.cc ncclP2pSchedule), each send on its own p2p channels; a
rank's data for another node leaves through one NIC: its own, or with PXN (NCCL_PXN_DISABLE=0 and
NCCL_P2P_PXN_LEVEL=2, the defaults) the NIC of the local GPU on the destination GPU's rail, reached over NVLink
(graph/search.cc ncclTopoGetNetDev). NCCL cannot spread one alltoall send over a node's NICs (an NCCL maintainer,
NVIDIA/nccl-tests#267), so a NIC carries the bytes of the GPUs it serves and nothing averages them.

The fabric's share: every NIC of nodes 0..N-1 sends at the NIC rate r, spread evenly over its destinations
(node shifts s = 1..N-1; with PXN to the same-rail NIC of node i+s, without PXN to each NIC of node i+s); the
flows are routed on the platform (network/platform.py) and
    phi = max over fabric links l of  r x load_l / capacity_l      (load_l: bytes/s per unit NIC rate on l)
is how far the busiest link is above what it can carry; ECMP is taken to spread these many flows evenly over a
leaf's uplinks (the loads of a leaf's spine links are averaged). phi <= 1: the NICs bound the call. At most
MAX_FLOWS flows are routed: beyond that the node shifts are sampled evenly (deterministic), each standing for
(N-1)/shifts of them. Computed once per platform, node count and PXN setting (the platform's cache).
"""

from __future__ import annotations

import math

import numpy as np

from simcluster.collectives.nccl_constants import MAX_CHANNELS
from simcluster.network.platform import Platform

MAX_FLOWS = 1 << 18        # routed flows per alltoall pattern (16,384 GPUs with PXN: 16 node shifts)
P2P_PER_BATCH = 8          # NCCL_MAX_DEV_WORK_P2P_PER_BATCH: peers one p2p channel serves at once (device.h)
MAX_P2P_CHANNELS = MAX_CHANNELS   # NCCL_MAX_P2P_NCHANNELS defaults to MAXCHANNELS (p2pnChannels = min(nChannels, it))


def node_shifts(nodes: int, per_shift_flows: int) -> np.ndarray:
    """The node deltas routed: all of 1..N-1, or as many as MAX_FLOWS allows, spread evenly over that range."""
    if nodes < 2:
        return np.zeros(0, dtype=np.int64)
    keep = max(1, min(nodes - 1, MAX_FLOWS // max(1, per_shift_flows)))
    if keep == nodes - 1:
        return np.arange(1, nodes, dtype=np.int64)
    return np.unique(np.linspace(1, nodes - 1, keep).round().astype(np.int64))


def _smooth_ecmp(platform: Platform, load: np.ndarray) -> np.ndarray:
    """A leaf's spine links (its ECMP group, `width` contiguous links up and as many down) share its load evenly."""
    first, end = platform.spine_links
    if end <= first:
        return load
    t = platform.per_block
    width = int(t["width"][np.nonzero(t["up"] == first)[0][0]]) if np.any(t["up"] == first) else 1
    if width > 1 and (end - first) % width == 0:
        group = load[first:end].reshape(-1, width)
        load[first:end] = np.repeat(group.mean(axis=1), width)
    return load


def unit_link_load(platform: Platform, nodes: int, pxn: bool) -> float:
    """max over fabric links of load / capacity when every NIC of nodes 0..nodes-1 sends 1 byte/s of alltoall traffic
    (cached on the platform). Multiply by the NIC rate for phi."""
    key = ("alltoall unit load", nodes, pxn)
    cache = platform._cache
    if key in cache:
        return cache[key]
    k = platform.nics_per_node
    per_dest = 1 if pxn else k
    shifts = node_shifts(nodes, nodes * k * per_dest)
    if len(shifts) == 0 or k == 0:
        cache[key] = 0.0
        return 0.0
    node = np.arange(nodes)
    src_node = np.repeat(np.repeat(node, k * per_dest)[None, :], len(shifts), axis=0)
    src_nic = np.tile(np.repeat(np.arange(k), per_dest), nodes)[None, :]
    dst_nic = src_nic if pxn else np.tile(np.arange(k), nodes * k)[None, :]
    dst_node = (src_node + shifts[:, None]) % nodes
    src = platform.nic(src_node, np.broadcast_to(src_nic, src_node.shape)).ravel()
    dst = platform.nic(dst_node, np.broadcast_to(dst_nic, dst_node.shape)).ravel()
    routes = platform.routes(src, dst)
    fabric = platform.nvlink_links[0] if platform.nvlink_links[1] > platform.nvlink_links[0] else platform.links
    on_fabric = routes.link_idx < fabric
    weight = 1.0 / (per_dest * len(shifts))          # each NIC's unit rate, split over its flows
    load = np.bincount(routes.link_idx[on_fabric], minlength=fabric).astype(float) * weight
    load = _smooth_ecmp(platform, load)
    cache[key] = float(np.max(load / platform.capacity[:fabric]))
    cache[("alltoall crossings", nodes, pxn)] = len(routes.link_idx)     # work done, for bench/fabric_scale.py
    return cache[key]


def p2p_rounds(ranks: int, channels: int) -> int:
    """Rounds of peers an alltoall of `ranks` ranks runs in: NCCL serves P2P_PER_BATCH peers per p2p channel at once
    and, across nodes, lowers the channels per peer until all peers fit (paths.cc ncclTopoComputeP2pChannels), so
    ceil((n - 1) / (P2P_PER_BATCH x p2p channels)); p2p channels = the collective channels rounded up to a power of
    two, at most MAX_P2P_CHANNELS (NCCL's MAXCHANNELS)."""
    p2p_channels = min(MAX_P2P_CHANNELS, 1 << max(0, math.ceil(math.log2(max(1, channels)))))
    return max(1, math.ceil((ranks - 1) / (P2P_PER_BATCH * p2p_channels)))
