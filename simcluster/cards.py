"""Model cards: YAML files of fitted parameters with units, valid range, fit error, provenance.

Quantities are unit strings in the file ("11.8us", "360GB/s", "1MiB") and SI floats in code.
Loading is strict: a missing or unknown key is a ModelCardError naming the file and key.
"""

from __future__ import annotations

import math
from pathlib import Path

import yaml

from simcluster.collectives.model import CollectiveParams
from simcluster.collectives.primitives import PrimitiveParams
from simcluster.collectives.profile import OpProfile
from simcluster.collectives.protocol import PROTOCOLS, ProtocolParams
from simcluster.collectives.schedule import OPS
from simcluster.errors import ModelCardError, UnitError
from simcluster.hardware.nic import TRANSPORTS, NicParams
from simcluster.hardware.switch import FORWARDING, AggregationParams
from simcluster.units import (
    format_bandwidth,
    format_cost,
    format_size,
    format_time,
    parse_bandwidth,
    parse_cost,
    parse_size,
    parse_time,
)

CARD_KEYS = {"kind", "name", "description", "machine", "params", "valid_range", "fit", "provenance"}


def load_yaml(path: str | Path, error=ModelCardError) -> dict:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise error(f"cannot read: {exc.strerror or exc}", where=str(path)) from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f"line {mark.line + 1}: " if mark else ""
        raise error(f"{line}not valid YAML ({getattr(exc, 'problem', exc)})", where=str(path)) from None
    if not isinstance(doc, dict):
        raise error("expected a mapping at the top level", where=str(path))
    return doc


def _get(doc: dict, key: str, where: str, parse=None):
    if key not in doc:
        raise ModelCardError(f"missing key '{key}'", where=where)
    if parse is None:
        return doc[key]
    try:
        return parse(doc[key])
    except UnitError as exc:
        raise ModelCardError(f"key '{key}': {exc.one_line()}", where=where) from None
    except (TypeError, ValueError):
        raise ModelCardError(f"key '{key}': {doc[key]!r} is not a valid value", where=where) from None


def load_card(path: str | Path, kind: str | None = None) -> dict:
    """Read a card and check its top-level keys; `kind` asserts what it must be."""
    doc = load_yaml(path)
    unknown = set(doc) - CARD_KEYS
    if unknown:
        raise ModelCardError(f"unknown key '{sorted(unknown)[0]}'", where=str(path),
                             hint=f"known keys: {', '.join(sorted(CARD_KEYS))}")
    if kind and doc.get("kind") != kind:
        raise ModelCardError(f"is a {doc.get('kind')!r} card, expected a {kind!r} card", where=str(path))
    return doc


def collective_params(card: dict, where: str) -> CollectiveParams:
    params = _get(card, "params", where)
    if params.get("model") == "nccl-primitives":
        return _primitive_params(params, f"{where}: params")
    protos = {}
    for name, proto in _get(params, "protocols", f"{where}: params").items():
        if name not in PROTOCOLS:
            raise ModelCardError(f"params.protocols: unknown protocol {name!r}", where=where,
                                 hint=f"one of {', '.join(PROTOCOLS)}")
        key = f"{where}: params.protocols.{name}"
        protos[name] = ProtocolParams(
            name, _get(proto, "base_latency", key, parse_time), _get(proto, "step_latency", key, parse_time), float(_get(proto, "bandwidth_fraction", key)),
            _get(proto, "chunk", key, parse_size))
    return CollectiveParams(_get(params, "link_bandwidth", f"{where}: params", parse_bandwidth), protos)


def load_collective(path: str | Path) -> tuple[CollectiveParams, dict]:
    card = load_card(path, kind="collective")
    return collective_params(card, str(path)), card


def _primitive_params(params: dict, key: str) -> PrimitiveParams:
    def table(protos: dict) -> dict:
        return {op: {p: (parse_time(v["latency"]), parse_bandwidth(v["bandwidth"])) for p, v in per_op.items()}
                for op, per_op in protos.items()}

    raw = params.get("nccl_tuner") or {}
    # ranks -> op -> protocol; an older card holds one table (op -> protocol), kept as "any rank count" (0)
    tuner = {int(n): table(t) for n, t in raw.items()} if all(str(k).isdigit() for k in raw) else {0: table(raw)}
    optional = {name: _get(params, field, key, parse) for name, field, parse in (
        ("ll_step_s", "ll_step_latency", parse_time), ("simple_step_s", "simple_step_latency", parse_time),
        ("p2p_channels", "p2p_channels", int), ("p2p_channels_per_peer", "p2p_channels_per_peer", int),
        ("ring_ramps", "ring_ramp", lambda raw: ring_ramps(raw, f"{key}.ring_ramp")))
        if field in params}
    if "op_profiles" in params:
        optional["profiles"] = op_profiles(params["op_profiles"], f"{key}.op_profiles")
    return PrimitiveParams(_get(params, "ll_base_latency", key, parse_time), _get(params, "ll_channel_bandwidth", key, parse_bandwidth),
                           _get(params, "simple_base_latency", key, parse_time), _get(params, "bus_bandwidth", key, parse_bandwidth),
                           int(_get(params, "channels", key)), _get(params, "host_launch_floor", key, parse_time), tuner,
                           **optional)


def collective_params_yaml(params: CollectiveParams | PrimitiveParams) -> dict:
    if isinstance(params, PrimitiveParams):
        return {"model": "nccl-primitives", "ll_base_latency": format_time(params.ll_base_s),
                "ll_step_latency": format_time(params.ll_step_s),
                "ll_channel_bandwidth": format_bandwidth(params.ll_channel_Bps),
                "simple_base_latency": format_time(params.simple_base_s),
                "simple_step_latency": format_time(params.simple_step_s),
                "bus_bandwidth": format_bandwidth(params.link_bandwidth_Bps), "channels": params.channels,
                "p2p_channels": params.p2p_channels, "p2p_channels_per_peer": params.p2p_channels_per_peer,
                "host_launch_floor": format_time(params.host_floor_s),
                "ring_ramp": {n: {"time": format_time(d), "scale": format_size(w)} for n, (d, w) in params.ring_ramps.items()},
                "nccl_tuner": {n: {op: {p: {"latency": format_time(lat), "bandwidth": format_bandwidth(bw)}
                                        for p, (lat, bw) in protos.items()} for op, protos in per_op.items()}
                               for n, per_op in params.tuner.items()}} | (
                {"op_profiles": op_profiles_yaml(params.profiles)} if params.profiles else {})
    return {
        "link_bandwidth": format_bandwidth(params.link_bandwidth_Bps),
        "protocols": {name: {"base_latency": format_time(p.base_latency_s), "step_latency": format_time(p.step_latency_s),
                             "bandwidth_fraction": round(p.bandwidth_fraction, 4),
                             "chunk": format_size(p.chunk_bytes)} for name, p in params.protocols.items()},
    }


def op_profiles_yaml(profiles) -> list[dict]:
    """Per-op profiles as a card stores them: measured / model per size, 4 decimals."""
    return [{"ranks": p.ranks, "launch": p.launch, "source": p.source,
             "measured_over_model": {op: {format_size(s): round(math.exp(v), 4) for s, v in zip(*p.ops[op], strict=True)}
                                     for op in p.ops}} for p in profiles]


def op_profiles(raw, where: str) -> tuple[OpProfile, ...]:
    if not isinstance(raw, list):
        raise ModelCardError("op_profiles: expected a list of profiles", where=where)
    out = []
    for i, doc in enumerate(raw):
        key = f"{where}[{i}]"
        if not isinstance(doc, dict):
            raise ModelCardError("expected a profile mapping (ranks, launch, measured_over_model)", where=key)
        ranks = _get(doc, "ranks", key, int)
        launch = _get(doc, "launch", key)
        if launch not in ("cuda_graph", "host"):
            raise ModelCardError(f"key 'launch': {launch!r} is not 'cuda_graph' or 'host'", where=key)
        tables = _get(doc, "measured_over_model", key)
        if not isinstance(tables, dict):
            raise ModelCardError("measured_over_model: expected a mapping of collective -> {size: factor}", where=key)
        ops = {}
        for op, table in tables.items():
            if op not in OPS:
                raise ModelCardError(f"measured_over_model: unknown collective {op!r}", where=key,
                                     hint=f"one of {', '.join(OPS)}")
            try:
                pairs = sorted((parse_size(s), math.log(float(f))) for s, f in table.items())
            except (UnitError, TypeError, ValueError, AttributeError):
                raise ModelCardError(f"measured_over_model.{op}: expected size: positive factor pairs",
                                     where=key) from None
            ops[op] = (tuple(s for s, _ in pairs), tuple(v for _, v in pairs))
        out.append(OpProfile(ranks, launch == "cuda_graph", ops, str(doc.get("source", ""))))
    return tuple(out)


def ring_ramps(raw, where: str) -> dict[int, tuple[float, float]]:
    """The ring ramp per rank count, {ranks: {time: D, scale: W}}, as (seconds, bytes)."""
    if not isinstance(raw, dict):
        raise ModelCardError("expected a mapping of rank count -> {time, scale}", where=where)
    out = {}
    for n, doc in raw.items():
        key = f"{where}.{n}"
        if not isinstance(doc, dict) or not str(n).isdigit():
            raise ModelCardError("expected a rank count mapped to {time, scale}", where=key)
        ramp_s, scale = _get(doc, "time", key, parse_time), _get(doc, "scale", key, parse_size)
        if ramp_s < 0 or scale <= 0:
            raise ModelCardError("time must be >= 0 and scale > 0", where=key)
        out[int(n)] = (ramp_s, scale)
    return out


def load_op_profiles(path: str | Path) -> tuple[tuple[OpProfile, ...], dict]:
    card = load_card(path, kind="op-profile")
    return op_profiles(_get(_get(card, "params", str(path)), "op_profiles", f"{path}: params"),
                       f"{path}: params.op_profiles"), card


def dump_card(card: dict) -> str:
    return yaml.safe_dump(card, sort_keys=False, width=100)


def nic_params(card: dict, where: str) -> NicParams:
    params = _get(card, "params", where)
    key = f"{where}: params"
    transport = _get(params, "transport", key)
    if transport not in TRANSPORTS:
        raise ModelCardError(f"params.transport: {transport!r} is not one of {', '.join(TRANSPORTS)}", where=where)
    return NicParams(transport, _get(params, "line_rate", key, parse_bandwidth), float(_get(params, "efficiency", key)),
                     _get(params, "latency", key, parse_time), _get(params, "cpu_per_byte", key, parse_cost),
                     _get({"cpu_per_message": "0s", **params}, "cpu_per_message", key, parse_time),
                     _get(params, "message_size", key, parse_size))


def load_nic(path: str | Path) -> tuple[NicParams, dict]:
    card = load_card(path, kind="nic")
    return nic_params(card, str(path)), card


def nic_params_yaml(p: NicParams) -> dict:
    return {"transport": p.transport, "line_rate": f"{p.line_rate_Bps * 8 / 1e9:.4g}Gbps",
            "efficiency": round(p.efficiency, 4), "latency": format_time(p.latency_s),
            "cpu_per_byte": format_cost(p.cpu_s_per_byte), "cpu_per_message": format_time(p.cpu_s_per_message),
            "message_size": format_size(p.message_bytes)}


def load_aggregation(path: str | Path) -> tuple[AggregationParams, dict]:
    """An in-network aggregation switch card (kind: aggregation)."""
    card = load_card(path, kind="aggregation")
    where = str(path)
    p = _get(card, "params", where)
    key = f"{where}: params"
    forwarding = _get(p, "forwarding", key)
    if forwarding not in FORWARDING:
        raise ModelCardError(f"params.forwarding: {forwarding!r} is not one of {', '.join(FORWARDING)}", where=where)
    params = AggregationParams(
        forwarding, _get(p, "line_rate", key, parse_bandwidth), _get(p, "op_latency", key, parse_time),
        _get(p, "aggregation_rate", key, parse_bandwidth), _get({"buffer": "4KiB", **p}, "buffer", key, parse_size),
        int(p.get("threshold_frames", 1)), _get({"frame_payload": "1480B", **p}, "frame_payload", key, parse_size),
        _get({"frame_wire": "1538B", **p}, "frame_wire", key, parse_size))
    return params, card


def training_card(w, description: str, provenance: dict, derivation: list[str] | None = None) -> dict:
    """A `training-step` card: one model's data-parallel step as measured on 1 GPU."""
    card = {"kind": "training-step", "name": f"{w.model}-{w.image}-b{w.batch_per_gpu}", "description": description,
            "params": {"model": w.model, "image": w.image, "batch_per_gpu": w.batch_per_gpu,
                       "step": format_time(w.step_s), "host": format_time(w.host_s), "gpu": format_time(w.gpu_s),
                       "phases": {"forward": round(w.forward, 4), "backward": round(w.backward, 4),
                                  "optimizer": round(w.optimizer, 4)},
                       "bucket_cap": format_size(w.bucket_cap_bytes),
                       "grad_bytes": list(w.grad_bytes), "step_samples": [format_time(t) for t in w.step_samples_s]},
            "provenance": provenance}
    if derivation:
        card["fit"] = {"derivation": derivation}
    return card


def load_training(path: str | Path):
    from simcluster.training.workload import Workload

    card = load_card(path, kind="training-step")
    where = str(path)
    p = _get(card, "params", where)
    key = f"{where}: params"
    phases = _get(p, "phases", key)
    try:
        return Workload(str(_get(p, "model", key)), int(_get(p, "image", key)), int(_get(p, "batch_per_gpu", key)),
                        _get(p, "step", key, parse_time), _get(p, "host", key, parse_time), _get(p, "gpu", key, parse_time),
                        float(phases["forward"]), float(phases["backward"]), float(phases["optimizer"]),
                        tuple(int(g) for g in _get(p, "grad_bytes", key)),
                        tuple(parse_time(t) for t in _get(p, "step_samples", key)),
                        _get(p, "bucket_cap", key, parse_size)), card
    except (KeyError, TypeError, ValueError, UnitError) as exc:
        raise ModelCardError(f"params: missing or bad {exc}", where=where) from None


def ddp_card(params, fit: dict, provenance: dict, name: str) -> dict:
    return {"kind": "ddp", "name": name,
            "description": "torch DistributedDataParallel overheads: host and GPU cost per gradient tensor, "
                           "compute slowdown under communication overlap.",
            "params": {"host_per_tensor": format_time(params.c_tensor_s), "gpu_per_tensor": format_time(params.g_tensor_s),
                       "overlap_slowdown": round(params.slowdown, 4)},
            "fit": fit, "provenance": provenance}


def load_ddp(path: str | Path):
    from simcluster.training.step import DdpParams

    card = load_card(path, kind="ddp")
    where = str(path)
    p = _get(card, "params", where)
    key = f"{where}: params"
    return DdpParams(_get(p, "host_per_tensor", key, parse_time), _get(p, "gpu_per_tensor", key, parse_time),
                     float(_get(p, "overlap_slowdown", key))), card


def load_nvme(path: str | Path):
    from simcluster.storage.nvme import NvmeParams

    card = load_card(path, kind="nvme")
    where = str(path)
    p = _get(card, "params", where)
    key = f"{where}: params"
    bw = _get(p, "bandwidth", key, parse_bandwidth)
    return NvmeParams(_get(p, "service_time", key, parse_time), float(_get(p, "sigma", key)), int(_get(p, "parallelism", key)),
                      bw, _get({"unit_bandwidth": p.get("unit_bandwidth", p["bandwidth"]), **p}, "unit_bandwidth", key,
                               parse_bandwidth)), card


def load_nvls(path: str | Path) -> tuple[dict[int, float], float, dict]:
    """An NVLink SHARP card (kind: nvls): all_reduce algbw by GPUs per node (bytes/s), and a latency."""
    card = load_card(path, kind="nvls")
    where = str(path)
    p = _get(card, "params", where)
    key = f"{where}: params"
    table = _get(p, "allreduce_algbw", key)
    if not isinstance(table, dict) or not table:
        raise ModelCardError("params.allreduce_algbw: expected a mapping of GPUs per node -> bandwidth", where=where)
    try:
        algbw = {int(k): parse_bandwidth(v) for k, v in table.items()}
    except (ValueError, UnitError) as exc:
        raise ModelCardError(f"params.allreduce_algbw: {exc}", where=where) from None
    return algbw, _get(p, "latency", key, parse_time), card


def fitted_sha256(card: dict) -> set[str]:
    """The sha256 of every trace a card was fitted on (its provenance)."""
    return {t.get("sha256") for t in card.get("provenance", {}).get("traces", []) if isinstance(t, dict)}
