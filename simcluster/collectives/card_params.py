"""The collective card's params, declared once (simcluster.card_params' way: pydantic v2 through simcluster.schema,
every key with its unit and range, an undeclared key refused, SI units once read): a model's params (ChunkedRing,
Primitives; by params.model: COLLECTIVE), a machine card's terms (MachineTerms) and per-op profiles (OpProfiles). The
collective, protocol and architecture names are the collective model's (schema.Choice). Read through
card_document.declared by chunked_ring.py, primitives_card.py, machine.py and profile.py.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, Field, model_validator

from simcluster import units
from simcluster.card_params import Params, Rate, Size, Time
from simcluster.schema import Choice, Count, ListOf, Nullable, Number, OneOf, Text


def _rank_count(value) -> int:
    if isinstance(value, bool) or not str(value).isdigit() or not 0 <= int(value) <= 2**20:
        raise ValueError(f"{str(value)[:20]!r} is not a rank count")
    return int(value)


RankCount = Annotated[Any, AfterValidator(_rank_count)]


class Protocol(Params):
    base_latency: Time
    step_latency: Time
    bandwidth_fraction: Number(0, 1e3, above=True)
    chunk: Size


class ChunkedRing(Params):
    model: OneOf("chunked-ring") = "chunked-ring"
    link_bandwidth: Rate
    protocols: Annotated[dict[Choice("protocol"), Protocol], Field(min_length=1, max_length=8)]

    @model_validator(mode="after")
    def _simple(self):
        if "Simple" not in self.protocols:
            raise ValueError("protocols: the Simple protocol is required (the fabric layer's step latency)")
        return self


class LatencyBandwidth(Params):
    latency: Time
    bandwidth: Rate


class Ramp(Params):
    time: Time
    scale: Size


OpTable = dict[Choice("op"), dict[Choice("protocol"), LatencyBandwidth]]      # op -> protocol -> NCCL's model


class Primitives(Params):
    model: OneOf("nccl-primitives")
    ll_base_latency: Time
    ll_step_latency: Nullable(Time) = None
    ll_channel_bandwidth: Rate
    simple_base_latency: Time
    simple_step_latency: Nullable(Time) = None
    bus_bandwidth: Rate
    channels: Count(1, 1024)
    p2p_channels: Nullable(Count(1, 1024)) = None
    p2p_channels_per_peer: Nullable(Count(1, 1024)) = None
    host_launch_floor: Time
    ring_ramp: Nullable(Annotated[dict[RankCount, Ramp], Field(max_length=4096)]) = None
    nccl_tuner: Nullable(Annotated[dict[RankCount, OpTable], Field(max_length=4096)]) = None   # ranks (0: any) -> table
    nccl_arch: Nullable(Choice("arch")) = None
    ll128_base_latency: Nullable(Time) = None

    @model_validator(mode="before")
    @classmethod
    def _one_table_form(cls, value):
        """An older card holds one tuner table (op -> protocol): kept as 'any rank count' (0)."""
        tuner = value.get("nccl_tuner") if isinstance(value, dict) else None
        if isinstance(tuner, dict) and tuner:
            ranks = [str(k).isdigit() for k in tuner]
            if any(ranks) and not all(ranks):
                raise ValueError("nccl_tuner: expected every key to be a rank count (or, an older card, every key a "
                                 "collective)")
            if not any(ranks):
                return {**value, "nccl_tuner": {0: tuner}}
        return value


def _offset(value) -> float:
    text = str(value).strip()
    try:
        seconds = -units.parse_time(text[1:]) if text.startswith("-") else units.parse_time(text)
    except units.UnitError as exc:
        raise ValueError(exc.message) from None
    if abs(seconds) > 1e-3:
        raise ValueError("a latency offset is within +-1ms")
    return seconds


class MachineTerms(Params):
    kind_card: Text(4096)                     # relative to the machine card's folder
    launch: OneOf("cuda_graph", "host")
    latency_offset: Annotated[Any, AfterValidator(_offset)]      # seconds, signed
    host_launch_floor: Time


Factor = Number(1e-3, 1e3)   # measured / model at one size: a real profile is within 0.5-2x


class Profile(Params):
    ranks: Count(1, 2**20)
    launch: OneOf("cuda_graph", "host")
    source: Text(4096) = ""
    measured_over_model: Annotated[dict[Choice("op"), Annotated[dict[Size, Factor], Field(min_length=1)]],
                                   Field(max_length=16)]


class OpProfiles(Params):
    op_profiles: ListOf(Profile, max_len=1024)


COLLECTIVE = {"chunked-ring": ChunkedRing, "nccl-primitives": Primitives}
