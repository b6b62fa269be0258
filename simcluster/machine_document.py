"""The scenario's `machine:` section, declared once (simcluster.schema, pydantic v2): its blocks (nic, fabric, host,
aggregation, nvls, gpu) with their types, units, ranges and defaults, and the rules across them (the GPUs and NICs a
machine may have, the NVLink domain's shape, the NIC and fabric a machine of several domains needs, the switch tiers a
fabric needs). scenario._machine reads the section through this declaration (ScenarioReader.declared) and builds the
typed Machine (scenario_machine.py) from it; what it adds is the filesystem (a card path resolved to a file) and a
host card's core count. An undeclared key is refused (a typo would be ignored); an error is one line FILE:LINE: KEY.

The vocabularies and formats that belong to a model are given by the reader at validation, so this declaration does
not import the model:

    context key     what                                                  owner
    fabric_kind     the fabric topologies                                 network/builders.KINDS
    forwarding      the switches' forwarding modes                        network/builders.FORWARDING
    cpu_vendor      the hosts' CPU vendors as NCCL's tuner reads them     collectives/nccl_constants.CPU_VENDORS
    pcie            a PCIe link 'gen5x16' -> its canonical text           hardware/pcie.parse
    nccl            an NCCL version '2.27.3' -> 'MAJOR.MINOR[.PATCH]'     collectives/tree_kernel.scenario_nccl
    nccl_tables     whose tuner tables price NCCL's choice                collectives/nccl_versions.NCCL_TABLES
    fabric_tiers    (domains, NICs per domain, Fabric) -> None, or        network/builders.tiers_needed
                    (why, hint) when the stated tiers cannot join the leaves
"""

from __future__ import annotations

from typing import Annotated, Any, Optional

from pydantic import AfterValidator, ValidationInfo, model_validator

from simcluster import units
from simcluster.documents import MAX_GPUS, MAX_GPUS_PER_NODE
from simcluster.errors import SimclusterError
from simcluster.schema import Choice, Count, Flag, Hinted, Number, OneOf, Parsed, Section
from simcluster.strict import short

MAX_NICS_PER_NODE = 64      # NICs of one node (AWS p5: 32); nodes x NICs is bounded by MAX_GPUS (the fabric is O(NICs))
MAX_COUNT = 2**40           # a fabric's ports, spines or planes: a bound that keeps arithmetic finite
GPU_CLOCKS = ("fixed", "duty")   # machine.gpu.clock: the card's reference clock, or the step's own (llm/clock.py)

def _card_path(value) -> str:
    if not isinstance(value, str) or not 0 < len(value) <= 4096:
        raise ValueError("expected the path of a model card")
    return value


CardPath = Annotated[Any, AfterValidator(_card_path)]


def _time(high: float, hint: str | None = None):
    """A time with its unit ('50us', '1ms'; 0 alone needs none) from 0 s to `high` s, as seconds."""
    def seconds(value):
        try:
            si = units.parse_time(value)
        except SimclusterError as exc:
            raise Hinted(exc.message, exc.hint) from None
        if not 0.0 <= si <= high:
            raise Hinted(f"expected a time from 0s to {high:g}s, got {si:g} s", hint)
        return si
    return Annotated[Any, AfterValidator(seconds)]


def _ratio(value) -> float:
    """A ratio >= 1 given as a number (3) or as 'N:1' (3:1, 1.5:1), as network engineers write oversubscription."""
    written = value
    if isinstance(value, str) and value.count(":") == 1:
        a, b = value.split(":")
        try:
            value = float(a) / float(b)
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"expected a ratio such as 3 or '3:1', got {short(written)}") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 1.0 <= value <= 1e6:
        raise ValueError(f"expected a ratio >= 1 such as 3 or '3:1' (1 = non-blocking), got {short(written)}")
    return float(value)


Ratio = Annotated[Any, AfterValidator(_ratio)]
Latency = _time(1.0)


class Nic(Section):
    card: CardPath
    per_node: Count(1, MAX_NICS_PER_NODE)
    streams: Count(1, 1024) = 1
    pcie: Optional[Parsed("pcie")] = None      # noqa: UP045 - the narrowest PCIe link between a GPU and its NIC, as built
    via_cpu: Flag = False                       # the NICs hang off the CPU, which the GPU reaches over NVLink-C2C (GB200)


class Fabric(Section):
    kind: Choice("fabric_kind")
    down_ports: Count(1, MAX_COUNT) = 32
    spines: Count(1, MAX_COUNT) = 16
    oversubscription: Ratio = 1.0
    planes: Count(1, MAX_COUNT) = 1
    link_latency: Latency = 0.0                 # seconds
    switch_latency: Latency = 0.0               # seconds
    forwarding: Choice("forwarding") = "cut-through"
    spine_ports: Optional[Count(2, 4096)] = None   # noqa: UP045 - ports of a spine switch; None: 2 x down_ports
    tiers: Optional[Count(1, 8)] = None            # noqa: UP045 - switch tiers; None: the fewest that hold the machine


class Host(Section):
    cores: Number(1, 2**16) = None              # absent: the host card's, else 64
    card: CardPath = None                       # a host-cpu card
    cpu_vendor: Choice("cpu_vendor") = "intel"
    os_jitter: Optional[_time(10.0, "the mean time one host loses to daemons and interrupts per step, "  # noqa: UP045
                              "e.g. 50us or 1ms")] = None   # seconds per GPU and step (llm/scaleout.py)


class CardOnly(Section):
    card: CardPath


class Gpu(Section):
    card: CardPath
    clock: OneOf(*GPU_CLOCKS) = "fixed"
    speed_spread: Optional[Number(0.0, 0.5)] = None   # noqa: UP045 - the GPUs' speed spread (llm/scaleout.py)


class Machine(Section):
    card: Optional[CardPath] = None             # noqa: UP045 - the collective card of one NVLink domain
    gpus_per_node: Count(1, MAX_GPUS_PER_NODE) = 1
    nodes: Count(1, MAX_GPUS) = 1               # at most MAX_GPUS // gpus_per_node (below)
    nvlink_domain: Optional[Count(1, MAX_GPUS_PER_NODE)] = None   # noqa: UP045 - GPUs on one NVLink fabric; None: a node's
    nic: Optional[Nic] = None                   # noqa: UP045
    fabric: Optional[Fabric] = None             # noqa: UP045
    host: Optional[Host] = None                 # noqa: UP045
    aggregation: Optional[CardOnly] = None      # noqa: UP045 - null switches it off (what-if variants)
    nvls: Optional[CardOnly] = None             # noqa: UP045 - NVLink SHARP in the node's NVSwitches
    gpu: Optional[Gpu] = None                   # noqa: UP045
    nccl: Optional[Parsed("nccl")] = None      # noqa: UP045 - the NCCL version it runs ('2.28.9'): keys NCCL's tree-kernel ceiling
    nccl_tables: Choice("nccl_tables") = "2.28.3"   # NCCL's tuner tables: 2.28.3's, or 'stated' (machine.nccl's; opt-in)

    @property
    def domain_gpus(self) -> int:
        return self.nvlink_domain or self.gpus_per_node

    @model_validator(mode="after")
    def _shape(self, info: ValidationInfo):
        gpus, nodes, domain = self.gpus_per_node, self.nodes, self.domain_gpus
        if nodes > MAX_GPUS // gpus:
            raise ValueError(f"nodes: expected an integer from 1 to {MAX_GPUS // gpus:,}, got {nodes}")
        if self.nvlink_domain is not None:
            if domain < gpus:
                raise ValueError(f"nvlink_domain: expected an integer from {gpus} to {MAX_GPUS_PER_NODE:,}, got {domain}")
            if domain % gpus:
                raise Hinted(f"nvlink_domain: {domain} GPUs is not a whole number of nodes of {gpus} GPUs",
                             f"a multiple of gpus_per_node, e.g. {gpus * max(1, domain // gpus)} or {gpus * (domain // gpus + 1)}")
            if domain > nodes * gpus or (nodes * gpus) % domain:
                raise Hinted(f"nvlink_domain: the machine's {nodes * gpus} GPUs ({nodes} nodes x {gpus}) are not a whole "
                             f"number of {domain}-GPU NVLink domains", f"nodes: a multiple of {domain // gpus}")
        domains = nodes * gpus // domain
        for name in ("nic", "fabric"):
            if domains > 1 and getattr(self, name) is None:
                raise ValueError(f": missing key '{name}': a machine of {domains} NVLink domains needs a NIC card and a fabric")
        if self.nic is not None and nodes * self.nic.per_node > MAX_GPUS:
            raise ValueError(f"nic.per_node: {nodes} nodes x {self.nic.per_node} NICs is {nodes * self.nic.per_node:,} "
                             f"NICs; at most {MAX_GPUS:,} are modelled (the fabric model is O(NICs))")
        if self.fabric is not None and self.fabric.tiers is not None and domains >= 2 and self.nic is not None:
            rule = (info.context or {}).get("fabric_tiers")
            if rule is None:
                raise ValueError("fabric.tiers: the reader gave no fabric_tiers rule to check against")
            refused = rule(domains, self.nic.per_node * (domain // gpus), self.fabric)
            if refused is not None:
                raise Hinted(f"fabric.tiers: {refused[0]}", refused[1])
        return self


MACHINE = Machine
