"""Strict schema and loader for scenario YAML.

A scenario names a machine (a collective model card and its shape) and the jobs to run. Every
key is checked: an unknown key, a missing one, a value of the wrong type or a unit typo is a
ScenarioError naming the file, the line and the dotted key, with what was expected.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from simcluster import strict
from simcluster.collectives.fabric import ALGORITHMS
from simcluster.collectives.nccl_constants import CPU_VENDORS
from simcluster.collectives.schedule import OPS, canonical_op
from simcluster.errors import ScenarioError, SimclusterError, UnitError
from simcluster.llm.job import read_llm_job
from simcluster.network.builders import FORWARDING
from simcluster.network.builders import KINDS as FABRIC_KINDS
from simcluster.units import parse_size_arg, parse_time

ENGINES = ("analytic", "des")
MAX_GPUS = 131_072          # GPUs in one machine: 8x the largest published training run; the fabric model is O(GPUs)
MAX_GPUS_PER_NODE = 1024    # one NVLink domain
MAX_INTEGER = 2**40         # any other count (a bound that keeps arithmetic finite)


@dataclass(frozen=True)
class NicSpec:
    card: Path
    per_node: int
    streams: int


@dataclass(frozen=True)
class FabricConfig:
    kind: str
    down_ports: int
    spines: int
    oversubscription: float
    planes: int
    link_latency_s: float
    switch_latency_s: float
    forwarding: str


@dataclass(frozen=True)
class Machine:
    card: Path | None             # the collective card of one node's NVLink domain (collectives, training)
    gpus_per_node: int
    nodes: int
    nic: NicSpec | None = None
    fabric: FabricConfig | None = None
    host_cores: float = 64.0
    aggregation_card: Path | None = None
    nvls_card: Path | None = None
    gpu_card: Path | None = None   # a GPU card (models/gpu/), for llm_training jobs
    host_card: Path | None = None  # a host-cpu card: its TCP cost per byte replaces a TCP NIC card's
    cpu_vendor: str = "intel"      # the hosts' CPU, as NCCL's tuner reads it (collectives/nccl_tuner.py)


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
class StorageSpec:
    workload: Path            # a DLIO workload YAML: sample sizes, read threads, prefetch
    nvme: Path                # an nvme card
    drives: int               # local drives per node (striped)
    io_size: int


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


@dataclass(frozen=True)
class Scenario:
    path: Path
    name: str
    description: str
    seed: int
    machine: Machine
    jobs: tuple[CollectiveSweep | TrainingJob | QperfJob | ConcurrentJob, ...]


class _Reader:
    def __init__(self, path: Path, lines: dict[str, int]):
        self.path, self.lines = path, lines

    def fail(self, key: str, message: str, hint: str | None = None):
        line = self.lines.get(key)
        where = f"{self.path}:{line}" if line else str(self.path)
        raise ScenarioError(f"{key}: {message}" if key else message, where=where, hint=hint)

    def mapping(self, doc, key: str, required: set[str], optional: set[str]) -> dict:
        if not isinstance(doc, dict):
            self.fail(key, f"expected a mapping, got {type(doc).__name__}")
        for name in doc:
            if name not in required | optional:
                dotted = f"{key}.{name}" if key else str(name)
                self.fail(dotted, f"unknown key '{name}'", hint=f"expected one of: {', '.join(sorted(required | optional))}")
        for name in sorted(required):
            if name not in doc:
                self.fail(key, f"missing key '{name}'")
        return doc

    def integer(self, doc, key: str, name: str, minimum: int = 1, default=None, maximum: int = MAX_INTEGER) -> int:
        value = doc.get(name, default)
        dotted = f"{key}.{name}" if key else name
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
            self.fail(dotted, f"expected an integer from {minimum} to {maximum:,}, got {strict.short(value)}")
        return value

    def choice(self, doc, key: str, name: str, choices, default=None) -> str:
        value = doc.get(name, default)
        if value not in choices:
            self.fail(f"{key}.{name}", f"expected one of {', '.join(map(str, choices))}, got {strict.short(value)}")
        return value

    def quantity(self, doc, key: str, name: str, parse, default):
        value = doc.get(name, default)
        try:
            return parse(value)
        except UnitError as exc:
            self.fail(f"{key}.{name}", exc.message, hint=exc.hint)

    def number(self, doc, key: str, name: str, minimum: float, default, maximum: float = 1e9) -> float:
        value = doc.get(name, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not minimum <= value <= maximum:
            self.fail(f"{key}.{name}", f"expected a number from {minimum:g} to {maximum:g}, got {strict.short(value)}")
        return float(value)

    def card(self, doc, key: str, name: str = "card") -> Path:
        if not isinstance(doc[name], str) or not doc[name]:
            self.fail(f"{key}.{name}", f"expected the path of a model card, got {strict.short(doc[name])}")
        card = _resolve(self.path, doc[name])
        if not card.is_file():
            self.fail(f"{key}.{name}", f"model card {doc[name]!r} not found", hint="run 'simcluster calibrate' to make one, "
                      "or point to a file under models/")
        return card

    def existing(self, doc, key: str, name: str, what: str) -> Path:
        path = _resolve(self.path, str(doc[name]))
        if not path.exists():
            self.fail(f"{key}.{name}", f"{doc[name]!r} not found", hint=f"expected {what}")
        return path

    def size(self, doc, key: str, name: str) -> int:
        value = doc[name]
        try:
            return parse_size_arg(value)
        except UnitError as exc:
            self.fail(f"{key}.{name}", exc.message, hint=exc.hint)


def _machine(r: _Reader, m) -> Machine:
    r.mapping(m, "machine", set(), {"card", "gpus_per_node", "nodes", "nic", "fabric", "host", "aggregation", "nvls", "gpu"})
    card = r.card(m, "machine") if m.get("card") is not None else None
    gpus = r.integer(m, "machine", "gpus_per_node", default=1, maximum=MAX_GPUS_PER_NODE)
    nodes = r.integer(m, "machine", "nodes", default=1, maximum=MAX_GPUS // gpus)
    nic = fabric = aggregation = None
    if nodes > 1:
        for name in ("nic", "fabric"):
            if m.get(name) is None:
                r.fail("machine", f"missing key '{name}': a machine of {nodes} nodes needs a NIC card and a fabric")
    if m.get("nic") is not None:
        d = r.mapping(m["nic"], "machine.nic", {"card", "per_node"}, {"streams"})
        nic = NicSpec(r.card(d, "machine.nic"), r.integer(d, "machine.nic", "per_node"),
                      r.integer(d, "machine.nic", "streams", default=1))
    if m.get("fabric") is not None:
        d = r.mapping(m["fabric"], "machine.fabric", {"kind"},
                      {"down_ports", "spines", "oversubscription", "planes", "link_latency", "switch_latency", "forwarding"})
        k = "machine.fabric"
        fabric = FabricConfig(r.choice(d, k, "kind", FABRIC_KINDS), r.integer(d, k, "down_ports", default=32),
                              r.integer(d, k, "spines", default=16), r.number(d, k, "oversubscription", 1.0, 1.0),
                              r.integer(d, k, "planes", default=1), r.quantity(d, k, "link_latency", parse_time, "0s"),
                              r.quantity(d, k, "switch_latency", parse_time, "0s"),
                              r.choice(d, k, "forwarding", FORWARDING, "cut-through"))
    cores = 64.0
    host_card = None
    cpu_vendor = "intel"
    if "host" in m:
        d = r.mapping(m["host"], "machine.host", set(), {"cores", "card", "cpu_vendor"})
        cpu_vendor = r.choice(d, "machine.host", "cpu_vendor", CPU_VENDORS, "intel")
        host_card = r.card(d, "machine.host") if "card" in d else None
        if "cores" in d:
            cores = r.number(d, "machine.host", "cores", 1, None, maximum=2**16)
        elif host_card is not None:
            from simcluster.cards import load_host_cpu

            cores = load_host_cpu(host_card)[0].cores or cores
    if m.get("aggregation") is not None:  # null switches it off (what-if variants)
        d = r.mapping(m["aggregation"], "machine.aggregation", {"card"}, set())
        aggregation = r.card(d, "machine.aggregation")
    nvls = None
    if m.get("nvls") is not None:  # NVLink SHARP in the node's NVSwitches
        d = r.mapping(m["nvls"], "machine.nvls", {"card"}, set())
        nvls = r.card(d, "machine.nvls")
    gpu = r.card(r.mapping(m["gpu"], "machine.gpu", {"card"}, set()), "machine.gpu") if m.get("gpu") is not None else None
    return Machine(card, gpus, nodes, nic, fabric, cores, aggregation, nvls, gpu, host_card, cpu_vendor)


def _merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(base[k], v) if isinstance(v, dict) and isinstance(base.get(k), dict) else v
    return out


def load_variants(path: str | Path, nodes: int | None = None) -> list[tuple[str, Scenario]]:
    """A scenario and its what-if variants: `variants: {label: {machine: {...overrides}}}` each give a
    Scenario whose machine is the base machine with those keys replaced (checked as strictly)."""
    path = Path(path)
    doc, lines = _read(path)
    r = _Reader(path, lines)
    variants = doc.get("variants") if isinstance(doc, dict) else None
    if variants is None:
        return [("", _build(path, doc, r, nodes))]
    if not isinstance(variants, dict) or not variants:
        r.fail("variants", "expected a mapping of label -> overrides")
    out = []
    for label, over in variants.items():
        r.mapping(over, f"variants.{label}", set(), {"machine", "jobs", "description"})
        merged = _merge({k: v for k, v in doc.items() if k != "variants"}, {"machine": over.get("machine", {})})
        if "jobs" in over:  # a variant may replace the job list (e.g. a different storage setup)
            merged["jobs"] = over["jobs"]
        out.append((str(label), _build(path, merged, r, nodes)))
    return out


def load(path: str | Path) -> Scenario:
    """The scenario (its first variant, where it has several)."""
    return load_variants(path)[0][1]


def _read(path: Path) -> tuple[dict, dict[str, int]]:
    doc, lines = strict.load_yaml(path, ScenarioError, what="scenario (YAML)", lines=True)
    if doc is None:
        _Reader(path, lines).fail("", "the scenario is empty")
    return doc, lines


DLIO_KEYS = {"workflow", "dataset", "reader"}  # a DLIO workload config's top level, not a scenario's


def _build(path: Path, doc, r: _Reader, nodes: int | None = None) -> Scenario:
    if isinstance(doc, dict) and DLIO_KEYS <= set(doc):
        r.fail("", "this is a DLIO workload config, not a scenario",
               hint=f"use it with: simcluster storage max-accelerators --workload {path} --nvme CARD")
    r.mapping(doc, "", {"name", "machine", "jobs"}, {"description", "seed", "variants"})
    if nodes is not None and isinstance(doc.get("machine"), dict):
        doc = _merge(doc, {"machine": {"nodes": nodes}})
    machine = _machine(r, doc["machine"])
    if not isinstance(doc["jobs"], list) or not doc["jobs"]:
        r.fail("jobs", "expected a non-empty list of jobs")
    jobs = []
    for i, job in enumerate(doc["jobs"]):
        key = f"jobs[{i}]"
        if not isinstance(job, dict):
            r.fail(key, f"expected a mapping, got {type(job).__name__}")
        kind = r.choice(job, key, "kind", tuple(JOB_READERS))
        jobs.append(JOB_READERS[kind](r, job, key, machine))
        if machine.card is None and _needs_collective_card(jobs[-1]):
            r.fail("machine", f"missing key 'card': a {kind} job needs the node's collective card (models/collective/)")
    seed = r.integer(doc, "", "seed", minimum=0, default=0)
    return Scenario(path, str(doc["name"]), str(doc.get("description", "")), seed, machine, tuple(jobs))


def _needs_collective_card(job) -> bool:
    return not isinstance(job, QperfJob) and not (isinstance(job, CollectiveSweep) and job.card is not None)


def _sweep(r: _Reader, job: dict, key: str, machine: Machine) -> CollectiveSweep:
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
        if machine.nodes > 1 and name in job:
            r.fail(f"{key}.{name}", "only a one-node sweep takes its own card or a measurement",
                   hint="multi-node sweeps run on the machine's cards")
    if machine.nodes > 1 and sweep.ranks != machine.nodes * machine.gpus_per_node:
        r.fail(f"{key}.ranks", f"a multi-node sweep runs on all {machine.nodes * machine.gpus_per_node} GPUs, got {sweep.ranks}")
    if machine.nodes == 1 and sweep.ranks > machine.gpus_per_node:
        r.fail(f"{key}.ranks", f"one node has {machine.gpus_per_node} GPUs, got {sweep.ranks} ranks",
               hint="raise machine.gpus_per_node, or give the machine nodes, a NIC card and a fabric")
    if machine.nodes > 1 and sweep.engine == "des":
        r.fail(f"{key}.engine", "the chunk-level DES is single-node; multi-node sweeps use the steady-state form",
               hint="engine: analytic")
    if sweep.min_bytes > sweep.max_bytes:
        r.fail(f"{key}.min_size", "min_size is larger than max_size")
    return sweep


def _qperf(r: _Reader, job: dict, key: str, machine: Machine) -> QperfJob:
    r.mapping(job, key, {"kind", "tests"}, {"streams"})
    tests = job["tests"]
    if not isinstance(tests, list) or not tests or any(t not in QPERF_TESTS for t in tests):
        r.fail(f"{key}.tests", f"expected a list of qperf tests from {', '.join(QPERF_TESTS)}, got {strict.short(tests)}")
    if machine.nic is None:
        r.fail("machine", "a qperf job needs machine.nic (a NIC card)")
    return QperfJob(tuple(tests), r.integer(job, key, "streams", default=1))


def _node_list(r: _Reader, spec, key: str, nodes: int) -> tuple[int, ...]:
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


def _concurrent(r: _Reader, job: dict, key: str, machine: Machine) -> ConcurrentJob:
    r.mapping(job, key, {"kind", "op", "size", "groups"}, {"algorithm"})
    if machine.nodes < 2 or machine.fabric is None:
        r.fail(key, "concurrent jobs share a multi-node fabric: the machine needs nodes > 1, a NIC card and a fabric")
    try:
        op = canonical_op(str(job["op"]))
    except SimclusterError:
        r.fail(f"{key}.op", f"unknown collective {strict.short(job['op'])}", hint=f"one of {', '.join(OPS)}")
    groups = job["groups"]
    if not isinstance(groups, list) or len(groups) < 1:
        r.fail(f"{key}.groups", "expected a list of node groups, one per job")
    parsed = tuple(_node_list(r, g, f"{key}.groups[{i}]", machine.nodes) for i, g in enumerate(groups))
    seen = [n for g in parsed for n in g]
    if len(seen) != len(set(seen)):
        r.fail(f"{key}.groups", "a node belongs to two jobs")
    algorithm = r.choice(job, key, "algorithm", ("auto",) + ALGORITHMS, "auto")
    return ConcurrentJob(op, r.size(job, key, "size"), parsed, None if algorithm == "auto" else algorithm)


def _training(r: _Reader, job: dict, key: str, machine: Machine) -> TrainingJob:
    r.mapping(job, key, {"kind", "workload"}, {"ddp", "dataset_samples", "epochs", "loader_cpu_per_sample", "storage_stall",
                                               "storage"})
    ddp = r.card(job, key, "ddp") if "ddp" in job else None
    storage = None
    if job.get("storage") is not None:
        k = f"{key}.storage"
        d = r.mapping(job["storage"], k, {"workload", "nvme"}, {"drives", "io_size"})
        storage = StorageSpec(r.card(d, k, "workload"), r.card(d, k, "nvme"), r.integer(d, k, "drives", default=1),
                              int(r.quantity(d, k, "io_size", parse_size_arg, "4MiB")))
    samples = r.integer(job, key, "dataset_samples") if "dataset_samples" in job else None
    return TrainingJob(r.card(job, key, "workload"), ddp, samples, r.number(job, key, "epochs", 0, 1),
                       r.quantity(job, key, "loader_cpu_per_sample", parse_time, "0s"),
                       r.quantity(job, key, "storage_stall", parse_time, "0s"), storage)


JOB_READERS = {"collective_sweep": _sweep, "training": _training, "qperf": _qperf, "concurrent": _concurrent,
               "llm_training": read_llm_job}


def _resolve(scenario_path: Path, ref: str) -> Path:
    """A card path is relative to the scenario's folder, else to the working directory."""
    candidate = scenario_path.parent / str(ref)
    return candidate if candidate.exists() else Path(str(ref))
