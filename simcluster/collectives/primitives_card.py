"""The NCCL-primitives model's card parameters: `PrimitiveParams` <-> the card's `params:` mapping (unit strings,
NCCL's tuner tables per rank count, the ring ramp per rank count), every key and value checked (ModelCardError at
the key). The model itself is collectives/primitives.py."""

from __future__ import annotations

from simcluster import card_document
from simcluster.collectives import card_params
from simcluster.collectives.nccl_constants import ARCHS
from simcluster.collectives.protocol import PROTOCOLS
from simcluster.collectives.schedule import OPS
from simcluster.units import format_bandwidth, format_size, format_time


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


def from_params_yaml(cls: type, params: dict, where: str):
    """A `cls` (PrimitiveParams) from a card's params mapping (`where`: its file), read through card_params.Primitives;
    a key the card leaves out, or gives as null, keeps the model's default."""
    p = card_document.declared(params, where, card_params.Primitives, protocol=PROTOCOLS, op=OPS, arch=ARCHS)
    tuner = {int(n): {op: {proto: (v.latency, v.bandwidth) for proto, v in protos.items()} for op, protos in table.items()}
             for n, table in (p.nccl_tuner or {}).items()}   # an absent or null key: None, the model's default kept
    optional = {"ll_step_s": p.ll_step_latency, "simple_step_s": p.simple_step_latency, "p2p_channels": p.p2p_channels,
                "p2p_channels_per_peer": p.p2p_channels_per_peer, "nccl_arch": p.nccl_arch, "ll128_base_s": p.ll128_base_latency,
                "ring_ramps": None if p.ring_ramp is None else {int(n): (r.time, r.scale) for n, r in p.ring_ramp.items()},
                "tuner": None if p.nccl_tuner is None else tuner}
    return cls(p.ll_base_latency, p.ll_channel_bandwidth, p.simple_base_latency, p.bus_bandwidth, p.channels,
               p.host_launch_floor, **{name: value for name, value in optional.items() if value is not None})
