"""Model cards: YAML files of fitted parameters with units, valid range, fit error, provenance.

Quantities are unit strings in the file ("11.8us", "360GB/s", "1MiB") and SI floats in code.
Loading is strict: a missing or unknown key is a ModelCardError naming the file and key.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from simcluster import documents, strict
from simcluster.collectives.interface import CollectiveModel
from simcluster.collectives.profile import OpProfile, op_profiles
from simcluster.collectives.registry import from_params_yaml
from simcluster.errors import ModelCardError, UnitError
from simcluster.hardware import pcie
from simcluster.hardware.nic import TRANSPORTS, NicParams
from simcluster.hardware.switch import FORWARDING, AggregationParams
from simcluster.units import (
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
    doc = strict.load_yaml(path, error, what="model card (YAML)", schema=documents.CARD)
    if not isinstance(doc, dict):
        raise error("expected a mapping at the top level", where=str(path))
    return doc


def _get(doc: dict, key: str, where: str, parse=None):
    return strict.field(doc, key, where, parse, ModelCardError)


def _params(card: dict, where: str, allowed: set[str]) -> dict:
    """A card's params, refusing a key the model does not read (a typo would otherwise be ignored)."""
    return strict.known_keys(_get(card, "params", where), allowed, f"{where}: params", ModelCardError)


def _positive(parse):
    return lambda v: strict.positive(parse(v))


def _rate(v) -> float:
    return strict.rate(parse_bandwidth(v))


def _time(v) -> float:
    return strict.positive(parse_time(v))


def _bytes(v) -> float:
    return strict.positive(parse_size(v))


def _share(v) -> float:
    value = float(v)
    if not 0 <= value <= 1:
        raise ValueError("expected a share from 0 to 1")
    return value


def _fraction(v) -> float:
    value = float(v)
    if not 0 < value <= 1:
        raise ValueError("expected a fraction in (0, 1]")
    return value


def _count(v) -> int:
    if isinstance(v, bool) or int(v) != v or not 1 <= int(v) <= 2**20:
        raise ValueError("expected a whole number >= 1")
    return int(v)


def load_card(path: str | Path, kind: str | None = None) -> dict:
    """Read a card and check its top-level keys; `kind` asserts what it must be."""
    doc = load_yaml(path)
    unknown = set(doc) - CARD_KEYS
    if unknown:
        raise ModelCardError(f"unknown key '{sorted(unknown)[0]}'", where=str(path),
                             hint=f"known keys: {', '.join(sorted(CARD_KEYS))}")
    if kind and doc.get("kind") != kind:
        raise ModelCardError(f"is a {strict.short(doc.get('kind'))} card, expected a {kind!r} card", where=str(path))
    for section in ("machine", "valid_range", "provenance", "fit"):
        if section in doc and not isinstance(doc[section], dict):
            raise ModelCardError(f"'{section}': expected a mapping, got {type(doc[section]).__name__}", where=str(path))
    machine, valid, prov = doc.get("machine", {}), doc.get("valid_range", {}), doc.get("provenance", {})
    for name, value, kind_ in (("machine.devices", machine.get("devices", []), list),
                               ("valid_range.ranks", valid.get("ranks", []), list),
                               ("provenance.traces", prov.get("traces", []), list)):
        if not isinstance(value, kind_):
            raise ModelCardError(f"'{name}': expected a list, got {type(value).__name__}", where=str(path))
    try:
        [strict.count(r, 2**20) for r in valid.get("ranks", [])]
    except ValueError:
        raise ModelCardError("'valid_range.ranks': expected whole rank counts >= 1", where=str(path)) from None
    return doc


def collective_params(card: dict, where: str) -> CollectiveModel:
    return from_params_yaml(_get(card, "params", where), where)


def load_collective(path: str | Path) -> tuple[CollectiveModel, dict]:
    """A collective card's model; a machine card (params.kind_card) is its kind card's model with the machine's
    terms in place (collectives/machine.py), the kind card read from the machine card's folder."""
    from simcluster.collectives.machine import compose, is_machine_card, machine_terms

    card = load_card(path, kind="collective")
    params = _get(card, "params", str(path))
    if not is_machine_card(params):
        return collective_params(card, str(path)), card
    where = f"{path}: params"
    kind_path = Path(path).parent / str(_get(params, "kind_card", where))
    if not kind_path.is_file():
        raise ModelCardError(f"kind_card: {kind_path} is not a file (read relative to this card's folder)", where=where)
    kind_card = load_card(kind_path, kind="collective")
    if is_machine_card(kind_card.get("params")):
        raise ModelCardError("kind_card: names another machine card, not a kind card", where=where)
    return compose(collective_params(kind_card, str(kind_path)), machine_terms(params, where)), card


def collective_params_yaml(params: CollectiveModel) -> dict:
    return params.to_params_yaml()


def load_op_profiles(path: str | Path) -> tuple[tuple[OpProfile, ...], dict]:
    card = load_card(path, kind="op-profile")
    return op_profiles(_get(_get(card, "params", str(path)), "op_profiles", f"{path}: params"),
                       f"{path}: params.op_profiles"), card


def dump_card(card: dict) -> str:
    """The card's YAML, after simcluster.output's check (no .nan, .inf or negative quantity is written)."""
    from simcluster import output

    output.check(card, f"the {card.get('kind', '') if isinstance(card, dict) else ''} card {card.get('name', '') if isinstance(card, dict) else ''}")
    return yaml.safe_dump(card, sort_keys=False, width=100)


def nic_params(card: dict, where: str) -> NicParams:
    params = _params(card, where, {"transport", "line_rate", "efficiency", "latency", "cpu_per_byte", "cpu_per_message",
                                   "message_size", "csum_per_byte", "cpu_per_packet", "segment_size", "polling_cores",
                                   "cores_per_stream", "pcie"})
    key = f"{where}: params"
    transport = _get(params, "transport", key)
    if transport not in TRANSPORTS:
        raise ModelCardError(f"params.transport: {transport!r} is not one of {', '.join(TRANSPORTS)}", where=where)
    optional = {"cpu_per_message": "0s", "csum_per_byte": "0s/GB", "cpu_per_packet": "0s", "segment_size": "64KiB",
                "polling_cores": 0, **params}
    return NicParams(transport, _get(params, "line_rate", key, _rate),
                     _get(params, "efficiency", key, _fraction),
                     _get(params, "latency", key, parse_time), _get(params, "cpu_per_byte", key, parse_cost),
                     _get(optional, "cpu_per_message", key, parse_time),
                     _get(params, "message_size", key, lambda v: strict.count(parse_size(v), 2**40)),
                     _get(optional, "csum_per_byte", key, parse_cost), _get(optional, "cpu_per_packet", key, parse_time),
                     _get(optional, "segment_size", key, _bytes), _get(optional, "polling_cores", key, _nonnegative),
                     _cores_per_stream(params.get("cores_per_stream", DEFAULT_CORES_PER_STREAM[transport]), key),
                     _get(params, "pcie", key, pcie.parse) if "pcie" in params else None)


# A card that does not say: kernel TCP and UDP streams are one thread each (one qperf stream never used more than one
# core of this machine, calibration/loopback-sizes-*; seed 000's single stream was CPU-bound at 16.9 Gb/s); RDMA and PSM
# have no per-stream cap unless the card gives one.
DEFAULT_CORES_PER_STREAM = {"tcp": 1.0, "udp": 1.0, "rdma": "none", "psm": "none"}


def _cores_per_stream(value, key: str) -> float | None:
    if value is None or value == "none":
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
        raise ModelCardError(f"{key}.cores_per_stream: expected a number of cores > 0 or 'none', got {value!r}")
    return float(value)


def _nonnegative(value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
        raise ValueError(f"expected a number >= 0, got {value!r}")
    return float(value)


def load_nic(path: str | Path) -> tuple[NicParams, dict]:
    card = load_card(path, kind="nic")
    return nic_params(card, str(path)), card


def nic_params_yaml(p: NicParams) -> dict:
    out = {"transport": p.transport, "line_rate": f"{p.line_rate_Bps * 8 / 1e9:.4g}Gbps",
           "efficiency": round(p.efficiency, 4), "latency": format_time(p.latency_s),
           "cpu_per_byte": format_cost(p.cpu_s_per_byte), "cpu_per_message": format_time(p.cpu_s_per_message),
           "message_size": format_size(p.message_bytes)}
    if p.csum_s_per_byte or p.cpu_s_per_packet or p.polling_cores:
        out.update(csum_per_byte=format_cost(p.csum_s_per_byte), cpu_per_packet=format_time(p.cpu_s_per_packet),
                   segment_size=f"{p.segment_bytes:.0f}B", polling_cores=p.polling_cores)
    out["cores_per_stream"] = "none" if p.cores_per_stream is None else p.cores_per_stream
    if p.pcie:
        out["pcie"] = str(p.pcie)
    return out


def load_host_cpu(path: str | Path):
    """A host-cpu card: the host's cores and its onloaded TCP cost (core-seconds per byte), stack latency."""
    from simcluster.hardware.cpu import HostCpuParams

    card = load_card(path, kind="host-cpu")
    where = str(path)
    p = _params(card, where, {"cores", "tcp_cpu_per_byte", "tcp_stack_latency"})
    key = f"{where}: params"
    cores = p.get("cores")
    return HostCpuParams(None if cores is None else _get(p, "cores", key, lambda v: strict.positive(float(v))),
                         _get(p, "tcp_cpu_per_byte", key, _positive(parse_cost)),
                         _get(p, "tcp_stack_latency", key, parse_time)), card


def load_aggregation(path: str | Path) -> tuple[AggregationParams, dict]:
    """An in-network aggregation switch card (kind: aggregation)."""
    card = load_card(path, kind="aggregation")
    where = str(path)
    p = _params(card, where, {"forwarding", "line_rate", "op_latency", "aggregation_rate", "buffer", "threshold_frames",
                              "frame_payload", "frame_wire", "trees_per_switch", "max_levels"})
    key = f"{where}: params"
    forwarding = _get(p, "forwarding", key)
    if forwarding not in FORWARDING:
        raise ModelCardError(f"params.forwarding: {forwarding!r} is not one of {', '.join(FORWARDING)}", where=where)
    params = AggregationParams(
        forwarding, _get(p, "line_rate", key, _rate), _get(p, "op_latency", key, parse_time),
        _get(p, "aggregation_rate", key, _rate), _get({"buffer": "4KiB", **p}, "buffer", key, _bytes),
        _get({"threshold_frames": 1, **p}, "threshold_frames", key, _count),
        _get({"frame_payload": "1480B", **p}, "frame_payload", key, _bytes), _get({"frame_wire": "1538B", **p}, "frame_wire", key, _bytes),
        _get(p, "trees_per_switch", key, _count) if "trees_per_switch" in p else None,
        _get(p, "max_levels", key, _count) if "max_levels" in p else None)
    if params.frame_wire_bytes < params.frame_payload_bytes:
        raise ModelCardError("params.frame_wire: a frame on the wire is at least its payload", where=where)
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
    p = _params(card, where, {"model", "image", "batch_per_gpu", "step", "host", "gpu", "phases", "bucket_cap", "grad_bytes",
                              "step_samples"})
    key = f"{where}: params"
    phases = strict.known_keys(_get(p, "phases", key), {"forward", "backward", "optimizer"}, f"{key}.phases", ModelCardError)
    shares = {name: _get(phases, name, f"{key}.phases", _share) for name in ("forward", "backward", "optimizer")}
    if abs(sum(shares.values()) - 1) > 0.01:
        raise ModelCardError(f"params.phases: the shares add up to {sum(shares.values()):.3g}, not 1", where=where)

    def positive_times(values):
        if not isinstance(values, list) or not values:
            raise ValueError("expected a non-empty list")
        return tuple(strict.positive(parse_time(t)) for t in values)

    def sizes(values):
        if not isinstance(values, list) or not values:
            raise ValueError("expected a non-empty list")
        return tuple(strict.count(g, 2**50) for g in values)

    return Workload(str(_get(p, "model", key)), _get(p, "image", key, _count), _get(p, "batch_per_gpu", key, _count),
                    _get(p, "step", key, _time), _get(p, "host", key, _time), _get(p, "gpu", key, _time),
                    shares["forward"], shares["backward"], shares["optimizer"], _get(p, "grad_bytes", key, sizes),
                    _get(p, "step_samples", key, positive_times), _get(p, "bucket_cap", key, _bytes)), card


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
    p = _params(card, where, {"host_per_tensor", "gpu_per_tensor", "overlap_slowdown"})
    key = f"{where}: params"
    return DdpParams(_get(p, "host_per_tensor", key, parse_time), _get(p, "gpu_per_tensor", key, parse_time),
                     _get(p, "overlap_slowdown", key, lambda v: strict.non_negative(float(v)))), card


def load_nvme(path: str | Path):
    from simcluster.storage.nvme import NvmeParams

    card = load_card(path, kind="nvme")
    where = str(path)
    p = _params(card, where, {"service_time", "sigma", "parallelism", "bandwidth", "unit_bandwidth", "write_bandwidth", "capacity"})
    key = f"{where}: params"
    bw = _get(p, "bandwidth", key, _rate)
    write = _get(p, "write_bandwidth", key, _rate) if "write_bandwidth" in p else None
    if "capacity" in p:
        _get(p, "capacity", key, _bytes)   # checked here, read by storage/questions.py
    return NvmeParams(_get(p, "service_time", key, _positive(parse_time)), _get(p, "sigma", key, lambda v: strict.non_negative(float(v))),
                      _get(p, "parallelism", key, _count),
                      bw, _get({"unit_bandwidth": p.get("unit_bandwidth", p["bandwidth"]), **p}, "unit_bandwidth", key,
                               _rate), write), card


def load_nvls(path: str | Path) -> tuple[dict[int, float], float, dict]:
    """An NVLink SHARP card (kind: nvls): all_reduce algbw by GPUs per node (bytes/s), and a latency."""
    card = load_card(path, kind="nvls")
    where = str(path)
    p = _params(card, where, {"allreduce_algbw", "latency"})
    key = f"{where}: params"
    table = _get(p, "allreduce_algbw", key)
    if not isinstance(table, dict) or not table:
        raise ModelCardError("params.allreduce_algbw: expected a mapping of GPUs per node -> bandwidth", where=where)
    try:
        algbw = {strict.count(k, 1024): strict.rate(parse_bandwidth(v)) for k, v in table.items()}
    except (ValueError, TypeError, UnitError) as exc:
        raise ModelCardError(f"params.allreduce_algbw: {exc}", where=where) from None
    return algbw, _get(p, "latency", key, parse_time), card


def fitted_sha256(card: dict) -> set[str]:
    """The sha256 of every trace a card was fitted on (its provenance)."""
    return {t.get("sha256") for t in card.get("provenance", {}).get("traces", []) if isinstance(t, dict)}
