"""NCCL's own algorithm / protocol / channel choice, computed from the topology (no debug log needed).

NCCL (src/graph/tuning.cc, NCCL 2.28.3) prices every (collective, algorithm, protocol) as

    T = lat + S / bw          lat in us, bw in GB/s (algorithm bandwidth), S = the call's bytes
    lat = baseLat[a][p] + steps x hwLat[link][a][p]       (per algorithm, below)
    bw  = nChannels x bwPerChannel, then per-algorithm corrections, then busbw -> algbw

and runs the cheapest enabled pair. The per-channel bandwidths come from NCCL's topology search
(src/graph/search.cc): the fastest per-channel speed, from a fixed list per architecture, that the
NVLink / NIC bandwidth can carry on as many channels as possible. This module rebuilds the search's
result from a short topology description (`NcclTopology`), the table (`tuning_table`, the same numbers
NCCL prints with NCCL_DEBUG_SUBSYS=TUNING) and the per-call decision (`decide`): algorithm, protocol
and the channels NCCL gives the call (src/enqueue.cc topoGetAlgoInfo and the channel split of
scheduleCollTasksToPlan). Constants are NCCL 2.28.3's (facts, not code). See docs/models/collectives.md,
section "NCCL's decision model". What is approximate: the search itself for multi-node, NVLS and CollNet
graphs (no log here shows one); checked exactly: single-node tables and decisions against every tuning
log in calibration/ (tests/test_nccl_tuner.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from simcluster.errors import SimclusterError

ALGORITHMS = ("Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT")
PROTOCOLS = ("LL", "LL128", "Simple")
TUNED_OPS = ("broadcast", "reduce", "all_gather", "reduce_scatter", "all_reduce")
ARCHS = ("volta", "ampere", "hopper", "blackwell")

# baseLatencies[algorithm][protocol], us
BASE_LAT_US = {"Tree": (6.8, 14.0, 8.4), "Ring": (6.6, 14.0, 8.4), "CollNetDirect": (0, 0, 0),
               "CollNetChain": (0, 0, 0), "NVLS": (0, 0, 0), "NVLSTree": (0, 0, 0), "PAT": (8.0, 8.0, 8.0)}
# hwLatencies[link][algorithm][protocol], us
HW_LAT_US = {
    "nvlink": {"Tree": (.6, 1.25, 4.0), "Ring": (.6, 1.9, 3.4), "CollNetDirect": (0, 0, 3.7), "CollNetChain": (0, 0, 2.8),
               "NVLS": (0, 0, 25), "NVLSTree": (0, 0, 25), "PAT": (0, 0, 4.0)},
    "pci": {"Tree": (1.0, 1.9, 4.0), "Ring": (1.0, 2.5, 5.7), "CollNetDirect": (0, 0, 3.7), "CollNetChain": (0, 0, 2.8),
            "NVLS": (0, 0, 0), "NVLSTree": (0, 0, 0), "PAT": (0, 0, 4.0)},
    "net": {"Tree": (5.0, 8.5, 14), "Ring": (2.7, 4.0, 14.0), "CollNetDirect": (0, 0, 31), "CollNetChain": (0, 0, 30),
            "NVLS": (0, 0, 18), "NVLSTree": (0, 0, 14), "PAT": (0, 0, 14)},
}
# [arch or CPU row][nodes index: 1 node, 2 nodes, more], GB/s. LL: one node -> the GPU's row; more -> the CPU's
LL_MAX_BW = {"volta": (39.0, 39.0, 20.4), "ampere": (87.7, 22.5, 19.0), "hopper": (141.0, 45.0, 35.0),
             "blackwell": (282.0, 90.0, 70.0)}
# across nodes NCCL takes the AMD row for an AMD (or mixed) host, the Intel row for every other (ARM included)
LL_MAX_BW_CPU = {"intel": (39.0, 39.0, 20.4), "amd": (87.7, 22.5, 19.0), "arm": (39.0, 39.0, 20.4)}
PER_CH_RING_LL128 = {"volta": (20.0,) * 3, "ampere": (20.0,) * 3, "hopper": (36.7,) * 3, "blackwell": (73.4,) * 3}
PER_CH_TREE_LL128 = {"volta": (20.0,) * 3, "ampere": (20.0,) * 3, "hopper": (36.7, 36.7, 29.0), "blackwell": (55.6, 31.67, 20.0)}
PER_CH_TREE = {"volta": (26.5, 18.5, 10.0), "ampere": (24.0, 23.6, 17.8), "hopper": (38.7, 41.4, 36.0),
               "blackwell": (70.0, 42.8, 24.0)}
PER_CH_NVLS_TREE = {"volta": (26.5, 18.5, 10.0), "ampere": (24.0, 23.6, 17.8), "hopper": (0.0, 57.7, 45.5),
                    "blackwell": (0.0, 96.0, 43.1)}
NVLS_EFFICIENCY = {"volta": 0.0, "ampere": 0.0, "hopper": 0.85, "blackwell": 0.74}
# tree all_reduce bandwidth correction by log2(bytes / 64), 64 B .. 256 MiB
TREE_CORRECTION = {
    "LL": (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0),
    "LL128": (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0),
    "Simple": (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9),
}
# topology search speeds (GB/s per channel), search.cc
SPEEDS_INTRA = {"volta": (40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0),
                "hopper": (60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0),
                "blackwell": (90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0)}
SPEEDS_INTER = {"volta": (48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.4, 1.2, .24, .12),
                "hopper": (48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, .24, .12),
                "blackwell": (96.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, .24, .12)}
NVLINK_GBPS_PER_LINK = {"volta": 20.0, "ampere": 20.0, "hopper": 20.6, "blackwell": 40.1}   # topo.h SMxx_NVLINK_BW
NVLINKS_PER_GPU = {"volta": 6, "ampere": 12, "hopper": 18, "blackwell": 18}                  # SXM parts
MAX_CHANNELS = 64
NVLS_CHANNELS = {"hopper": 16, "blackwell": 32}
NVLS_ARITY = 32
DIRECT_ARITY = 7
THREADS = {"LL": 512, "LL128": 640, "Simple": 512}     # NCCL_{LL,LL128,SIMPLE}_MAX_NTHREADS
THREAD_THRESHOLD = {"LL": 8, "LL128": 8, "Simple": 64}
MAX_THREADS = 640
MIN_TRAFFIC_PER_CHANNEL = 16 << 10
# per network step (tuning.cc getNetOverhead): x86 Intel 1 us, x86 AMD 2 us, any other CPU 1 us
NET_OVERHEAD_US = {"intel": 1.0, "amd": 2.0, "arm": 1.0}
CPU_VENDORS = tuple(NET_OVERHEAD_US)


GPU_ARCH_PREFIXES = (("v100", "volta"), ("a100", "ampere"), ("a800", "ampere"), ("h100", "hopper"), ("h200", "hopper"),
                     ("h800", "hopper"), ("gh200", "hopper"), ("b100", "blackwell"), ("b200", "blackwell"),
                     ("gb200", "blackwell"), ("b300", "blackwell"))


ARCHITECTURES = tuple(dict.fromkeys(arch for _, arch in GPU_ARCH_PREFIXES))


def arch_of(gpu_name: str, card_arch: str | None = None) -> str:
    """The architecture NCCL's tables are indexed by: a GPU card's own `machine.arch`, else read from its name
    (models/gpu/*.yaml, 'h100-sxm')."""
    if card_arch is not None:
        if card_arch not in ARCHITECTURES:
            raise SimclusterError(f"machine.arch {str(card_arch)[:20]!r} of GPU card {gpu_name!r} is not an architecture "
                                  "NCCL's tables know", hint="one of " + ", ".join(ARCHITECTURES))
        return card_arch
    name = gpu_name.lower()
    for prefix, arch in GPU_ARCH_PREFIXES:
        if name.startswith(prefix):
            return arch
    raise SimclusterError(f"no NCCL architecture known for GPU {gpu_name!r}",
                          hint="name the GPU card after one of " + ", ".join(p for p, _ in GPU_ARCH_PREFIXES)
                          + ", or give it machine.arch")


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

    def __post_init__(self):
        if self.arch not in ARCHS:
            raise SimclusterError(f"unknown GPU architecture {self.arch!r}", hint=f"one of {', '.join(ARCHS)}")
        if self.cpu_vendor not in NET_OVERHEAD_US:
            raise SimclusterError(f"unknown CPU vendor {self.cpu_vendor!r}", hint=", ".join(CPU_VENDORS))
        if self.gpus_per_node < 1 or self.nodes < 1:
            raise SimclusterError(f"a topology needs >= 1 GPU per node and >= 1 node, got {self.gpus_per_node} x {self.nodes}")
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


@dataclass(frozen=True)
class Decision:
    algorithm: str
    protocol: str
    channels: int        # channels NCCL gives the call (the log's channel{Lo..Hi} count)
    max_channels: int    # nMaxChannels from topoGetAlgoInfo
    time_s: float        # NCCL's own estimate


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
        heads = min(g, NVLS_ARITY) if not multi else min(g, topo.nics_per_node)
        intra_speeds = _speeds(topo.arch, inter=multi)
        fits = [x for x in intra_speeds if heads * x <= nvl * g / (g - 1) + 1e-9]
        bw_intra = max(fits) if fits else 0.0
        bw_inter = max([x for x in intra_speeds if x <= topo.nic_Bps / 1e9], default=0.0) if multi else bw_intra
        out["NVLS"] = out["NVLSTree"] = Graph(heads, bw_intra, bw_inter)
        nvls_channels = NVLS_CHANNELS[topo.arch]
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


def _index2(nodes: int) -> int:
    return 0 if nodes == 1 else 1 if nodes == 2 else 2


def _enabled(topo: NcclTopology, op: str, algo: str, proto: str) -> bool:
    """The tuner's loop filters and the enable rules (tuning.cc, enqueue.cc updateCollCostTable)."""
    if op in ("broadcast", "reduce") and algo != "Ring":
        return False
    if op in ("all_gather", "reduce_scatter") and algo not in ("PAT", "Ring", "NVLS", "CollNetDirect"):
        return False
    if op == "all_reduce" and algo == "PAT":
        return False
    if algo in ("NVLS", "NVLSTree") and proto != "Simple":
        return False
    if algo == "PAT" and (proto != "Simple" or topo.gpus_per_node != 1):
        return False
    if algo in ("CollNetDirect", "CollNetChain") and (proto != "Simple" or not topo.collnet or topo.nodes == 1
                                                      or topo.gpus_per_node > DIRECT_ARITY + 1):
        return False
    if algo == "CollNetDirect" and not topo.has_nvlink:
        return False
    if algo == "NVLSTree" and topo.nodes == 1:
        return False
    if algo == "NVLS" and topo.nodes > 1 and not topo.collnet:
        return False
    if algo in ("NVLS", "NVLSTree") and (graphs(topo)["NVLS"].channels < 2 or graphs(topo)["nvls_channels"] == 0):
        return False
    if algo in ("NVLS", "CollNetDirect") and op in ("all_gather", "reduce_scatter") and topo.nodes > 1:
        return False   # needs a CollNet plugin with allgather / reducescatter; not modelled
    if proto == "LL128":
        # on by default where the GPUs talk over NVLink (typeIntra <= NVB) and reach their NIC through PCIe
        # switches (Hopper and later up to PXN, older up to PXB: assumed, as on every SXM board)
        return topo.has_nvlink
    return True


def _steps(op: str, n: int) -> int:
    return 2 * (n - 1) if op == "all_reduce" else n - 1 if op in ("all_gather", "reduce_scatter") else n


@lru_cache(maxsize=1024)
def tuning_table(topo: NcclTopology) -> dict:
    """op -> algorithm -> protocol -> (latency_s, algbw_Bps); algbw 0 where NCCL cannot run the pair."""
    n, nodes, arch = topo.ranks, topo.nodes, topo.arch
    if n <= 1:
        return {op: {"Ring": {"Simple": (0.0, math.inf)}} for op in TUNED_OPS}
    gr = graphs(topo)
    i2 = _index2(nodes)
    ll_max = LL_MAX_BW[arch][i2] if nodes == 1 else LL_MAX_BW_CPU[topo.cpu_vendor][i2]
    ppn = n / nodes
    intra_link = "nvlink" if topo.has_nvlink else "pci"
    table: dict = {}
    for op in TUNED_OPS:
        nsteps = _steps(op, n)
        per_op = table.setdefault(op, {})
        for algo in ALGORITHMS:
            graph = gr[algo]
            for pi, proto in enumerate(PROTOCOLS):
                if not _enabled(topo, op, algo, proto):
                    continue
                collnet = algo in ("CollNetDirect", "CollNetChain")
                bw = graph.bw_intra if nodes <= 2 or collnet else graph.bw_inter
                if algo in ("NVLS", "NVLSTree"):
                    intra_bw = graph.bw_intra * NVLS_EFFICIENCY[arch] * (graph.channels - 1) / graph.channels
                    intra_bw *= 2.0 if op == "all_reduce" else (ppn - 1) / ppn
                    inter_bw = graph.bw_inter * (2 if nodes <= 2 and algo == "NVLSTree" else 1)
                    caps = [intra_bw, inter_bw] if nodes > 1 else [intra_bw]
                    if algo == "NVLSTree":
                        caps.append(PER_CH_NVLS_TREE[arch][i2])
                    bw = min(caps)
                bus = graph.channels * bw
                if algo == "Ring" and proto == "LL":
                    bus = min(ll_max, bus * .5)
                if algo == "Ring" and proto == "LL128":
                    bus = min(bus * .92, graph.channels * PER_CH_RING_LL128[arch][i2])
                if algo == "Tree" and op == "all_reduce":
                    bus = min(bus * .92, graph.channels * PER_CH_TREE[arch][i2])
                if algo == "Tree" and proto == "LL":
                    bus = min(bus / 3.8, ll_max)
                if algo == "Tree" and proto == "LL128":
                    bus = min(bus * (7.0 / 9.0 if nodes == 1 else 120.0 / 128.0), graph.channels * PER_CH_TREE_LL128[arch][i2])
                if algo == "PAT":
                    bus *= .75
                if algo == "CollNetDirect":
                    factor = ppn / graph.channels
                    factor -= (factor - 1) / 2
                    bus /= factor
                    if arch in ("hopper", "blackwell"):
                        bus *= .85
                if not (algo != "Ring" and op in ("all_gather", "reduce_scatter")):
                    bus *= n / nsteps if algo in ("Ring", "NVLS", "NVLSTree") else .5
                lat = BASE_LAT_US[algo][pi]
                intra_lat = HW_LAT_US[intra_link][algo][pi]
                inter_lat = HW_LAT_US["net"]["Tree" if ppn == 1 else algo][pi]
                if algo == "Ring":
                    hw = HW_LAT_US[intra_link if nodes == 1 else "net"]["Ring"][pi]
                    if op in ("broadcast", "reduce"):
                        lat += hw          # same channels: one step's latency, the data pipelines
                    else:
                        overhead = NET_OVERHEAD_US[topo.cpu_vendor] * (3 if proto == "Simple" else 1) if nodes > 1 else 0.0
                        intra_lat = max(intra_lat, overhead)
                        inter_steps = 0 if nodes == 1 else 2 * (nodes - 1) if op == "all_reduce" else nodes - 1
                        lat += (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat
                elif algo == "Tree":
                    if op == "all_reduce":
                        lat += 2 * ((n // nodes - 1) * intra_lat + int(math.log2(nodes)) * inter_lat)
                elif algo == "CollNetDirect":
                    lat += 2 * (min(1, n // nodes - 1) * intra_lat + (n // nodes - 1) * 0.4) + inter_lat
                elif algo == "CollNetChain":
                    lat += 2 * (n // nodes - 1) * intra_lat + inter_lat
                elif algo == "NVLS":
                    lat = intra_lat + (inter_lat if nodes > 1 else 0.0)
                elif algo == "NVLSTree":
                    lat += intra_lat + 2 * int(math.log2(nodes)) * inter_lat
                elif algo == "PAT":
                    lat += int(math.log2(nodes)) * (inter_lat / 3.5) + n * 2.8
                per_op.setdefault(algo, {})[proto] = (lat * 1e-6, bus * 1e9)
    return table


def algo_time_s(topo: NcclTopology, op: str, algo: str, proto: str, size: float) -> float | None:
    """NCCL's estimate for one pair (ncclTopoGetAlgoTime), None where the pair cannot run."""
    entry = tuning_table(topo).get(op, {}).get(algo, {}).get(proto)
    if entry is None or entry[1] <= 0:
        return None
    lat, bw = entry
    nbytes = int(size)
    log_size = (nbytes >> 6).bit_length() - 1
    if algo == "Tree" and op == "all_reduce" and 0 <= log_size < 23:
        bw *= TREE_CORRECTION[proto][log_size]
    coll = graphs(topo)["coll_channels"]
    if (algo == "Ring" and proto == "Simple" and topo.nodes > 1 and op == "all_reduce"
            and nbytes // (coll * topo.ranks) >= 64):
        lat *= 1.9 if topo.arch == "volta" else 1.4
    return lat + nbytes / bw


def _max_channels(topo: NcclTopology, algo: str, proto: str, size: int) -> tuple[int, int]:
    """(nMaxChannels, threads) for the call (enqueue.cc topoGetAlgoInfo)."""
    gr = graphs(topo)
    nc = gr["coll_channels"]
    if algo in ("NVLS", "NVLSTree"):
        return (min(gr["nvls_channels"], nc) if topo.nodes > 1 and algo == "NVLS" else gr["nvls_channels"]), MAX_THREADS
    if algo == "CollNetDirect":
        return nc, MAX_THREADS
    nt = THREADS[proto]
    if algo == "Ring" and proto == "Simple" and gr["Ring"].bw_intra * gr["Ring"].channels <= 12.0:
        nt = 256
    threshold = THREAD_THRESHOLD[proto] * (topo.ranks if algo == "Ring" and proto == "LL" else 1)
    while size < nc * nt * threshold and nc >= 2:
        nc -= 1
    return nc, nt


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _logged_channels(topo: NcclTopology, op: str, proto: str, size: int, max_channels: int, elem: int = 4) -> int:
    """How many channels one call alone is spread over (scheduleCollTasksToPlan's cells)."""
    comm_channels = graphs(topo)["coll_channels"]
    per_rank = size // topo.ranks if op in ("all_gather", "reduce_scatter") else size
    tpb = {"all_reduce": 2, "all_gather": topo.ranks, "reduce_scatter": topo.ranks}.get(op, 1)
    tpb *= 4 if proto == "LL" else 1
    traffic = per_rank * tpb
    per_channel = max(MIN_TRAFFIC_PER_CHANNEL, traffic // max(1, min(max_channels, comm_channels)))
    cell = _ceil_div(_ceil_div(MIN_TRAFFIC_PER_CHANNEL, tpb), 16) * 16
    cells = max(1, _ceil_div(per_rank, cell))
    per_cell_traffic = cell * tpb
    cells_per_channel = min(cells, _ceil_div(per_channel, per_cell_traffic))
    if comm_channels == 1:
        return 1
    lo = cells_per_channel
    mid, hi = divmod(cells - lo, cells_per_channel)
    used = 1 + mid + (1 if hi else 0)
    return min(used, comm_channels)


@lru_cache(maxsize=65536)
def decide(topo: NcclTopology, op: str, size: float) -> Decision:
    """The algorithm, protocol and channels NCCL runs one call of `size` bytes with (nccl-tests' size:
    all_gather / reduce_scatter count every rank's bytes)."""
    if op not in TUNED_OPS:
        raise SimclusterError(f"NCCL's tuner does not choose for {op!r}", hint=f"one of {', '.join(TUNED_OPS)} (p2p ops are not tuned)")
    if size < 0:
        raise SimclusterError(f"a call's size must be >= 0 bytes, got {size}")
    if topo.ranks == 1:
        return Decision("Ring", "Simple", 1, 1, 0.0)
    best = None
    for algo in ALGORITHMS:
        for proto in PROTOCOLS:
            t = algo_time_s(topo, op, algo, proto, size)
            if t is not None and (best is None or t < best[0]):
                best = (t, algo, proto)
    if best is None:
        raise SimclusterError(f"no algorithm / protocol NCCL could run for {op} on this topology")
    t, algo, proto = best
    nmax, _ = _max_channels(topo, algo, proto, int(size))
    used = nmax if algo in ("NVLS", "NVLSTree", "CollNetDirect", "CollNetChain") else _logged_channels(topo, op, proto, int(size), nmax)
    return Decision(algo, proto, used, nmax, t)


@lru_cache(maxsize=65536)
def best_protocol(topo: NcclTopology, op: str, algo: str, size: float) -> str | None:
    """The protocol NCCL would run `algo` with (NCCL_ALGO forcing the algorithm), None if it cannot run."""
    times = {p: algo_time_s(topo, op, algo, p, size) for p in PROTOCOLS}
    times = {p: t for p, t in times.items() if t is not None}
    return min(times, key=times.get) if times else None
