"""The scenario's jobs: one frozen dataclass per `kind` and its strict reader (`JOB_READERS`, kind -> reader;
`llm_training` is read by llm/job.py). Each reader checks its job against the machine it runs on."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from simcluster import strict
from simcluster.collectives.fabric import ALGORITHMS
from simcluster.collectives.schedule import OPS, canonical_op
from simcluster.errors import SimclusterError
from simcluster.llm.job import read_llm_job
from simcluster.scenario_machine import Machine
from simcluster.scenario_reader import MAX_GPUS, ScenarioReader
from simcluster.training.pipeline import StorageSpec
from simcluster.units import parse_size_arg, parse_time

ENGINES = ("analytic", "des")


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


QPERF_TESTS = ("tcp_bw", "tcp_lat", "rc_bw", "rc_lat")


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
    r.mapping(job, key, {"kind", "op"}, {"ranks", "min_size", "max_size", "factor", "engine", "algorithm", "card",
                                         "measured"})
    try:
        op = canonical_op(str(job["op"]))
    except SimclusterError:
        r.fail(f"{key}.op", f"unknown collective {strict.short(job['op'])}", hint=f"one of {', '.join(OPS)}")
    job = {"ranks": machine.gpus_per_node * machine.nodes, "min_size": 8, "max_size": "128M", "factor": 2,
           "engine": "analytic", "algorithm": "auto", **job}
    algorithm = r.choice(job, key, "algorithm", ("auto",) + ALGORITHMS)
    sweep = CollectiveSweep(op, r.integer(job, key, "ranks", maximum=MAX_GPUS), r.size(job, key, "min_size"),
                            r.size(job, key, "max_size"), r.integer(job, key, "factor", minimum=2, maximum=2**20),
                            r.choice(job, key, "engine", ENGINES), None if algorithm == "auto" else algorithm,
                            r.card(job, key) if "card" in job else None,
                            r.existing(job, key, "measured", "a trace bundle (directory) or an nccl-tests log")
                            if "measured" in job else None)
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
    if sweep.min_bytes > sweep.max_bytes:
        r.fail(f"{key}.min_size", "min_size is larger than max_size")
    return sweep


def _qperf(r: ScenarioReader, job: dict, key: str, machine: Machine) -> QperfJob:
    r.mapping(job, key, {"kind", "tests"}, {"streams"})
    tests = job["tests"]
    if not isinstance(tests, list) or not tests or any(t not in QPERF_TESTS for t in tests):
        r.fail(f"{key}.tests", f"expected a list of qperf tests from {', '.join(QPERF_TESTS)}, got {strict.short(tests)}")
    if machine.nic is None:
        r.fail("machine", "a qperf job needs machine.nic (a NIC card)")
    return QperfJob(tuple(tests), r.integer(job, key, "streams", default=1))


def _node_list(r: ScenarioReader, spec, key: str, nodes: int) -> tuple[int, ...]:
    """'0-7' (a range), '0-15/2' (a stride), or a list of node ids."""
    ids: list[int] = []
    if isinstance(spec, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in spec):
        ids = list(spec)
    elif isinstance(spec, str) and re.fullmatch(r"\d+-\d+(/\d+)?", spec.strip()):
        span, _, step = spec.strip().partition("/")
        lo, hi = (int(x) for x in span.split("-"))
        if step and int(step) < 1:
            r.fail(key, f"the stride in {spec!r} must be >= 1")
        ids = list(range(lo, hi + 1, int(step or 1)))
    else:
        r.fail(key, f"expected a node range like '0-7', '0-15/2' or a list of node ids, got {strict.short(spec)}")
    if len(ids) < 2 or len(set(ids)) != len(ids) or min(ids) < 0 or max(ids) >= nodes:
        r.fail(key, f"a job needs >= 2 distinct nodes in 0..{nodes - 1}, got {strict.short(spec)}")
    return tuple(ids)


def _one_node_domains(r: ScenarioReader, key: str, machine: Machine, kind: str) -> None:
    """A job kind that knows nodes, not NVLink domains of several nodes (machine.nvlink_domain)."""
    if machine.nvlink_domain:
        r.fail(key, f"a {kind} job is not modelled on a multi-node NVLink domain (machine.nvlink_domain)",
               hint="collective_sweep and llm_training jobs run on it")


def _concurrent(r: ScenarioReader, job: dict, key: str, machine: Machine) -> ConcurrentJob:
    r.mapping(job, key, {"kind", "op", "size", "groups"}, {"algorithm"})
    _one_node_domains(r, key, machine, "concurrent")
    if machine.nodes < 2 or machine.fabric is None:
        r.fail(key, "concurrent jobs share a multi-node fabric: the machine needs nodes > 1, a NIC card and a fabric")
    try:
        op = canonical_op(str(job["op"]))
    except SimclusterError:
        r.fail(f"{key}.op", f"unknown collective {strict.short(job['op'])}", hint=f"one of {', '.join(OPS)}")
    if op in ("alltoall", "sendrecv"):
        r.fail(f"{key}.op", f"{op} in concurrent jobs is not modelled: the point-to-point model prices one call's routes on "
               "contiguous nodes and does not see the other jobs' flows", hint="one of all_reduce, all_gather, reduce_scatter, broadcast, reduce")
    groups = job["groups"]
    if not isinstance(groups, list) or len(groups) < 1:
        r.fail(f"{key}.groups", "expected a list of node groups, one per job")
    parsed = tuple(_node_list(r, g, f"{key}.groups[{i}]", machine.nodes) for i, g in enumerate(groups))
    seen = [n for g in parsed for n in g]
    if len(seen) != len(set(seen)):
        r.fail(f"{key}.groups", "a node belongs to two jobs")
    algorithm = r.choice(job, key, "algorithm", ("auto",) + ALGORITHMS, "auto")
    return ConcurrentJob(op, r.size(job, key, "size"), parsed, None if algorithm == "auto" else algorithm)


def _training(r: ScenarioReader, job: dict, key: str, machine: Machine) -> TrainingJob:
    r.mapping(job, key, {"kind", "workload"}, {"ddp", "dataset_samples", "epochs", "loader_cpu_per_sample", "storage_stall",
                                               "storage"})
    _one_node_domains(r, key, machine, "training")
    ddp = r.card(job, key, "ddp") if "ddp" in job else None
    storage = None
    if job.get("storage") is not None:
        k = f"{key}.storage"
        d = r.mapping(job["storage"], k, {"workload", "nvme"}, {"drives", "io_size"})
        storage = StorageSpec(r.card(d, k, "workload"), r.card(d, k, "nvme"), r.integer(d, k, "drives", default=1),
                              int(r.quantity(d, k, "io_size", parse_size_arg, "4MiB")))
    samples = r.integer(job, key, "dataset_samples") if "dataset_samples" in job else None
    return TrainingJob(r.card(job, key, "workload"), ddp, samples, r.number(job, key, "epochs", 1e-6, 1),
                       r.quantity(job, key, "loader_cpu_per_sample", parse_time, "0s"),
                       r.quantity(job, key, "storage_stall", parse_time, "0s"), storage)


JOB_READERS = {"collective_sweep": _sweep, "training": _training, "qperf": _qperf, "concurrent": _concurrent,
               "llm_training": read_llm_job}
