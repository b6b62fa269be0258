"""The NCCL-primitives model's card parameters: `PrimitiveParams` <-> the card's `params:` mapping (unit strings,
NCCL's tuner tables per rank count, the ring ramp per rank count), every key and value checked (ModelCardError at
the key). The model itself is collectives/primitives.py."""

from __future__ import annotations

from simcluster.collectives.nccl_constants import ARCHS
from simcluster.collectives.protocol import PROTOCOLS
from simcluster.collectives.schedule import OPS
from simcluster.errors import ModelCardError
from simcluster.strict import field as card_field
from simcluster.strict import positive
from simcluster.strict import rate as strict_rate
from simcluster.units import format_bandwidth, format_size, format_time, parse_bandwidth, parse_size, parse_time


def to_params_yaml(p) -> dict:
    """`p`: a PrimitiveParams (collectives/primitives.py, which calls this; not imported here, so the two make no circle)."""
    return {"model": type(p).model_name, "ll_base_latency": format_time(p.ll_base_s),
            "ll_step_latency": format_time(p.ll_step_s), "ll_channel_bandwidth": format_bandwidth(p.ll_channel_Bps),
            "simple_base_latency": format_time(p.simple_base_s), "simple_step_latency": format_time(p.simple_step_s),
            "bus_bandwidth": format_bandwidth(p.link_bandwidth_Bps), "channels": p.channels,
            "p2p_channels": p.p2p_channels, "p2p_channels_per_peer": p.p2p_channels_per_peer,
            "host_launch_floor": format_time(p.host_floor_s), "nccl_arch": p.nccl_arch,
            **({"ll128_base_latency": format_time(p.ll128_base_s)} if p.ll128_base_s else {}),
            "ring_ramp": {n: {"time": format_time(d), "scale": format_size(w)} for n, (d, w) in p.ring_ramps.items()},
            "nccl_tuner": {n: {op: {proto: {"latency": format_time(lat), "bandwidth": format_bandwidth(bw)}
                                    for proto, (lat, bw) in protos.items()} for op, protos in per_op.items()}
                           for n, per_op in p.tuner.items()}}


PARAM_KEYS = {"model", "ll_base_latency", "ll_step_latency", "ll_channel_bandwidth", "simple_base_latency",
              "simple_step_latency", "bus_bandwidth", "channels", "p2p_channels", "p2p_channels_per_peer",
              "host_launch_floor", "ring_ramp", "nccl_tuner", "nccl_arch", "ll128_base_latency"}


def from_params_yaml(cls: type, params: dict, where: str):
    """A `cls` (PrimitiveParams) from a card's params mapping."""
    from simcluster.strict import known_keys

    known_keys(params, PARAM_KEYS, where, ModelCardError)

    def get(key, parse):
        return card_field(params, key, where, parse, ModelCardError)

    def count(v):
        if isinstance(v, bool) or int(v) != v or not 1 <= int(v) <= 1024:
            raise ValueError("expected a whole number from 1 to 1024")
        return int(v)

    def rate(v):
        return strict_rate(parse_bandwidth(v))

    optional = {name: get(key, parse) for name, key, parse in (
        ("ll_step_s", "ll_step_latency", parse_time), ("simple_step_s", "simple_step_latency", parse_time),
        ("p2p_channels", "p2p_channels", count), ("p2p_channels_per_peer", "p2p_channels_per_peer", count),
        ("ring_ramps", "ring_ramp", lambda raw: _ring_ramps(raw, f"{where}.ring_ramp")),
        ("tuner", "nccl_tuner", lambda raw: _tuner(raw, f"{where}.nccl_tuner")),
        ("nccl_arch", "nccl_arch", _arch), ("ll128_base_s", "ll128_base_latency", parse_time))
        if key in params}
    return cls(get("ll_base_latency", parse_time), get("ll_channel_bandwidth", rate), get("simple_base_latency", parse_time),
               get("bus_bandwidth", rate), get("channels", count), get("host_launch_floor", parse_time), **optional)


def _arch(v) -> str:
    if v not in ARCHS:
        raise ValueError(f"expected one of {', '.join(ARCHS)}")
    return v


def _tuner(raw, where: str) -> dict:
    """NCCL's tuner tables: {ranks: {op: {protocol: {latency, bandwidth}}}}; an older card holds one table
    (op -> protocol), kept as 'any rank count' (0)."""
    if not isinstance(raw, dict):
        raise ModelCardError("expected a mapping of rank count -> op -> protocol -> {latency, bandwidth}", where=where)

    def table(protos, key):
        if not isinstance(protos, dict):
            raise ModelCardError("expected a mapping of op -> protocol -> {latency, bandwidth}", where=key)
        out = {}
        for op, per_op in protos.items():
            if op not in OPS or not isinstance(per_op, dict):
                raise ModelCardError(f"{str(op)[:30]!r}: expected a collective ({', '.join(OPS)}) mapped to protocols",
                                     where=key)
            bad = [p for p in per_op if p not in PROTOCOLS]
            if bad:
                raise ModelCardError(f"{op}: unknown protocol {str(bad[0])[:20]!r}", where=key,
                                     hint=f"one of {', '.join(PROTOCOLS)}")
            out[op] = {p: (card_field(v, "latency", f"{key}.{op}.{p}", parse_time, ModelCardError),
                           card_field(v, "bandwidth", f"{key}.{op}.{p}", lambda b: strict_rate(parse_bandwidth(b)),
                                      ModelCardError)) for p, v in per_op.items()}
        return out

    if any(str(k).isdigit() for k in raw) and not all(str(k).isdigit() for k in raw):
        raise ModelCardError("expected every key to be a rank count (or, an older card, every key a collective)",
                             where=where)
    if all(str(k).isdigit() for k in raw):
        return {int(n): table(t, f"{where}.{n}") for n, t in raw.items()}
    return {0: table(raw, where)}


def _ring_ramps(raw, where: str) -> dict[int, tuple[float, float]]:
    """The ring ramp per rank count, {ranks: {time: D, scale: W}}, as (seconds, bytes)."""
    if not isinstance(raw, dict):
        raise ModelCardError("expected a mapping of rank count -> {time, scale}", where=where)
    out = {}
    for n, doc in raw.items():
        key = f"{where}.{n}"
        if not isinstance(doc, dict) or not str(n).isdigit():
            raise ModelCardError("expected a rank count mapped to {time, scale}", where=key)
        out[int(n)] = (card_field(doc, "time", key, parse_time, ModelCardError),
                       card_field(doc, "scale", key, lambda v: positive(parse_size(v)), ModelCardError))
    return out
