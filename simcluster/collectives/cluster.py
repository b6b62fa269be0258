"""The machine a multi-node collective runs on, as the fabric models read it: the node's NVLink card, the NIC card,
the platform, the aggregation and NVLS cards, and what bounds one NIC's traffic (its transport, the PCIe path to it).
Built once per scenario machine (machine_models.build_cluster); collectives/fabric.py and ring_flows.py both read it."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

from simcluster.collectives.interface import CollectiveModel
from simcluster.collectives.nccl_constants import LL128_VIA_CPU_FROM, PROTOCOLS
from simcluster.collectives.nccl_search import NcclTopology
from simcluster.collectives.nccl_versions import MODEL_RELEASE, NcclRelease
from simcluster.hardware.nic import NicParams
from simcluster.hardware.pcie import PcieLink
from simcluster.hardware.switch import AggregationParams
from simcluster.network.platform import Platform

# The alltoall's per-GPU NIC rate (collectives/fabric.Alltoall: K r / G_node) with a NIC's PCIe path shared by the node's
# GPUs as the board wires them (Platform.gpus_per_node), not by a group's ranks on the node: llm/comm.collective_s prices
# a group across nodes on a copy of the Cluster whose gpus_per_node is the group's ranks per node (2 of a DGX H100's 8
# for an EP group 4 apart), which read as 2 GPU ports serving 8 NICs, each NIC at a quarter of a port (13.3 GB/s for
# 400 Gb/s NICs behind PCIe Gen5 x16) while the node's 8 NICs stayed in K: each EP rank priced at a quarter of its own
# NIC. DGX H100 wires one compute NIC per GPU (NVIDIA/dgxc-benchmarking v25.02 8f5cbb3 README.md L80, L91-92: 8 H100,
# InfiniBand compute links 8x 400 Gbit/s). False: the copy's count, as before session 52 (moe52; the switch of
# heldout/registration.moe52_facts, studies/moedev51_rows.py --steps). The rings' node share (ring_flows) reads the whole
# Cluster's nic_limit, scaled by the group's ranks a node (llm/comm). The in-network stage (collectives/in_network.group_nics)
# follows the same rule since session 52's mend (mendB52): the group's K g / G_wired NICs at the wired PCIe share; before,
# it read the view's pcie_per_nic and all K NICs (a 1-rank-a-node group credited with 8 NICs' rate); so does the in-network
# stream's cap at a NIC slower than the switch's ports (mendB52; off with the switch). One switch for session 52's two
# fabric facts, both "a group's NICs as the board wires them" (the wired PCIe share, the in-network NIC line-rate cap;
# NICS_AS_WIRED since session 53 mendB53, cold review B53 item 10; before: FABRIC_FACTS_52 from house53, PCIE_BY_WIRED_GPUS
# / Cluster.pcie_by_wired before it). Read once per Cluster, when it is built (Cluster.nics_as_wired;
# mendF52: a Cluster built before the switch flipped kept the old answer in its caches).
NICS_AS_WIRED = True


def no_ll128_via_cpu(via_cpu: bool, nodes: int, nccl_version: tuple[int, ...] | None) -> bool:
    """NCCL runs no LL128 across nodes: the NICs hang off the CPU (GB200 trays) and the NCCL predates 2.27
    (nccl_constants.LL128_VIA_CPU_FROM; None, the model's NCCL 2.28, runs it)."""
    return via_cpu and nodes > 1 and nccl_version is not None and nccl_version < LL128_VIA_CPU_FROM


@dataclass(frozen=True)
class Cluster:
    intra: CollectiveModel
    nic: NicParams
    platform: Platform                          # the machine (network/platform.py), built once per scenario
    gpus_per_node: int
    host_cores: float = 64.0
    nic_streams: int = 1                      # sockets (TCP) per NIC, as NCCL_NSOCKS_PERTHREAD * NTHREADS
    aggregation: AggregationParams | None = None
    nvls: tuple[float, float] | None = None     # NVLink SHARP: (intra-node all_reduce algbw B/s, latency s)
    job_nodes: int | None = None                # a job on part of the fabric (concurrent jobs)
    arch: str = "hopper"                        # GPU architecture, for NCCL's decision model (collectives/nccl_tuner.py)
    cpu_vendor: str = "intel"                   # NCCL prices LL across nodes by the CPU (llMaxBws)
    pxn: bool = True                            # NCCL's PXN (p2p through the rail-aligned GPU's NIC), on by default
    gpu_pcie: PcieLink | None = None            # a GPU's PCIe port as its board wires it (hardware/pcie.py); None: no bound
    nic_pcie: PcieLink | None = None            # a NIC's own PCIe port (its card's `pcie`); None: no bound
    tree_jobs: int = 1                          # jobs whose aggregation trees share the switches at once
    nic_via_cpu: bool = False                   # the NICs on the CPU, reached over NVLink-C2C (machine.nic.via_cpu: GB200)
    nccl: NcclRelease = MODEL_RELEASE           # the NCCL the machine runs and whose tables price NCCL's choice, resolved
                                                # once at machine build (nccl_versions.NcclRelease, machine_models.machine_nccl)
    # session 52's two fabric facts (NICS_AS_WIRED), settled when the Cluster is built (a group view, dataclasses.replace,
    # keeps its Cluster's): the wired PCIe share (wired_gpus) and the in-network NIC line-rate cap (collectives/in_network.py)
    nics_as_wired: bool = field(default_factory=lambda: NICS_AS_WIRED)

    @property
    def nodes(self) -> int:
        return self.job_nodes or self.platform.nodes

    def _pcie_per_nic(self, gpus: int) -> tuple[float, str]:
        """(payload bytes/s, name) of the PCIe path one NIC's traffic crosses between GPU memory and the NIC: the NIC's
        own port and its GPU's port, which a GPU with several NICs (K > G, `gpus` = G) shares among them. inf where
        neither is known."""
        k, g = max(1, self.platform.nics_per_node), max(1, gpus)
        options = []
        if self.gpu_pcie is not None:
            share = min(1.0, g / k)
            options.append((self.gpu_pcie.payload_Bps * share, f"{self.gpu_pcie.label} between GPU and NIC"
                            + (f" (one GPU's port for {k // g} NICs)" if share < 1 else "")))
        if self.nic_pcie is not None:
            options.append((self.nic_pcie.payload_Bps, f"{self.nic_pcie.label} of the NIC"))
        return min(options) if options else (math.inf, "")

    @functools.cached_property
    def pcie_per_nic(self) -> tuple[float, str]:
        """_pcie_per_nic over this Cluster's gpus_per_node (a group view's ranks per node where llm/comm made one)."""
        return self._pcie_per_nic(self.gpus_per_node)

    def _nic_limit(self, pcie: tuple[float, str]) -> tuple[float, str]:
        k = max(1, self.platform.nics_per_node)
        rate = self.nic.rate_Bps(self.nic_streams, self.host_cores / k)
        name = (f"NIC line rate ({self.nic.line_rate_Bps * 8 / 1e9:g} Gb/s x {self.nic.efficiency:g} payload)"
                if rate >= self.nic.wire_limit_Bps * (1 - 1e-9) else f"host cores for TCP ({self.host_cores / k:g} per NIC)")
        return pcie if pcie[0] < rate else (rate, name)

    @functools.cached_property
    def nic_limit(self) -> tuple[float, str]:
        """(bytes/s, name) of what one NIC moves for its GPU at most: its transport (the wire's payload rate, or for
        TCP the host cores it may use) and the PCIe path to it."""
        return self._nic_limit(self.pcie_per_nic)

    @property
    def wired_gpus(self) -> int:
        """The GPUs a node wires to its K NICs (Platform.gpus_per_node), not a group view's ranks per node
        (nics_as_wired, NICS_AS_WIRED when built; False or unknown: this Cluster's gpus_per_node)."""
        return self.platform.gpus_per_node if self.nics_as_wired and self.platform.gpus_per_node else self.gpus_per_node

    @functools.cached_property
    def wired_pcie_per_nic(self) -> tuple[float, str]:
        """pcie_per_nic with the PCIe path shared as the node wires it (wired_gpus; collectives/in_network.group_nics)."""
        return self._pcie_per_nic(self.wired_gpus)

    @functools.cached_property
    def wired_nic_limit(self) -> tuple[float, str]:
        """nic_limit with the PCIe path shared as the node wires it (wired_gpus; the alltoall's per-GPU rate,
        collectives/fabric.Alltoall)."""
        return self._nic_limit(self.wired_pcie_per_nic)

    @property
    def ranks(self) -> int:
        return self.nodes * self.gpus_per_node

    @functools.cached_property
    def nccl_topology(self) -> NcclTopology:
        """What NCCL's search and tuner see of this cluster: GPUs, NVLink (from the architecture), NICs and their
        port speed, NVLink SHARP (an NVLS card) and CollNet (an aggregation card); the protocols NCCL may run (the NIC
        card's NCCL_PROTO, less LL128 across nodes where the NIC hangs off the CPU and the NCCL predates 2.27:
        nccl_constants.LL128_VIA_CPU_FROM); the tuner tables NCCL 2.28.3's, or with the opt-in (machine.nccl_tables:
        stated) the release machine.nccl states (NcclRelease.tuner)."""
        protocols = self.nic.nccl_protocols or PROTOCOLS
        if no_ll128_via_cpu(self.nic_via_cpu, self.nodes, self.nccl.stated):
            protocols = tuple(p for p in protocols if p != "LL128") or protocols
        return NcclTopology(self.arch, self.gpus_per_node, self.nodes, None, self.platform.nics_per_node,
                            self.nic.line_rate_Bps, self.nvls is not None, self.aggregation is not None, self.cpu_vendor,
                            protocols=protocols, nccl=self.nccl.tuner)
