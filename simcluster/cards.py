"""The card readers of the components (NIC, host CPU, aggregation switch, NVLS, collective, op profiles, DDP, training
step) and the builders of the cards `calibrate` writes: a card's file in, the component's typed parameters out.

A card's file is read through card_document.py (strict; a missing or unknown key is a ModelCardError naming the
file and key). The GPU's and the NVMe drive's cards are read by their own modules (hardware/gpu.py, storage/nvme.py).
"""

from __future__ import annotations

from pathlib import Path

from simcluster import card_document as cd
from simcluster import card_params as cp
from simcluster.card_document import load_card
from simcluster.collectives.interface import CollectiveModel
from simcluster.collectives.profile import OpProfile, op_profiles
from simcluster.collectives.registry import from_params_yaml
from simcluster.errors import ModelCardError
from simcluster.hardware import pcie
from simcluster.hardware.nic import ACK_RULES, TRANSPORTS, CardTermError, NicParams, UdpReceiver
from simcluster.hardware.switch import FORWARDING, AggregationParams
from simcluster.hardware.verbs import COMPLETIONS, VerbsCost
from simcluster.units import (
    format_cost,
    format_size,
    format_time,
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
    terms = machine_terms(params, str(path))
    kind_path = Path(path).parent / str(cd.get(params, "kind_card", where))
    if not kind_path.is_file():
        raise ModelCardError(f"kind_card: {kind_path} is not a file (read relative to this card's folder)", where=where)
    kind_card = load_card(kind_path, kind="collective")
    if is_machine_card(kind_card.get("params")):
        raise ModelCardError("kind_card: names another machine card, not a kind card", where=where)
    return compose(collective_params(kind_card, str(kind_path)), terms), card


def collective_params_yaml(params: CollectiveModel) -> dict:
    return params.to_params_yaml()


def load_op_profiles(path: str | Path) -> tuple[tuple[OpProfile, ...], dict]:
    card = load_card(path, kind="op-profile")
    return op_profiles(cd.get(cd.get(card, "params", str(path)), "op_profiles", f"{path}: params"), str(path)), card


def nic_params(card: dict, where: str) -> NicParams:
    p = cd.declared_params(card, where, cp.NIC, transport=TRANSPORTS, ack_rule=ACK_RULES, completion=COMPLETIONS,
                           pcie=lambda v: str(pcie.parse(v)))
    cores = DEFAULT_CORES_PER_STREAM[p.transport] if p.cores_per_stream is None else p.cores_per_stream
    r = p.receiver
    receiver = None if r is None else UdpReceiver(r.cpu_per_datagram, r.cpu_per_wakeup, r.cpu_per_fragment,
                                                  r.cpu_per_byte, r.wakeup_latency)
    v = p.verbs
    try:
        verbs = None if v is None else VerbsCost(v.completion, v.cpu_per_wqe, v.cpu_per_doorbell, v.cpu_per_completion,
                                                 v.cpu_per_inline_byte, float(v.wqes_per_doorbell), float(v.signal_every),
                                                 float(v.inline_max), v.mtu)
        return NicParams(p.transport, p.line_rate, float(p.efficiency), p.latency, p.cpu_per_byte, p.cpu_per_message,
                         int(p.message_size), p.csum_per_byte, p.cpu_per_packet, p.segment_size, float(p.polling_cores),
                         None if cores == "none" else float(cores), pcie.parse(p.pcie) if p.pcie else None, p.call_setup,
                         float(p.step_operations), p.cpu_per_ack, p.cpu_per_split_datagram, p.cpu_per_fragment,
                         p.ack_rule, receiver, float(p.eager_max_size or 0.0), verbs,
                         tuple(p.nccl_protocols) if p.nccl_protocols else None)
    except CardTermError as exc:         # the transport's term rule is NicParams' (hardware/nic.py): said at its key
        raise ModelCardError(f"params.{exc.key}: {exc.why}", where=cd.line_of(where, f"params.{exc.key}")) from None


# A card that does not say: kernel TCP and UDP streams are one thread each (one qperf stream never used more than one
# core of this machine, calibration/loopback-sizes-*; seed 000's single stream was CPU-bound at 16.9 Gb/s); RDMA and PSM
# have no per-stream cap unless the card gives one.
DEFAULT_CORES_PER_STREAM = {"tcp": 1.0, "udp": 1.0, "rdma": "none", "psm": "none"}


def load_nic(path: str | Path) -> tuple[NicParams, dict]:
    card = load_card(path, kind="nic")
    return nic_params(card, str(path)), card


def nic_params_yaml(p: NicParams) -> dict:
    out = {"transport": p.transport, "line_rate": f"{p.line_rate_Bps * 8 / 1e9:.4g}Gbps",
           "efficiency": round(p.efficiency, 4), "latency": format_time(p.latency_s),
           "cpu_per_byte": format_cost(p.cpu_s_per_byte), "cpu_per_message": format_time(p.cpu_s_per_message),
           "message_size": format_size(p.message_bytes)}
    if p.csum_s_per_byte or p.cpu_s_per_packet or p.polling_cores or p.ack_rule != "delayed":
        out.update(csum_per_byte=format_cost(p.csum_s_per_byte), cpu_per_packet=format_time(p.cpu_s_per_packet),
                   segment_size=f"{p.segment_bytes:.0f}B", polling_cores=p.polling_cores)
    out["cores_per_stream"] = "none" if p.cores_per_stream is None else p.cores_per_stream
    if p.pcie:
        out["pcie"] = str(p.pcie)
    if p.call_setup_s:
        out["call_setup"] = format_time(p.call_setup_s)
    if p.step_operations != 1.0:
        out["step_operations"] = p.step_operations
    if p.eager_max_size_bytes:
        out["eager_max_size"] = format_size(p.eager_max_size_bytes)
    if p.nccl_protocols:
        out["nccl_protocols"] = list(p.nccl_protocols)
    for key, value in (("cpu_per_ack", p.cpu_s_per_ack), ("cpu_per_split_datagram", p.cpu_s_per_split),
                       ("cpu_per_fragment", p.cpu_s_per_fragment)):
        if value:                  # the count models' terms (hardware/nic.py): written where a fit found them
            out[key] = format_time(value)
    if p.ack_rule != "delayed":
        out["ack_rule"] = p.ack_rule
    if p.receiver is not None:
        r = p.receiver
        out["receiver"] = {"cpu_per_datagram": format_time(r.cpu_s_per_datagram),
                           "cpu_per_wakeup": format_time(r.cpu_s_per_wakeup),
                           "cpu_per_fragment": format_time(r.cpu_s_per_fragment),
                           "cpu_per_byte": format_cost(r.cpu_s_per_byte), "wakeup_latency": format_time(r.wakeup_latency_s)}
    if p.verbs is not None:
        v = p.verbs
        out["verbs"] = {"completion": v.completion, "cpu_per_wqe": format_time(v.cpu_s_per_wqe),
                        "cpu_per_doorbell": format_time(v.cpu_s_per_doorbell),
                        "cpu_per_completion": format_time(v.cpu_s_per_completion),
                        "cpu_per_inline_byte": format_cost(v.cpu_s_per_inline_byte),
                        "wqes_per_doorbell": v.wqes_per_doorbell, "signal_every": v.signal_every,
                        "inline_max": format_size(v.inline_max_bytes), "mtu": None if v.mtu_bytes is None else format_size(v.mtu_bytes)}
    return out


def load_host_cpu(path: str | Path):
    """A host-cpu card: the host's cores and its onloaded TCP cost (core-seconds per byte), stack latency."""
    from simcluster.hardware.cpu import HostCpuParams

    card = load_card(path, kind="host-cpu")
    p = cd.declared_params(card, str(path), cp.HOST_CPU)
    return HostCpuParams(None if p.cores is None else float(p.cores), p.tcp_cpu_per_byte, p.tcp_stack_latency), card

def load_aggregation(path: str | Path) -> tuple[AggregationParams, dict]:
    """An in-network aggregation switch card (kind: aggregation)."""
    card = load_card(path, kind="aggregation")
    p = cd.declared_params(card, str(path), cp.AGGREGATION, forwarding=FORWARDING)
    return AggregationParams(p.forwarding, p.line_rate, p.op_latency, p.aggregation_rate, p.buffer, p.threshold_frames,
                             p.frame_payload, p.frame_wire, p.trees_per_switch, p.max_levels), card

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
    p = cd.declared_params(card, str(path), cp.TRAINING_STEP)
    return Workload(p.model, p.image, p.batch_per_gpu, p.step, p.host, p.gpu, float(p.phases.forward),
                    float(p.phases.backward), float(p.phases.optimizer), tuple(p.grad_bytes), tuple(p.step_samples),
                    p.bucket_cap), card

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
    p = cd.declared_params(card, str(path), cp.DDP)
    return DdpParams(p.host_per_tensor, p.gpu_per_tensor, float(p.overlap_slowdown)), card

def load_nvls(path: str | Path) -> tuple[dict[int, float], float, dict]:
    """An NVLink SHARP card (kind: nvls): all_reduce algbw by GPUs per node (bytes/s), and a latency."""
    card = load_card(path, kind="nvls")
    p = cd.declared_params(card, str(path), cp.NVLS)
    return dict(p.allreduce_algbw), p.latency, card
