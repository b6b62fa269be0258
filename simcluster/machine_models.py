"""A scenario machine's models, built from its cards: the NIC (with the host's TCP cost), the platform (NVLink domains
and the fabric), the multi-node Cluster every collective, DDP and LLM job prices its traffic on, one NVLink domain, and
the GPU architecture NCCL's tuner reads. Below build.py (the composition root), so the job models that need a machine's
Cluster (llm/predict.py, predict_training.py) import it from here and no circle runs through build.py."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from simcluster.cards import load_aggregation, load_collective, load_nic, load_nvls
from simcluster.collectives.cluster import Cluster
from simcluster.collectives.domain import NvlinkDomain
from simcluster.collectives.nccl_versions import NcclRelease, stated_release
from simcluster.collectives.nvls_domain import domain_nvls_rate, nvls_channels
from simcluster.errors import ModelCardError
from simcluster.hardware.nic import COST_FIELDS
from simcluster.network.builders import FabricSpec, aggregation_levels, machine_platform, nodes_within_levels
from simcluster.network.platform import Platform
from simcluster.scenario_machine import Machine


def machine_nic(machine: Machine):
    """The machine's NIC card; a TCP NIC takes its host cost per byte from the machine's host-cpu card, if any."""
    nic, card = load_nic(machine.nic.card)
    if machine.host_card is not None and nic.transport == "tcp":
        from simcluster.cards import load_host_cpu

        host, _ = load_host_cpu(machine.host_card)
        nic = dataclasses.replace(nic, **(dict.fromkeys(COST_FIELDS, 0.0) | {"cpu_s_per_byte": host.tcp_cpu_s_per_byte}))
    return nic, card


def machine_nvlink_link(machine: Machine) -> str:
    """The machine's NVLink as its one-node trust regime names it: the GPU its collective card's name (or file) names."""
    from simcluster.trust.regime import card_nvlink_link

    if machine.card is None:                 # no collective card: no GPU named, the bare link (no rows)
        return "nvlink"
    return card_nvlink_link(load_collective(machine.card)[1], machine.card)


def machine_gpu(machine: Machine) -> str:
    """The machine's GPU model as trust regimes check it (trust/regime.gpu_model): its GPU card's name, else the GPU its
    collective card names (machine_nvlink_link); '' when neither names one. A collective card naming a Grace package of
    the GPU card's die ('GB200' over the b200 card, the card that sets NCCL's architecture) names the machine: its rows
    ran on GB200, so its answers are GB200's."""
    from simcluster.trust.regime import gpu_model

    card = gpu_model(Path(machine.gpu_card).stem if machine.gpu_card else "")
    link = gpu_model(machine_nvlink_link(machine))
    return link if card and link == f"G{card}" else card or link


def network_link(machine: Machine) -> str:
    """The link a collective of the whole machine crosses, as its trust regime names it: one NVLink domain's, its
    collective card's GPU (trust/regime.nvlink_link: 'nvlink-h200', 'nvlink-gb200'), else the NIC's transport and
    fabric (trust/regime.fabric_link: 'rdma-ib', 'rdma-efa', 'rdma-roce', 'tcp')."""
    from simcluster.trust.regime import fabric_link

    if machine.domains == 1 or machine.nic is None:
        return machine_nvlink_link(machine)
    nic, card = load_nic(machine.nic.card)
    return fabric_link(nic.transport, str(card.get("name") or Path(machine.nic.card).stem))


def build_platform(machine: Machine, nvlink_Bps: float) -> Platform:
    """The machine as one Platform: every NVLink domain (one node's, or several nodes' with machine.nvlink_domain;
    ports at nvlink_Bps, the collective card's link rate) and, across domains, the fabric of the machine's NICs (a
    domain's NICs are those of its nodes). Built once per scenario machine; every job reads it."""
    spec = None
    if machine.domains > 1:
        nic, _ = machine_nic(machine)
        f = machine.fabric
        spec = FabricSpec(machine.domains, machine.nics_per_domain, nic.line_rate_Bps, f.kind, f.down_ports, f.spines,
                          f.oversubscription, f.planes, f.link_latency_s, f.switch_latency_s, f.forwarding,
                          f.spine_ports, f.tiers)
    return machine_platform(machine.domains, machine.domain_gpus, nvlink_Bps, spec)


def build_cluster(machine: Machine, intra=None, platform: Platform | None = None) -> Cluster:
    """Cards + the machine's platform -> the multi-node Cluster the fabric collectives run on."""
    intra = intra or load_collective(machine.card)[0]
    nic, _ = machine_nic(machine)
    platform = platform or build_platform(machine, intra.link_bandwidth_Bps)
    aggregation = load_aggregation(machine.aggregation_card)[0] if machine.aggregation_card else None
    if aggregation is not None and aggregation.line_rate_Bps < nic.line_rate_Bps * (1 - 1e-9):
        raise ModelCardError(f"the aggregating switch's ports run at {aggregation.line_rate_Bps * 8 / 1e9:g} Gb/s, slower than "
                             f"the NICs' {nic.line_rate_Bps * 8 / 1e9:g} Gb/s (machine.aggregation.card)",
                             where=str(machine.aggregation_card), hint="use an aggregation card of the NICs' line rate")
    if aggregation is not None and aggregation.max_levels is not None and platform.fabric is not None:
        levels = aggregation_levels(platform.fabric, machine.domains)
        if levels > aggregation.max_levels:
            raise ModelCardError(f"the aggregation tree over {machine.domains} nodes needs {levels} switch levels; the "
                                 f"card's switches build at most {aggregation.max_levels} (machine.aggregation.card)",
                                 where=str(machine.aggregation_card),
                                 hint=f"at most {nodes_within_levels(platform.fabric, aggregation.max_levels)} nodes, or "
                                      "a card whose switches build deeper trees")
    nvls, arch = None, machine_arch(machine)
    if machine.nvls_card:
        table, latency, _ = load_nvls(machine.nvls_card)
        rate = domain_nvls_rate(table, machine.domain_gpus, nvls_channels(arch, None, one_clique=False), arch)
        if rate is None:
            raise ModelCardError(f"no NVLS bandwidth for {machine.domain_gpus} GPUs per NVLink domain (has {sorted(table)}: "
                                 "the card's law carries a rate only to larger domains)", where=str(machine.nvls_card))
        nvls = (rate[0], latency)
    gpu_pcie, nic_pcie = machine_pcie(machine, nic, arch)
    return Cluster(intra, nic, platform, machine.domain_gpus, machine.host_cores, machine.nic.streams, aggregation,
                   nvls, arch=arch, cpu_vendor=machine.cpu_vendor, gpu_pcie=gpu_pcie, nic_pcie=nic_pcie,
                   nic_via_cpu=machine.nic.via_cpu, nccl=machine_nccl(machine))


def machine_nccl(machine: Machine) -> NcclRelease:
    """The NCCL the machine runs, resolved once here (nccl_versions.NcclRelease): the release machine.nccl states (None:
    none stated; scenario loading has refused malformed text) and, from machine.nccl_tables, the release whose tuner
    tables price NCCL's choice. The one reading of both keys, which the cluster, the domain, predict collective's notes
    and the answers' trust (its `opted_in`, read by build.machine_unvalidated) share."""
    return NcclRelease(stated_release(machine.nccl), machine.nccl_tables)


def domain_gpus_across(machine: Machine) -> int:
    """The GPUs of one NVLink domain where the machine has several, 0 where one: what the large-domain rule reads
    (trust/band.large_domains; the machine's mark, build.machine_unvalidated, and predict collective's note, one reading)."""
    return machine.domain_gpus if machine.domains > 1 else 0


def machine_pcie(machine: Machine, nic, arch: str):
    """(GPU side, NIC side) of the PCIe path between a GPU and its NIC (hardware/pcie.py): machine.nic.pcie where the
    scenario states it (both sides), else the GPU architecture's port as its board wires it and the NIC card's own."""
    from simcluster.hardware import pcie

    if machine.nic.pcie:
        link = pcie.parse(machine.nic.pcie)
        return link, link
    gpu = pcie.parse(pcie.GPU_PCIE[arch]) if arch in pcie.GPU_PCIE else None
    return gpu, nic.pcie


def build_domain(machine: Machine, intra=None) -> NvlinkDomain:
    """One NVLink domain of the machine (no network): its NVLink card, its NVLS card where it has one, its GPUs."""
    intra = intra or load_collective(machine.card)[0]
    nvls = load_nvls(machine.nvls_card)[:2] if machine.nvls_card else None
    return NvlinkDomain(intra, machine.domain_gpus, machine_arch(machine), nvls, machine_nccl(machine))


def machine_arch(machine: Machine) -> str:
    """The architecture NCCL's decision model (collectives/nccl_tuner.py) indexes: the GPU card's, Hopper without one."""
    if not machine.gpu_card:
        return "hopper"
    from simcluster.card_document import load_card
    from simcluster.collectives.nccl_constants import arch_of

    card = load_card(machine.gpu_card, kind="gpu")
    return arch_of(str(card.get("name", "")), card.get("machine", {}).get("arch"))
