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
    gpu             GPU             hardware/gpu.gpu_params (its clock block CLOCK: hardware/gpu_clock.clock_params)
    collective      collectives/card_params.py (its own declarations: ChunkedRing / Primitives by params.model,
                    MachineTerms a machine card's terms, OpProfiles the per-op profiles)

The whole card (its kind, name, sections, no negative quantity) is documents.CARD, checked when the file is read.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, ConfigDict, Field, model_validator

from simcluster import units
from simcluster.schema import Choice, Count, Hinted, ListOf, Nullable, Number, OneOf, Parsed, Quantity, Section, Text
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


class UdpReceiver(Params):
    """A UDP card's receive side: the receiver's count model (hardware/nic.UdpReceiver)."""
    cpu_per_datagram: Time
    cpu_per_wakeup: Time
    cpu_per_fragment: Time = "0s"
    cpu_per_byte: Cost = "0s/GB"
    wakeup_latency: Time


class Verbs(Params):
    """An RDMA card's per-operation host cost (hardware/verbs.VerbsCost)."""
    completion: Choice("completion") = "polled"
    cpu_per_wqe: Time
    cpu_per_doorbell: Time
    cpu_per_completion: Time = "0s"
    cpu_per_inline_byte: Cost = "0s/GB"
    wqes_per_doorbell: Number(1, 2**16) = 1
    signal_every: Number(1, 2**16) = 1
    inline_max: _quantity(units.parse_size, "size", 0.0, 2.0**16) = 0   # bytes, a size like mtu (60B), 0 allowed
    mtu: Nullable(Size) = None                   # datagram transport: bytes per WQE; none: one WQE per message


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
    step_operations: Number(1, 16) = 1   # network operations on one NCCL network step's critical path (hardware/nic.py)
    eager_max_size: Nullable(Size) = None   # largest message sent without waiting for the receiver's buffer (EFA, RDMA)
    nccl_protocols: Nullable(ListOf(OneOf("LL", "LL128", "Simple"), min_len=1, max_len=3)) = None   # the NCCL protocols
    # its network plugin lets NCCL run (aws-ofi-nccl sets NCCL_PROTO=simple on p4d / p4de); none: all three
    cpu_per_ack: Time = "0s"                    # TCP: per ACK of the count model's delayed-ACK rule
    cpu_per_split_datagram: Time = "0s"         # UDP: per datagram cut into IP fragments
    cpu_per_fragment: Time = "0s"               # UDP: per IP fragment at MTU 1500
    ack_rule: Choice("ack_rule") = "delayed"    # TCP: acks(m) by the count model (delayed) or a batching rule (tso-*)
    receiver: Nullable(UdpReceiver) = None      # UDP: the receive side's count model; none: priced as the send side
    verbs: Nullable(Verbs) = None               # RDMA: the verbs' cost per operation (hardware/verbs.py)

    @model_validator(mode="after")
    def _cores(self):
        """cores_per_stream's form; which terms a transport may have is NicParams' rule (hardware/nic.py, read by
        cards.nic_params with the key's line)."""
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


# ---- the GPU card (hardware/gpu.py): precisions, FLOP rates and the clock block are the GPU model's (Choice, Parsed)

Efficiency = Number(1e-3, 1.0)


def _head_dim(value) -> int:
    if isinstance(value, bool) or not str(value).isdigit() or int(value) < 1:
        raise ValueError(f"head_dim {value!r} is not a whole number >= 1")
    return int(value)


HeadDimTable = Annotated[dict[Annotated[Any, AfterValidator(_head_dim)], Efficiency], Field(min_length=1, max_length=64)]


class Gemm(Params):
    tile_m: Count(1, 2**16)
    tile_n: Count(1, 2**16)
    efficiency: Annotated[dict[Choice("dtype"), Efficiency], Field(max_length=16)]
    k_ramp: Number(0, 1e18)
    wave_weight: Number(0, 1)
    split_k: OneOf("none", "cublas") = "none"   # cublas: an output of few tiles splits K over the idle SMs (hardware/gpu.py)
    epilogue: OneOf("none", "hbm") = "none"     # hbm: each wave's output tiles written at the HBM rate (hardware/gpu.py)
    call_time: Nullable(Time) = None            # a fixed time per GEMM call, not per wave (hardware/gpu.py); absent: 0


class Attention(Params):
    efficiency_fwd: HeadDimTable
    efficiency_bwd: HeadDimTable
    seq_half_fwd: Number(0, 1e18)
    seq_half_bwd: Number(0, 1e18)
    gqa_bwd_bytes_per_element: Number(0, 1e18) = 0.0
    dropout_elements_per_s_fwd: Nullable(Number(1e6, 1e18)) = None     # both or neither (absent: dropout not priced)
    dropout_elements_per_s_bwd: Nullable(Number(1e6, 1e18)) = None

    @model_validator(mode="after")
    def _both_or_neither(self):
        if (self.dropout_elements_per_s_fwd is None) != (self.dropout_elements_per_s_bwd is None):
            missing = "fwd" if self.dropout_elements_per_s_fwd is None else "bwd"
            raise ValueError(f"dropout_elements_per_s_{missing}: missing: give both dropout rates or neither")
        return self


class Memory(Params):
    ramp: _quantity(units.parse_size, "size")


class CommOverlap(Params):
    compute_slowdown: Number(0.0, 0.95)
    comm_rate: Number(0.01, 1.0)
    source: Text(2000) = ""   # absent: "" (a card written by gpu_params_yaml carries none)


def _suffixed(unit: str, scale: float, low: float, high: float):
    """A number written with its unit as the clock block writes it ("1980MHz", "700W"), from `low` to `high` in that
    unit; the value in SI (Hz, W)."""
    def si(value) -> float:
        text = str(value).strip()
        if isinstance(value, bool) or not text.endswith(unit):
            raise Hinted(f"{value!r} is not a quantity in {unit}", f'write e.g. "700{unit}"')
        try:
            number = float(text[: -len(unit)])
        except ValueError:
            raise ValueError(f"{value!r} is not a quantity in {unit}") from None
        if not low <= number <= high:
            raise ValueError(f"{value!r} is outside [{low:g}, {high:g}] {unit}")
        return number * scale
    return Annotated[Any, AfterValidator(si)]


CLOCK_EXPONENTS = (0.5, 4.0)   # compute power ~ f^exponent: measured 1.33 (H100), 1.70 (H200); voltage scaling gives <= 3
MHz = _suffixed("MHz", 1e6, 100, 5000)       # Hz once read
Watts = _suffixed("W", 1.0, 0, 5000)          # W


class Duty(Params):
    compute: Number(0, 1)
    memory: Number(0, 1)


class Clock(Params):
    """The power-limited SM clock (hardware/gpu_clock.py: its equations; ClockParams holds the rules across these keys:
    reference_clock <= max_clock, idle + memory power below the cap, the reference clock the clock of reference_duty)."""

    max_clock: MHz
    reference_clock: MHz
    reference_duty: Duty
    power_cap: Watts
    idle_power: Watts
    compute_power: Watts
    memory_power: Watts
    exponent: Number(*CLOCK_EXPONENTS)
    clock_share: Number(0, 1)
    source: Text(4096) = ""


class Gpu(Params):
    peak_flops: Annotated[dict[Choice("dtype"), Parsed("flops")], Field(min_length=1, max_length=16)]
    hbm_bandwidth: Rate
    hbm_peak: Nullable(Rate) = None            # default: hbm_bandwidth
    hbm_capacity: Size
    launch: Time
    gemm_launch: Nullable(Time) = None         # default: launch
    sm_count: Count(1, 2**16)
    gemm: Gemm
    attention: Attention
    memory: Memory
    clock: Nullable(Parsed("clock", of=Clock)) = None      # built by hardware/gpu_clock.clock_params
    comm_overlap: Nullable(CommOverlap) = None

    @model_validator(mode="after")
    def _bf16(self):
        if "bf16" not in self.peak_flops:
            raise ValueError("peak_flops: a bf16 peak is required (MFU and attention are priced in bf16)")
        return self


GPU = Gpu
CLOCK = Clock
