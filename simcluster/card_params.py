"""Each model card kind's `params`, declared once (simcluster.schema, pydantic v2): every key with its unit, range and
default, the cross-field rules, an undeclared key refused. A card's reader (cards.py, storage/nvme.py) reads its params
through the declaration (card_document.declared_params) and gets typed fields in SI units (seconds, bytes, bytes/s,
core-seconds per byte); an error is one line FILE:LINE: params.KEY: why.

    card kind       declaration     reader
    nic             NIC             cards.nic_params
    host-cpu        HOST_CPU        cards.load_host_cpu
    aggregation     AGGREGATION     cards.load_aggregation
    training-step   TRAINING_STEP   cards.load_training
    ddp             DDP             cards.load_ddp
    nvls            NVLS            cards.load_nvls
    nvme            NVME            storage/nvme.load_nvme

The whole card (its kind, name, sections, no negative quantity) is documents.CARD, checked when the file is read. The
collective, op-profile and gpu cards' params are read by their models' own strict readers (collectives/registry.py,
collectives/profile.py, hardware/gpu.py).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import ConfigDict, Field, model_validator

from simcluster import units
from simcluster.schema import Choice, Count, ListOf, Nullable, Number, Parsed, Quantity, Section, Text
from simcluster.strict import MAX_RATE_Bps, MIN_RATE_Bps

MAX_SIGMA = 5.0   # a log-normal service-time spread of e^5 (150x) is far past any drive; beyond it exp() overflows
DAY_S = 86400.0


class Params(Section):
    """A card's params: every key declared, defaults read as the file would give them (in SI once read)."""

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False, frozen=True, validate_default=True)


def _quantity(parse, what: str, low: float = 0.0, high: float = float(units.MAX_QUANTITY), above: bool = False):
    return Quantity(parse, low, high, above=above, what=what, si=True)


Time = _quantity(units.parse_time, "time", high=DAY_S)                        # s, 0 allowed
PositiveTime = _quantity(units.parse_time, "time", high=DAY_S, above=True)   # s, > 0
Size = _quantity(units.parse_size, "size", above=True)                       # bytes, > 0
Rate = _quantity(units.parse_bandwidth, "bandwidth", MIN_RATE_Bps, MAX_RATE_Bps)   # bytes/s
Cost = _quantity(units.parse_cost, "CPU cost per byte", high=1.0)           # core-seconds per byte, 0 allowed
Whole = Count(1, 2**20)


class Nic(Params):
    transport: Choice("transport")
    line_rate: Rate
    efficiency: Number(0, 1, above=True)
    latency: Time
    cpu_per_byte: Cost
    cpu_per_message: Time = "0s"
    message_size: _quantity(units.parse_size, "size", 1.0, 2.0**40)
    csum_per_byte: Cost = "0s/GB"
    cpu_per_packet: Time = "0s"
    segment_size: Size = "64KiB"
    polling_cores: Number(0, 2**16) = 0
    cores_per_stream: Annotated[Any, Field(description="cores > 0, or 'none'; default by transport")] = None
    pcie: Nullable(Parsed("pcie")) = None
    call_setup: Time = "0s"

    @model_validator(mode="after")
    def _cores(self):
        value = self.cores_per_stream
        if value is not None and value != "none" and (isinstance(value, bool) or not isinstance(value, (int, float))
                                                      or not 0 < value <= 2**16):
            raise ValueError(f"cores_per_stream: expected a number of cores > 0 or 'none', got {value!r}")
        return self


NIC = Nic


class HostCpu(Params):
    cores: Nullable(Number(0, 2**20, above=True)) = None
    tcp_cpu_per_byte: _quantity(units.parse_cost, "CPU cost per byte", high=1.0, above=True)
    tcp_stack_latency: Time


HOST_CPU = HostCpu


class Aggregation(Params):
    forwarding: Choice("forwarding")
    line_rate: Rate
    op_latency: Time
    aggregation_rate: Rate
    buffer: Size = "4KiB"
    threshold_frames: Whole = 1
    frame_payload: Size = "1480B"
    frame_wire: Size = "1538B"
    trees_per_switch: Nullable(Whole) = None
    max_levels: Nullable(Whole) = None

    @model_validator(mode="after")
    def _frame(self):
        if self.frame_wire < self.frame_payload:
            raise ValueError("frame_wire: a frame on the wire is at least its payload")
        return self


AGGREGATION = Aggregation

Share = Number(0, 1)


class Phases(Params):
    forward: Share
    backward: Share
    optimizer: Share

    @model_validator(mode="after")
    def _add_up(self):
        total = self.forward + self.backward + self.optimizer
        if abs(total - 1) > 0.01:
            raise ValueError(f"forward: the shares add up to {total:.3g}, not 1")
        return self


class TrainingStep(Params):
    model: Text(300)
    image: Whole
    batch_per_gpu: Whole
    step: PositiveTime
    host: PositiveTime
    gpu: PositiveTime
    phases: Phases
    bucket_cap: Size
    grad_bytes: ListOf(Count(1, 2**50), min_len=1, max_len=1_000_000)
    step_samples: ListOf(PositiveTime, min_len=1, max_len=1_000_000)


TRAINING_STEP = TrainingStep


class Ddp(Params):
    host_per_tensor: Time
    gpu_per_tensor: Time
    overlap_slowdown: Number(0, 100)


DDP = Ddp


class Nvls(Params):
    allreduce_algbw: Annotated[dict[Annotated[int, Field(ge=1, le=1024)], Rate], Field(min_length=1, max_length=1024)]
    latency: Time


NVLS = Nvls


class Nvme(Params):
    service_time: PositiveTime
    sigma: Number(0, MAX_SIGMA)
    parallelism: Whole
    bandwidth: Rate
    unit_bandwidth: Nullable(Rate) = None          # default: bandwidth
    write_bandwidth: Nullable(Rate) = None
    capacity: Nullable(Size) = None                # read by storage/questions.py


NVME = Nvme
