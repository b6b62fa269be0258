"""One collective call across nodes as every algorithm of collectives/fabric.py prices it: `FabricCall`, the rates and
latencies it is priced from (the node's ring-step network rate B_net, the NVLink rate B_nvl, a network hop l_nic), and
its per-protocol terms: each protocol's data fraction on the link, its intra- and inter-node step latencies (NCCL's
hwLatencies, at least the NIC's hop) and LL's bandwidth ceiling (NCCL's llMaxBws). docs/models/fabric.md has every term.
"""

from __future__ import annotations

from dataclasses import dataclass

from simcluster.collectives.cluster import Cluster
from simcluster.collectives.model import predict
from simcluster.collectives.nccl_constants import HW_LAT_US, LL_MAX_BW, LL_MAX_BW_CPU
from simcluster.collectives.rendezvous import rendezvous_s
from simcluster.collectives.ring_flows import RingFlows

LARGE = 2**30  # bytes: the size at which the intra card's busbw stands for the NVLink rate


def nvlink_rate(cluster: Cluster) -> float:
    """B_nvl: the per-GPU NVLink rate the intra card predicts for a large all_reduce on the node's GPUs (its busbw), bytes/s."""
    g = max(2, cluster.gpus_per_node)
    return predict(cluster.intra, "all_reduce", LARGE, g).busbw_Bps


@dataclass(frozen=True)
class FabricCall:
    """One collective call across nodes, with the rates every algorithm prices it from."""

    cluster: Cluster
    op: str
    size_bytes: float
    b_net: float               # a node's network rate on the ring step (sum over rails), bytes/s
    b_nvl: float               # the NVLink busbw of a large all_reduce inside a node, bytes/s
    l_nic: float               # one network hop: NIC latency + path latency, s
    flows: RingFlows

    def l_step(self, protocol: str = "Simple") -> float:
        """One network step of a protocol: the hops on its critical path, each l_nic. LL's small messages go in one;
        Simple and LL128 in the NIC card's `step_operations` (1 on every shipped card; for EFA, aws-ofi-nccl's RDMA
        protocol would put the receiver's control message and the RDMA write on it, 2, tried and not adopted:
        fabric-findings.md, session 28; no receive-side flush on compute capability >= 9.0)."""
        return self.l_nic * (1.0 if protocol == "LL" else self.cluster.nic.step_operations)

    def rendezvous(self, algo: str | None, protocol: str, size: float | None = None) -> float:
        """The first control message a call waits for above the NIC's eager limit (collectives/rendezvous.py), s."""
        return rendezvous_s(self.cluster, self.l_nic, self.op, algo, protocol, self.size_bytes if size is None else size)

    @property
    def n(self) -> int:
        return self.cluster.ranks

    @property
    def nodes(self) -> int:
        return self.cluster.nodes

    @property
    def base(self) -> float:
        return self.cluster.intra.base_latency_s

    @property
    def intra_step(self) -> float:
        return self.cluster.intra.simple_step_latency_s


# Bytes of data per byte a protocol puts on the link: LL sends 8-byte lines with 4 bytes of data and a flag,
# LL128 128-byte lines with 120 bytes of data, Simple the data alone.
DATA_FRACTION = {"LL": 0.5, "LL128": 120 / 128, "Simple": 1.0}
PROTOCOL_INDEX = {"LL": 0, "LL128": 1, "Simple": 2}


def step_latencies(call: FabricCall, algo: str, protocol: str) -> tuple[float, float]:
    """(intra-node step, inter-node step) latency of one protocol. Inside a node: NCCL's NVLink step latency for
    LL / LL128 (tuning.cc hwLatencies), the intra card's Simple step for Simple (as fitted). Across nodes: the
    network hop (NIC card latency + path), at least NCCL's NET step latency of the protocol (its proxy and flush)."""
    p = PROTOCOL_INDEX[protocol]
    intra = call.intra_step if protocol == "Simple" else HW_LAT_US["nvlink"][algo][p] * 1e-6
    inter = max(call.l_step(protocol), HW_LAT_US["net"][algo][p] * 1e-6)
    return intra, inter


def ll_cap_Bps(call: FabricCall) -> float:
    """NCCL's ceiling on LL's bus bandwidth (llMaxBws): the GPU's row inside one node, the CPU's across nodes."""
    cluster = call.cluster
    i2 = 0 if call.nodes == 1 else 1 if call.nodes == 2 else 2
    row = LL_MAX_BW[cluster.arch] if call.nodes == 1 else LL_MAX_BW_CPU[cluster.cpu_vendor]
    return row[i2] * 1e9


def network_name(call: FabricCall) -> str:
    return call.flows.limit or "network"


def protocol_terms(call: FabricCall, terms: dict[str, float], bus_bytes: float, protocol: str) -> tuple[float, dict]:
    """(data time, named terms) of a protocol over Simple's named bandwidth terms: each over the protocol's data
    fraction, LL also at least NCCL's LL ceiling."""
    f = DATA_FRACTION[protocol]
    named = {k: v / f for k, v in terms.items()}
    if protocol == "LL":
        named["LL protocol ceiling (NCCL llMaxBws)"] = bus_bytes / ll_cap_Bps(call)
    return max(named.values()), named
