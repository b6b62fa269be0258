"""NCCL's tree kernels' ceilings: what the SMs of a tree's channels move at most, whatever NVLink and the NICs allow.

Plain tree (issue 41; found by sessions 41 treeib / mendC41, adopted in session 42 treereg on rows it had not seen):
NCCL's tuner caps the tree's all_reduce bus bandwidth at the tree graph's channels x a per-channel maximum by GPU
architecture and node count (src/graph/tuning.cc perChMaxTreeBws, [1 node, 2 nodes, 3+]; LL128 also x 120/128 and at
most perChMaxTreeLL128Bws). A tree all_reduce moves 2 S per GPU on that busbw (NCCL's tree algbw is half its busbw), so

    T_kernel = 2 S / (C_tree x b_ch(arch, N, NCCL version, protocol))

is one more floor under the tree's data time (collectives/fabric.py Tree.data_s). It is NCCL's tuner estimate, not a
measured kernel rate: tuning.cc's busBw = min(0.92 nCh bw, nCh perChMaxTreeBw) on the tree graph's nCh (8 on 8-GPU /
8-NIC nodes, search.cc's channel-duplication rule) while 16 collective channels run. The table is NCCL's and changes with
its version (collectives/nccl_versions.py, the tables by release): Blackwell 77.4 / 82.8 / 72.0 GB/s (2 x Hopper's) from
2.25 to 2.27, 70.0 / 42.8 / 24.0 from 2.28 on; Ampere and Hopper the same in every tag read. By default a Blackwell
run stating any NCCL before 2.28 gets 2 x Hopper's (main 97a9edf7's rule, kept: cold review B51 item 8); only with the
opt-in machine.nccl_tables: stated does one before 2.25 get what its release ran (Hopper's row, no Blackwell index
before v2.25.1-1; a release before 2.23.4, the default tables'). The version is the
scenario's `machine.nccl` (else the published file's stated one, reference/nccl.py), else the model's own, MODEL_NCCL
(2.28.3, nccl_constants.py). On 8-GPU / 8-NIC B200 nodes from 4 nodes on it binds at 8 channels x 24 GB/s = 192 GB/s,
half the ring's busbw. Only the 2.28+ branch was judged on held-out rows (the 24 registered rows ran 2.28 / 2.29); the
2.25-2.27 branch rests on 2 development rows (nccl#1801's GB200 partitions, another topology). The NVLS-tree cap below
stays 2.28.3's for every version (a kernel ceiling, not the tuner's choice, which nccl_tuner.py keys by version only with the opt-in
machine.nccl_tables: stated; by default 2.28.3's tables choose for every version).

NVLS tree: NCCL's ceiling on the NVLS-tree kernel (perChMaxNVLSTreeBws), times the NVLS head channels, as an
algorithm bandwidth (busbw x n / 2(n-1)): the node's SMs split between NVLink SHARP and the network.
"""

from __future__ import annotations

import math

from simcluster.collectives.nccl_constants import PER_CH_NVLS_TREE
from simcluster.collectives.nccl_search import graphs
from simcluster.collectives.nccl_versions import DEFAULT_RELEASE, TABLES_DEFAULT, NcclRelease, parse_release, tables_for
from simcluster.errors import SimclusterError

MODEL_NCCL = DEFAULT_RELEASE[:2]   # the NCCL version of the model's tuner tables (nccl_constants.py)
OLDEST_NCCL = (2, 26)         # machine.nccl is read from 2.26 on (the tree ceiling's first judged tables)
BLACKWELL_BEFORE_2_28 = (2, 27, 3)   # the default tree ceiling's release for Blackwell before 2.28 (2 x Hopper's)


def scenario_nccl(text) -> str:
    """machine.nccl: the NCCL version the machine runs, as MAJOR.MINOR[.PATCH] (the patch keys the tuner's tables,
    collectives/nccl_versions.py); a refusal names what is accepted. Text only: YAML reads an unquoted 2.30 as 2.3."""
    if not isinstance(text, str):
        raise ValueError(f"expected the NCCL version as quoted text such as '2.28.9' (YAML reads 2.30 as 2.3), got {text!r}")
    try:
        version = parse_release(text)      # the one parser (nccl_versions.py): '2.28.9x' or '2.27.3.1' is refused
    except SimclusterError as exc:
        raise ValueError(exc.message) from None
    if version is None:
        raise ValueError(f"expected an NCCL 2.x version such as '2.28.9', got {text!r}")
    if version < OLDEST_NCCL:
        raise ValueError(f"NCCL {version[0]}.{version[1]}: the tree ceiling's tables are read from 2.26 on")
    return ".".join(map(str, version))


def per_channel_GBps(arch: str, nodes: int, protocol: str, nccl: NcclRelease) -> float:
    """NCCL's per-channel tree bus bandwidth (GB/s) on `nodes` nodes of `arch` under the NCCL `nccl` states (None: the
    model's). With the opt-in (machine.nccl_tables: stated) from that release's tables (NcclRelease.tuner);
    by default the rule of main 97a9edf7 (cold review B51 item 8): Blackwell before 2.28 (major.minor) 2 x Hopper's,
    2.25-2.27's row, at any version before it too; every other case 2.28.3's row."""
    i2 = 0 if nodes <= 1 else 1 if nodes == 2 else 2
    version = nccl.tuner
    if nccl.tables == TABLES_DEFAULT:
        version = BLACKWELL_BEFORE_2_28 if arch == "blackwell" and nccl.stated and nccl.stated[:2] < (2, 28) else None
    tab = tables_for(version)
    row = tab.arch_row(arch)
    per_ch = tab.per_ch_tree[row][i2]
    if protocol == "LL128":
        per_ch = min(per_ch * 120 / 128, tab.per_ch_tree_ll128[row][i2])
    return per_ch


def tree_ceiling(cluster, protocol: str) -> tuple[float, str]:
    """(bus bytes/s, name) of the plain tree kernel's ceiling on this cluster: the name says what binds, e.g.
    "NCCL 2.28 tuner's tree limit (8 channels x 24 GB/s)"; inf where the tree graph has no channel."""
    channels = graphs(cluster.nccl_topology)["Tree"].channels
    version = cluster.nccl.stated or MODEL_NCCL
    per_ch = per_channel_GBps(cluster.arch, cluster.nodes, protocol, cluster.nccl)
    if not channels:
        return math.inf, "NCCL tuner's tree limit (no tree channel)"
    return (channels * per_ch * 1e9,
            f"NCCL {version[0]}.{version[1]} tuner's tree limit ({channels} channels x {per_ch:.4g} GB/s"
            f"{' ' + protocol if protocol != 'Simple' else ''})")


def nvls_tree_kernel_algbw(call) -> float:
    """NCCL's ceiling on the NVLS-tree kernel (tuning.cc perChMaxNVLSTreeBws: per channel 57.7 GB/s at 2 nodes,
    45.5 beyond, Hopper), times the NVLS head channels, as an algorithm bandwidth (busbw x n / 2(n-1)); `call` a
    collectives/fabric_call.FabricCall."""
    topo = call.cluster.nccl_topology
    heads = graphs(topo)["NVLSTree"].channels or call.cluster.gpus_per_node
    i2 = 1 if call.nodes == 2 else 2
    bus = heads * PER_CH_NVLS_TREE[call.cluster.arch][i2] * 1e9
    return bus * call.n / (2 * (call.n - 1)) if bus > 0 else math.inf
