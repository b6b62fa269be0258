"""The machine a scenario describes, typed: its nodes and GPUs, NICs, fabric, cards and NVLink domain (read by
scenario.py; every model and job takes this view of it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class NicSpec:
    card: Path
    per_node: int
    streams: int
    pcie: str | None = None        # the PCIe link between a GPU and its NIC as built ('gen5x16'); None: from the cards
    via_cpu: bool = False          # the NICs on the CPU, reached over NVLink-C2C (GB200 trays): NCCL's GPU-NIC path PHB / P2C


@dataclass(frozen=True)
class FabricConfig:
    kind: str
    down_ports: int
    spines: int
    oversubscription: float
    planes: int
    link_latency_s: float
    switch_latency_s: float
    forwarding: str
    spine_ports: int | None = None  # ports of a spine switch; None: 2 x down_ports
    tiers: int | None = None        # switch tiers; None: the fewest that hold the machine


@dataclass(frozen=True)
class Machine:
    card: Path | None             # the collective card of one node's NVLink domain (collectives, training)
    gpus_per_node: int
    nodes: int
    nic: NicSpec | None = None
    fabric: FabricConfig | None = None
    host_cores: float = 64.0
    aggregation_card: Path | None = None
    nvls_card: Path | None = None
    gpu_card: Path | None = None   # a GPU card (models/gpu/), for llm_training jobs
    host_card: Path | None = None  # a host-cpu card: its TCP cost per byte replaces a TCP NIC card's
    cpu_vendor: str = "intel"      # the hosts' CPU, as NCCL's tuner reads it (collectives/nccl_tuner.py)
    gpu_clock: str = "fixed"       # "fixed": the card's reference clock; "duty": the step's own (llm/clock.py)
    nvlink_domain: int = 0         # GPUs on one NVLink fabric (GB200 NVL72: 72, several nodes); 0 = one node's
    gpu_speed_spread: float | None = None   # machine.gpu.speed_spread: the GPUs' speed spread (llm/scaleout.py); None: fitted default
    os_jitter_s: float | None = None        # machine.host.os_jitter: mean OS jitter per GPU and step J (llm/scaleout.py); None: shipped 0
    nccl: str | None = None                 # machine.nccl: the NCCL version, 'MAJOR.MINOR[.PATCH]' (tree_kernel.py); None: the model's
    nccl_tables: str = "2.28.3"             # machine.nccl_tables: NCCL's tuner tables, 2.28.3's or 'stated' (nccl_versions.py)

    @property
    def domain_gpus(self) -> int:
        """GPUs of one NVLink domain: what NCCL (MNNVL) and the models treat as one node."""
        return self.nvlink_domain or self.gpus_per_node

    @property
    def domains(self) -> int:
        """NVLink domains of the machine: the 'nodes' the network joins."""
        return self.nodes * self.gpus_per_node // self.domain_gpus

    @property
    def nics_per_domain(self) -> int:
        return self.nic.per_node * (self.domain_gpus // self.gpus_per_node) if self.nic else 0
