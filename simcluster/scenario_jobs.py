"""The scenario's jobs: one frozen dataclass per `kind` and its strict reader (`JOB_READERS`, kind -> reader;
`llm_training` is read by llm/job.py). Each reader checks its job against the machine it runs on."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from simcluster import job_documents as jd
from simcluster import strict
from simcluster.collectives.fabric import ALGORITHMS
from simcluster.collectives.schedule import OPS, canonical_op
from simcluster.errors import SimclusterError
from simcluster.llm.job import read_llm_job
from simcluster.scenario_machine import Machine
from simcluster.scenario_reader import ScenarioReader
from simcluster.training.pipeline import StorageSpec
from simcluster.units import parse_size_arg, parse_time


@dataclass(frozen=True)
class CollectiveSweep:
    op: str
    ranks: int
    min_bytes: int
    max_bytes: int
    factor: int
    engine: str
    algorithm: str | None = None
    card: Path | None = None       # this sweep's own collective card (one node), instead of the machine's
    measured: Path | None = None   # a trace bundle or nccl-tests log to print beside the prediction




@dataclass(frozen=True)
class ConcurrentJob:
    """Several collectives at once, each on its own nodes, sharing the fabric."""

    op: str
    size_bytes: int
    groups: tuple[tuple[int, ...], ...]   # node ids of each job, in ring order
    algorithm: str | None = None
    kind: str = "concurrent"


@dataclass(frozen=True)
class QperfJob:
    """qperf between two nodes of the machine, predicted from its NIC card and fabric."""

    tests: tuple[str, ...]
    streams: int = 1
    kind: str = "qperf"


@dataclass(frozen=True)
class TrainingJob:
    workload: Path            # a training-step card (1-GPU measurements)
    ddp: Path | None          # a ddp card (fitted DDP overheads); None = no DDP overhead
    dataset_samples: int | None
    epochs: float
    loader_cpu_per_sample_s: float  # host core-seconds to decode/augment one sample (0 = none)
    storage_stall_s: float    # a fixed input-pipeline wait per step (0 = none)
    storage: StorageSpec | None = None  # or: simulate the loader on local NVMe drives
    kind: str = "training"

def needs_collective_card(job) -> bool:
    return not isinstance(job, QperfJob) and not (isinstance(job, CollectiveSweep) and job.card is not None)


def _sweep(r: ScenarioReader, job: dict, key: str, machine: Machine) -> CollectiveSweep:
    j = r.declared(jd.SWEEP, job, key, algorithm=("auto",) + ALGORITHMS)
    sweep = CollectiveSweep(_op(r, j.op, key), j.ranks or machine.gpus_per_node * machine.nodes, parse_size_arg(j.min_size),
                            parse_size_arg(j.max_size), j.factor, j.engine, None if j.algorithm == "auto" else j.algorithm,
                            r.card(job, key) if j.card is not None else None,
                            r.existing(job, key, "measured", "a trace bundle (directory) or an nccl-tests log")
                            if j.measured is not None else None)
    for name in ("card", "measured"):
        if machine.domains > 1 and name in job:
            r.fail(f"{key}.{name}", "only a one-node sweep takes its own card or a measurement",
                   hint="multi-node sweeps run on the machine's cards")
    if machine.domains > 1 and sweep.ranks != machine.nodes * machine.gpus_per_node:
        r.fail(f"{key}.ranks", f"a multi-node sweep runs on all {machine.nodes * machine.gpus_per_node} GPUs, got {sweep.ranks}")
    if machine.domains == 1 and sweep.ranks > machine.domain_gpus:
        r.fail(f"{key}.ranks", f"one NVLink domain has {machine.domain_gpus} GPUs, got {sweep.ranks} ranks",
               hint="raise machine.gpus_per_node, or give the machine nodes, a NIC card and a fabric")
    if machine.domains > 1 and sweep.engine == "des":
        r.fail(f"{key}.engine", "the chunk-level DES is single-node; multi-node sweeps use the steady-state form",
               hint="engine: analytic")
    return sweep


def _op(r: ScenarioReader, name: str, key: str) -> str:
    try:
        return canonical_op(name)
    except SimclusterError:
        r.fail(f"{key}.op", f"unknown collective {strict.short(name)}", hint=f"one of {', '.join(OPS)}")


def _qperf(r: ScenarioReader, job: dict, key: str, machine: Machine) -> QperfJob:
    j = r.declared(jd.QPERF, job, key)
    if machine.nic is None:
        r.fail("machine", "a qperf job needs machine.nic (a NIC card)")
    return QperfJob(tuple(j.tests), j.streams)


def _node_list(r: ScenarioReader, spec, key: str, nodes: int) -> tuple[int, ...]:
    """The node ids of a group (job_documents.node_ids), each a node of the machine."""
    ids = jd.node_ids(spec)
    if max(ids) >= nodes:
        r.fail(key, f"a job needs >= 2 distinct nodes in 0..{nodes - 1}, got {strict.short(spec)}")
    return ids


def _one_node_domains(r: ScenarioReader, key: str, machine: Machine, kind: str) -> None:
    """A job kind that knows nodes, not NVLink domains of several nodes (machine.nvlink_domain)."""
    if machine.nvlink_domain:
        r.fail(key, f"a {kind} job is not modelled on a multi-node NVLink domain (machine.nvlink_domain)",
               hint="collective_sweep and llm_training jobs run on it")


def _concurrent(r: ScenarioReader, job: dict, key: str, machine: Machine) -> ConcurrentJob:
    j = r.declared(jd.CONCURRENT, job, key, algorithm=("auto",) + ALGORITHMS)
    _one_node_domains(r, key, machine, "concurrent")
    if machine.nodes < 2 or machine.fabric is None:
        r.fail(key, "concurrent jobs share a multi-node fabric: the machine needs nodes > 1, a NIC card and a fabric")
    op = _op(r, j.op, key)
    if op in ("alltoall", "sendrecv"):
        r.fail(f"{key}.op", f"{op} in concurrent jobs is not modelled: the point-to-point model prices one call's routes on "
               "contiguous nodes and does not see the other jobs' flows", hint="one of all_reduce, all_gather, reduce_scatter, broadcast, reduce")
    parsed = tuple(_node_list(r, g, f"{key}.groups[{i}]", machine.nodes) for i, g in enumerate(j.groups))
    seen = [n for g in parsed for n in g]
    if len(seen) != len(set(seen)):
        r.fail(f"{key}.groups", "a node belongs to two jobs")
    return ConcurrentJob(op, parse_size_arg(j.size), parsed, None if j.algorithm == "auto" else j.algorithm)


def _training(r: ScenarioReader, job: dict, key: str, machine: Machine) -> TrainingJob:
    j = r.declared(jd.TRAINING, job, key)
    _one_node_domains(r, key, machine, "training")
    storage = None
    if j.storage is not None:
        k, d = f"{key}.storage", job["storage"]
        storage = StorageSpec(r.card(d, k, "workload"), r.card(d, k, "nvme"), j.storage.drives,
                              parse_size_arg(j.storage.io_size))
    return TrainingJob(r.card(job, key, "workload"), r.card(job, key, "ddp") if j.ddp is not None else None,
                       j.dataset_samples, float(j.epochs), parse_time(j.loader_cpu_per_sample), parse_time(j.storage_stall),
                       storage)


JOB_READERS = {"collective_sweep": _sweep, "training": _training, "qperf": _qperf, "concurrent": _concurrent,
               "llm_training": read_llm_job}
