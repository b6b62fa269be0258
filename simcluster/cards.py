"""The card readers of the components (NIC, host CPU, aggregation switch, NVLS, collective, op profiles, DDP, training
step) and the builders of the cards `calibrate` writes: a card's file in, the component's typed parameters out.

A card's file is read through card_document.py (strict; a missing or unknown key is a ModelCardError naming the
file and key). The GPU's and the NVMe drive's cards are read by their own modules (hardware/gpu.py, storage/nvme.py).
"""

from __future__ import annotations

from pathlib import Path

from simcluster import card_document as cd
from simcluster import strict
from simcluster.card_document import load_card
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


def collective_params(card: dict, where: str) -> CollectiveModel:
    return from_params_yaml(cd.get(card, "params", where), where)


def load_collective(path: str | Path) -> tuple[CollectiveModel, dict]:
    """A collective card's model; a machine card (params.kind_card) is its kind card's model with the machine's
    terms in place (collectives/machine.py), the kind card read from the machine card's folder."""
    from simcluster.collectives.machine import compose, is_machine_card, machine_terms

    card = load_card(path, kind="collective")
    params = cd.get(card, "params", str(path))
    if not is_machine_card(params):
        return collective_params(card, str(path)), card
    where = f"{path}: params"
    kind_path = Path(path).parent / str(cd.get(params, "kind_card", where))
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
    return op_profiles(cd.get(cd.get(card, "params", str(path)), "op_profiles", f"{path}: params"),
                       f"{path}: params.op_profiles"), card


def nic_params(card: dict, where: str) -> NicParams:
    params = cd.params(card, where, {"transport", "line_rate", "efficiency", "latency", "cpu_per_byte", "cpu_per_message",
                                   "message_size", "csum_per_byte", "cpu_per_packet", "segment_size", "polling_cores",
                                   "cores_per_stream", "pcie", "call_setup", "step_operations"})
    key = f"{where}: params"
    transport = cd.get(params, "transport", key)
    if transport not in TRANSPORTS:
        raise ModelCardError(f"params.transport: {transport!r} is not one of {', '.join(TRANSPORTS)}", where=where)
    optional = {"cpu_per_message": "0s", "csum_per_byte": "0s/GB", "cpu_per_packet": "0s", "segment_size": "64KiB",
                "polling_cores": 0, **params}
    return NicParams(transport, cd.get(params, "line_rate", key, cd.rate),
                     cd.get(params, "efficiency", key, cd.fraction),
                     cd.get(params, "latency", key, parse_time), cd.get(params, "cpu_per_byte", key, parse_cost),
                     cd.get(optional, "cpu_per_message", key, parse_time),
                     cd.get(params, "message_size", key, lambda v: strict.count(parse_size(v), 2**40)),
                     cd.get(optional, "csum_per_byte", key, parse_cost), cd.get(optional, "cpu_per_packet", key, parse_time),
                     cd.get(optional, "segment_size", key, cd.size), cd.get(optional, "polling_cores", key, cd.nonnegative),
                     _cores_per_stream(params.get("cores_per_stream", DEFAULT_CORES_PER_STREAM[transport]), key),
                     cd.get(params, "pcie", key, pcie.parse) if "pcie" in params else None,
                     cd.get(params, "call_setup", key, parse_time) if "call_setup" in params else 0.0,
                     cd.get(params, "step_operations", key, _operations) if "step_operations" in params else 1.0)


def _operations(value) -> float:
    """params.step_operations: network operations on one NCCL network step's critical path, a number from 1 to 16."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 1 <= value <= 16:
        raise ValueError(f"expected a number of operations from 1 to 16, got {value!r}")
    return float(value)


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
    if p.call_setup_s:
        out["call_setup"] = format_time(p.call_setup_s)
    if p.step_operations != 1.0:
        out["step_operations"] = p.step_operations
    return out


def load_host_cpu(path: str | Path):
    """A host-cpu card: the host's cores and its onloaded TCP cost (core-seconds per byte), stack latency."""
    from simcluster.hardware.cpu import HostCpuParams

    card = load_card(path, kind="host-cpu")
    where = str(path)
    p = cd.params(card, where, {"cores", "tcp_cpu_per_byte", "tcp_stack_latency"})
    key = f"{where}: params"
    cores = p.get("cores")
    return HostCpuParams(None if cores is None else cd.get(p, "cores", key, lambda v: strict.positive(float(v))),
                         cd.get(p, "tcp_cpu_per_byte", key, cd.positive_of(parse_cost)),
                         cd.get(p, "tcp_stack_latency", key, parse_time)), card


def load_aggregation(path: str | Path) -> tuple[AggregationParams, dict]:
    """An in-network aggregation switch card (kind: aggregation)."""
    card = load_card(path, kind="aggregation")
    where = str(path)
    p = cd.params(card, where, {"forwarding", "line_rate", "op_latency", "aggregation_rate", "buffer", "threshold_frames",
                              "frame_payload", "frame_wire", "trees_per_switch", "max_levels"})
    key = f"{where}: params"
    forwarding = cd.get(p, "forwarding", key)
    if forwarding not in FORWARDING:
        raise ModelCardError(f"params.forwarding: {forwarding!r} is not one of {', '.join(FORWARDING)}", where=where)
    params = AggregationParams(
        forwarding, cd.get(p, "line_rate", key, cd.rate), cd.get(p, "op_latency", key, parse_time),
        cd.get(p, "aggregation_rate", key, cd.rate), cd.get({"buffer": "4KiB", **p}, "buffer", key, cd.size),
        cd.get({"threshold_frames": 1, **p}, "threshold_frames", key, cd.whole),
        cd.get({"frame_payload": "1480B", **p}, "frame_payload", key, cd.size), cd.get({"frame_wire": "1538B", **p}, "frame_wire", key, cd.size),
        cd.get(p, "trees_per_switch", key, cd.whole) if "trees_per_switch" in p else None,
        cd.get(p, "max_levels", key, cd.whole) if "max_levels" in p else None)
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
    p = cd.params(card, where, {"model", "image", "batch_per_gpu", "step", "host", "gpu", "phases", "bucket_cap", "grad_bytes",
                              "step_samples"})
    key = f"{where}: params"
    phases = strict.known_keys(cd.get(p, "phases", key), {"forward", "backward", "optimizer"}, f"{key}.phases", ModelCardError)
    shares = {name: cd.get(phases, name, f"{key}.phases", cd.share) for name in ("forward", "backward", "optimizer")}
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

    return Workload(str(cd.get(p, "model", key)), cd.get(p, "image", key, cd.whole), cd.get(p, "batch_per_gpu", key, cd.whole),
                    cd.get(p, "step", key, cd.seconds), cd.get(p, "host", key, cd.seconds), cd.get(p, "gpu", key, cd.seconds),
                    shares["forward"], shares["backward"], shares["optimizer"], cd.get(p, "grad_bytes", key, sizes),
                    cd.get(p, "step_samples", key, positive_times), cd.get(p, "bucket_cap", key, cd.size)), card


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
    p = cd.params(card, where, {"host_per_tensor", "gpu_per_tensor", "overlap_slowdown"})
    key = f"{where}: params"
    return DdpParams(cd.get(p, "host_per_tensor", key, parse_time), cd.get(p, "gpu_per_tensor", key, parse_time),
                     cd.get(p, "overlap_slowdown", key, lambda v: strict.non_negative(float(v)))), card


def load_nvls(path: str | Path) -> tuple[dict[int, float], float, dict]:
    """An NVLink SHARP card (kind: nvls): all_reduce algbw by GPUs per node (bytes/s), and a latency."""
    card = load_card(path, kind="nvls")
    where = str(path)
    p = cd.params(card, where, {"allreduce_algbw", "latency"})
    key = f"{where}: params"
    table = cd.get(p, "allreduce_algbw", key)
    if not isinstance(table, dict) or not table:
        raise ModelCardError("params.allreduce_algbw: expected a mapping of GPUs per node -> bandwidth", where=where)
    try:
        algbw = {strict.count(k, 1024): strict.rate(parse_bandwidth(v)) for k, v in table.items()}
    except (ValueError, TypeError, UnitError) as exc:
        raise ModelCardError(f"params.allreduce_algbw: {exc}", where=where) from None
    return algbw, cd.get(p, "latency", key, parse_time), card


