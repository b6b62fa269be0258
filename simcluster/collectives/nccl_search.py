"""NCCL's topology search (src/graph/search.cc, NCCL 2.28.3), rebuilt from a short topology description:
`NcclTopology` (what NCCL sees: GPUs, NVLink, NICs, nodes) -> `graphs` (each algorithm's channels and per-channel
bandwidth, and the communicator's channel counts). The tuner (nccl_tuner.py) prices algorithms on these graphs.
Approximate for multi-node, NVLS and CollNet graphs (no log here shows one); see docs/models/collectives.md."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from simcluster.collectives.nccl_constants import (
    ARCHS,
    CPU_VENDORS,
    DIRECT_ARITY,
    MAX_CHANNELS,
    NET_OVERHEAD_US,
    NVLINK_GBPS_PER_LINK,
    NVLINKS_PER_GPU,
    NVLS_ARITY,
    NVLS_CHANNELS,
    NVLS_CHANNELS_ONE_DOMAIN,
    PROTOCOLS,
    SPEEDS_INTER,
    SPEEDS_INTRA,
)
from simcluster.errors import SimclusterError


@dataclass(frozen=True)
class NcclTopology:
    """What NCCL's search and tuner see: GPUs, NVLink, NICs, nodes. Bandwidths in bytes/s.

    nvlink_Bps: one GPU's NVLink bandwidth to its peers (through NVSwitch), None = from the architecture
    (SXM link count x NCCL's per-link figure); 0 = no NVLink (PCIe only)."""

    arch: str = "hopper"
    gpus_per_node: int = 8
    nodes: int = 1
    nvlink_Bps: float | None = None
    nics_per_node: int = 0
    nic_Bps: float = 0.0
    nvls: bool = False
    collnet: bool = False
    cpu_vendor: str = "intel"
    pci_Bps: float = 24e9              # a GPU's PCIe path when there is no NVLink (Gen4 x16)
    protocols: tuple[str, ...] = PROTOCOLS  # what NCCL_PROTO leaves NCCL (a network plugin may set it: the NIC card's
                                            # nccl_protocols)
    nccl: tuple[int, ...] | None = None     # the release the tuner's tables are read for (nccl_versions.py); None: 2.28.3 (the default)

    def __post_init__(self):
        if self.arch not in ARCHS:
            raise SimclusterError(f"unknown GPU architecture {self.arch!r}", hint=f"one of {', '.join(ARCHS)}")
        if self.cpu_vendor not in NET_OVERHEAD_US:
            raise SimclusterError(f"unknown CPU vendor {self.cpu_vendor!r}", hint=", ".join(CPU_VENDORS))
        if self.gpus_per_node < 1 or self.nodes < 1:
            raise SimclusterError(f"a topology needs >= 1 GPU per node and >= 1 node, got {self.gpus_per_node} x {self.nodes}")
        if not self.protocols or set(self.protocols) - set(PROTOCOLS):
            raise SimclusterError(f"NCCL protocols {self.protocols!r}: expected some of {', '.join(PROTOCOLS)}")
        if self.nodes > 1 and (self.nics_per_node < 1 or self.nic_Bps <= 0):
            raise SimclusterError(f"{self.nodes} nodes need NICs (nics_per_node >= 1, nic rate > 0)")

    @property
    def ranks(self) -> int:
        return self.gpus_per_node * self.nodes

    @property
    def nvlink_GBps(self) -> float:
        if self.nvlink_Bps is None:
            return NVLINKS_PER_GPU[self.arch] * NVLINK_GBPS_PER_LINK[self.arch]
        return self.nvlink_Bps / 1e9

    @property
    def has_nvlink(self) -> bool:
        return self.nvlink_GBps > 0


@dataclass(frozen=True)
class Graph:
    """One algorithm's search result: channels, per-channel bandwidth inside and across nodes (GB/s)."""

    channels: int
    bw_intra: float
    bw_inter: float


def _speeds(arch: str, inter: bool) -> tuple[float, ...]:
    table = SPEEDS_INTER if inter else SPEEDS_INTRA
    return table["blackwell" if arch == "blackwell" else "hopper" if arch == "hopper" else "volta"]


def _best_speed(speeds, channels_at) -> tuple[int, float]:
    """search.cc pass 1: from the fastest speed that fits, step down while the next speed is > 0.49 of the
    best found; keep the solution with the most bandwidth (channels x speed), the faster speed on a tie."""
    best = (0, 0.0)
    for s in speeds:
        if best[0] and s / best[1] <= .49:
            break
        n = channels_at(s)
        if n and n * s > best[0] * best[1] + 1e-9:
            best = (n, s)
    return best


def _dup(arch: str, n: int, s: float, max_channels: int) -> tuple[int, float]:
    """ncclTopoDupChannels: fast channels are split in two."""
    cc_above_80 = arch in ("hopper", "blackwell")
    if s < 25.0 or (cc_above_80 and s < 50.0 and n > 4):
        return n, s
    dup = min(2 * n, max_channels)
    return dup, s / math.ceil(dup / n)


def _raise(speeds, s: float, fits) -> float:
    """search.cc pass 2: the fastest listed speed the found channels still carry."""
    faster = [x for x in speeds if x > s and fits(x)]
    return max(faster) if faster else s


@lru_cache(maxsize=1024)
def graphs(topo: NcclTopology) -> dict:
    """Ring, tree, NVLS and CollNet graphs as NCCL's search would find them, and the communicator's
    channel counts: {'Ring': Graph, ..., 'coll_channels': int, 'nvls_channels': int}."""
    g = topo.gpus_per_node
    nvl = topo.nvlink_GBps if topo.has_nvlink else topo.pci_Bps / 1e9
    multi = topo.nodes > 1
    ring_max = MAX_CHANNELS // 2
    if not multi:
        speeds = _speeds(topo.arch, inter=False)
        cap = nvl if g > 1 else 5000.0

        def ring_channels(s):
            return min(int(cap / s + 1e-9), ring_max) if s <= cap else 0
    else:
        speeds = _speeds(topo.arch, inter=True)
        nic = topo.nic_Bps / 1e9
        cap = min(nic, nvl) if g > 1 else nic

        def ring_channels(s):
            if s > cap:
                return 0
            by_nic = topo.nics_per_node * int(nic / s + 1e-9)
            # a channel crosses the node on NVLink from the GPU at its receiving NIC to the GPU at its sending
            # one: every GPU but one sends on it, so the channels share (G-1)/G of each GPU's NVLink
            by_nvl = int(nvl * g / (g - 1) / s + 1e-9) if g > 1 else by_nic
            return min(by_nic, by_nvl, ring_max)
    n, s = _best_speed(speeds, ring_channels)
    if n == 0:
        n, s = 1, 0.1   # search.cc's fallback: simple order at 0.1 GB/s
    n, s = _dup(topo.arch, n, s, ring_max)
    s = _raise(speeds, s, lambda x: ring_channels(x) >= n)
    ring = Graph(n, s, s)
    # tree: as many channels as the ring; across nodes pass 2 raises the intra speed up to twice the inter one
    tree_intra = s
    if not multi and g == 2:
        # two GPUs: the tree's chain runs one way on half the channels and the other way on the rest, so
        # each direction of a GPU's NVLink carries half of them (logged: 12 channels at 60 GB/s on 2 x H200)
        ok = [x for x in speeds if x <= cap and n * x <= 2 * cap + 1e-9]
        tree_intra = max(ok) if ok else s
    if multi:
        tree_cap = nvl * g / (g - 1) if g > 1 else 5000.0
        ok = [x for x in speeds if s < x <= 2 * s and n * x <= tree_cap + 1e-9]
        tree_intra = max(ok) if ok else s
    tree = Graph(n, tree_intra, s if multi else tree_intra)
    out = {"Ring": ring, "Tree": tree, "PAT": ring, "CollNetChain": tree,
           "CollNetDirect": Graph(min(g, DIRECT_ARITY + 1), s, s)}
    nvls_channels = 0
    if topo.nvls and topo.arch in NVLS_CHANNELS and g > 1 and topo.has_nvlink:
        # NVLS: one channel per head GPU; per-channel speed bounded by the GPU's NVLink (pattern != ring)
        heads = min(g, NVLS_ARITY) if not multi else min(g, topo.nics_per_node, NVLS_ARITY)
        intra_speeds = _speeds(topo.arch, inter=multi)
        fits = [x for x in intra_speeds if heads * x <= nvl * g / (g - 1) + 1e-9]
        bw_intra = max(fits) if fits else 0.0
        bw_inter = max([x for x in intra_speeds if x <= topo.nic_Bps / 1e9], default=0.0) if multi else bw_intra
        out["NVLS"] = out["NVLSTree"] = Graph(heads, bw_intra, bw_inter)
        # nvls.cc: Blackwell runs fewer NVLS channels on one node or one MNNVL domain (NVLS_NCHANNELS_SM100_NVL)
        nvls_channels = NVLS_CHANNELS_ONE_DOMAIN.get(topo.arch, NVLS_CHANNELS[topo.arch]) if not multi else NVLS_CHANNELS[topo.arch]
    else:
        out["NVLS"] = out["NVLSTree"] = Graph(0, 0.0, 0.0)
    coll = min(MAX_CHANNELS, 2 * n)
    if topo.collnet and multi:
        coll = min(MAX_CHANNELS, coll + coll // 2)
    if topo.arch in ("hopper", "blackwell") and multi and s > 45.0 and coll < 16:
        coll *= 2
    out["coll_channels"] = coll
    out["nvls_channels"] = nvls_channels
    return out
