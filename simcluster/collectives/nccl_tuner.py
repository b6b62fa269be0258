"""NCCL's own algorithm / protocol / channel choice, computed from the topology (no debug log needed).

NCCL (src/graph/tuning.cc, NCCL 2.28.3) prices every (collective, algorithm, protocol) as

    T = lat + S / bw          lat in us, bw in GB/s (algorithm bandwidth), S = the call's bytes
    lat = baseLat[a][p] + steps x hwLat[link][a][p]       (per algorithm, below)
    bw  = nChannels x bwPerChannel, then per-algorithm corrections, then busbw -> algbw

and runs the cheapest enabled pair. The per-channel bandwidths come from NCCL's topology search
(src/graph/search.cc): the fastest per-channel speed, from a fixed list per architecture, that the
NVLink / NIC bandwidth can carry on as many channels as possible: nccl_search.py rebuilds that result
from a short topology description (`NcclTopology`), nccl_constants.py holds NCCL 2.28.3's tables (facts,
not code), nccl_versions.py what other releases' tables and rules differ in: the table is the one of the
release the topology states (`NcclTopology.nccl`; None, the default for every run: 2.28.3; a release only with the
opt-in machine.nccl_tables: stated, nccl_versions.NcclRelease.tuner). This module is the tuner: the table (`tuning_table`, the same numbers NCCL prints with
NCCL_DEBUG_SUBSYS=TUNING) and the per-call decision (`decide`): algorithm, protocol and the channels NCCL
gives the call (src/enqueue.cc topoGetAlgoInfo and the channel split of scheduleCollTasksToPlan). See
docs/models/collectives.md, section "NCCL's decision model". Checked exactly: single-node tables and
decisions against every tuning log in calibration/ (tests/test_nccl_tuner.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from simcluster.collectives.nccl_constants import (
    ALGORITHMS,
    BASE_LAT_US,
    DIRECT_ARITY,
    LL_MAX_BW_CPU,
    MAX_THREADS,
    MIN_TRAFFIC_PER_CHANNEL,
    NET_OVERHEAD_US,
    NVLS_EFFICIENCY,
    PROTOCOLS,
    THREAD_THRESHOLD,
    THREADS,
    TREE_CORRECTION,
    TUNED_OPS,
)
from simcluster.collectives.nccl_search import NcclTopology, graphs
from simcluster.collectives.nccl_versions import NVLS_TREE_CORRECTION_LAST, tables_for
from simcluster.errors import SimclusterError


@dataclass(frozen=True)
class Decision:
    algorithm: str
    protocol: str
    channels: int        # channels NCCL gives the call (the log's channel{Lo..Hi} count)
    max_channels: int    # nMaxChannels from topoGetAlgoInfo
    time_s: float        # NCCL's own estimate


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
    tab = tables_for(topo.nccl)          # the release's tables (nccl_versions.py); `arch` indexes its rows
    row = tab.arch_row(arch)
    ll_max = tab.ll_max_bw[row][i2] if nodes == 1 else LL_MAX_BW_CPU[topo.cpu_vendor][i2]
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
                if algo in ("NVLS", "NVLSTree") and not tab.nvls_efficiency:
                    bw = _nvls_bw_before_2_28(graph, op, algo, nodes, ppn, tab)
                elif algo in ("NVLS", "NVLSTree"):
                    intra_bw = graph.bw_intra * NVLS_EFFICIENCY[arch] * (graph.channels - 1) / graph.channels
                    intra_bw *= 2.0 if op == "all_reduce" else (ppn - 1) / ppn
                    inter_bw = graph.bw_inter * (2 if nodes <= 2 and algo == "NVLSTree" else 1)
                    caps = [intra_bw, inter_bw] if nodes > 1 else [intra_bw]
                    if algo == "NVLSTree":
                        caps.append(tab.per_ch_nvls_tree[row][i2])
                    bw = min(caps)
                bus = graph.channels * bw
                if algo == "Ring" and proto == "LL":
                    bus = min(ll_max, bus * .5)
                if algo == "Ring" and proto == "LL128":
                    bus = min(bus * .92, graph.channels * tab.per_ch_ring_ll128[row][i2])
                if algo == "Tree" and op == "all_reduce":
                    bus = min(bus * .92, graph.channels * tab.per_ch_tree[row][i2])
                if algo == "Tree" and proto == "LL":
                    bus = min(bus / 3.8, ll_max)
                if algo == "Tree" and proto == "LL128":
                    bus = min(bus * (7.0 / 9.0 if nodes == 1 else 120.0 / 128.0), graph.channels * tab.per_ch_tree_ll128[row][i2])
                if algo == "Tree" and nodes > 1 and ppn == 1:
                    bus *= .85      # one GPU per node: the search's tree pattern is TREE (all NIC traffic via one GPU)
                if algo == "PAT":
                    bus *= tab.pat_factor
                if algo == "CollNetDirect":
                    factor = ppn / graph.channels
                    factor -= (factor - 1) / 2
                    bus /= factor
                    if arch in ("hopper", "blackwell"):
                        bus *= .85
                if not (algo != "Ring" and op in ("all_gather", "reduce_scatter")):
                    old_nvls = algo in ("NVLS", "NVLSTree") and not tab.nvls_efficiency
                    bus *= 5 / 6 if old_nvls else n / nsteps if algo in ("Ring", "NVLS", "NVLSTree") else .5
                lat = BASE_LAT_US[algo][pi]
                intra_lat = tab.hw_lat[intra_link][algo][pi]
                inter_lat = tab.hw_lat["net"]["Tree" if ppn == 1 else algo][pi]
                if algo == "Ring":
                    hw = tab.hw_lat[intra_link if nodes == 1 else "net"]["Ring"][pi]
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


def _nvls_bw_before_2_28(graph, op: str, algo: str, nodes: int, ppn: float, tab) -> float:
    """Per-channel NVLS / NVLS-tree bandwidth before 2.28 (nccl_versions.py): min(intra, inter; the tree's inter halved
    above 2 nodes), from 2.27 all_gather / reduce_scatter min(intra (ppn-1)/ppn, 0.9 inter)."""
    if algo == "NVLSTree":
        return min(graph.bw_intra, graph.bw_inter if nodes <= 2 else graph.bw_inter / 2)
    if op != "all_reduce" and tab.nvls_gather_rule:
        return min(graph.bw_intra * (ppn - 1) / ppn, graph.bw_inter * 0.9)
    return min(graph.bw_intra, graph.bw_inter)


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
    if (algo == "NVLSTree" and op == "all_reduce" and 0 <= log_size < 24 and topo.arch == "blackwell"
            and topo.cpu_vendor != "arm" and tables_for(topo.nccl).nvls_tree_correction):
        bw *= TREE_CORRECTION[proto][log_size] if log_size < 23 else NVLS_TREE_CORRECTION_LAST[proto]
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
        for proto in topo.protocols:
            t = algo_time_s(topo, op, algo, proto, size)
            if t is not None and (best is None or t < best[0]):
                best = (t, algo, proto)
    if best is None:
        raise SimclusterError(f"no algorithm / protocol NCCL could run for {op} on this topology")
    t, algo, proto = best
    used, nmax = call_channels(topo, op, algo, proto, size)
    return Decision(algo, proto, used, nmax, t)


def call_channels(topo: NcclTopology, op: str, algo: str, proto: str, size: float) -> tuple[int, int]:
    """(channels one call of `size` bytes runs on, nMaxChannels) for an algorithm and protocol."""
    nmax, _ = _max_channels(topo, algo, proto, int(size))
    used = nmax if algo in ("NVLS", "NVLSTree", "CollNetDirect", "CollNetChain") else _logged_channels(topo, op, proto, int(size), nmax)
    return used, nmax


@lru_cache(maxsize=65536)
def best_protocol(topo: NcclTopology, op: str, algo: str, size: float) -> str | None:
    """The protocol NCCL would run `algo` with (NCCL_ALGO forcing the algorithm), None if it cannot run."""
    times = {p: algo_time_s(topo, op, algo, p, size) for p in topo.protocols}
    times = {p: t for p, t in times.items() if t is not None}
    return min(times, key=times.get) if times else None
