"""Strict schema and loader for scenario YAML: the machine section and the scenario around it.

A scenario names a machine (a collective model card and its shape) and the jobs to run. Every
key is checked: an unknown key, a missing one, a value of the wrong type or a unit typo is a
ScenarioError naming the file, the line and the dotted key, with what was expected. The field
reader is scenario_reader.py, the jobs and their readers scenario_jobs.py; this module reads the
machine, the what-if variants and puts them together (`load`, `load_variants`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from simcluster import documents, strict
from simcluster.collectives.nccl_constants import CPU_VENDORS
from simcluster.collectives.nccl_versions import NCCL_TABLES, TABLES_DEFAULT, TABLES_STATED
from simcluster.collectives.tree_kernel import scenario_nccl
from simcluster.errors import ScenarioError
from simcluster.hardware import pcie
from simcluster.machine_document import MACHINE
from simcluster.network.builders import FORWARDING, FabricSpec, leaves_per_plane, tiers_needed
from simcluster.network.builders import KINDS as FABRIC_KINDS
from simcluster.scenario_jobs import JOB_READERS, CollectiveSweep, ConcurrentJob, QperfJob, TrainingJob, needs_collective_card
from simcluster.scenario_machine import FabricConfig, Machine, NicSpec
from simcluster.scenario_reader import ScenarioReader


@dataclass(frozen=True)
class Scenario:
    path: Path
    name: str
    description: str
    seed: int
    machine: Machine
    jobs: tuple[CollectiveSweep | TrainingJob | QperfJob | ConcurrentJob, ...]


def _machine(r: ScenarioReader, m) -> Machine:
    """The machine section read through its declaration (machine_document.py), its card paths resolved to files."""
    d = r.declared(MACHINE, m, "machine", **MACHINE_VOCABULARY)
    if d.nccl_tables == TABLES_STATED and d.nccl is None:     # the opt-in would do nothing, silently (final read 51 item 8)
        r.fail("machine.nccl_tables", "stated needs machine.nccl (the NCCL whose tables price the choice)",
               hint=f"state machine.nccl, or drop nccl_tables for the default, {TABLES_DEFAULT}'s tables")
    nic = fabric = None
    if d.nic is not None:
        nic = NicSpec(r.card(m["nic"], "machine.nic"), d.nic.per_node, d.nic.streams, d.nic.pcie, d.nic.via_cpu)
    if d.fabric is not None:
        f = d.fabric
        fabric = FabricConfig(f.kind, f.down_ports, f.spines, f.oversubscription, f.planes, f.link_latency, f.switch_latency,
                              f.forwarding, f.spine_ports, f.tiers)
    host = d.host
    host_card = r.card(m["host"], "machine.host") if host is not None and host.card is not None else None
    cores = 64.0
    if host is not None and host.cores is not None:
        cores = float(host.cores)
    elif host_card is not None:
        from simcluster.cards import load_host_cpu

        cores = load_host_cpu(host_card)[0].cores or cores

    def card(block: str) -> Path | None:
        return r.card(m[block], f"machine.{block}") if getattr(d, block) is not None else None

    gpu = d.gpu
    return Machine(r.card(m, "machine") if d.card is not None else None, d.gpus_per_node, d.nodes, nic, fabric, cores,
                   card("aggregation"), card("nvls"), card("gpu"), host_card, host.cpu_vendor if host else "intel",
                   gpu.clock if gpu else "fixed", 0 if d.domain_gpus == d.gpus_per_node else d.domain_gpus,
                   None if gpu is None or gpu.speed_spread is None else float(gpu.speed_spread),
                   host.os_jitter if host else None, d.nccl, d.nccl_tables)


def _tiers_refused(domains: int, nics_per_domain: int, f) -> tuple[str, str] | None:
    """machine.fabric.tiers: why the stated switch tiers cannot join the fabric's leaves, and a hint (None: they can)."""
    spec = FabricSpec(domains, nics_per_domain, 1.0, f.kind, f.down_ports, f.spines, f.oversubscription, f.planes,
                      spine_ports=f.spine_ports, tiers=f.tiers)
    need = tiers_needed(spec)
    if need <= f.tiers:
        return None
    leaves = leaves_per_plane(spec)
    return (f"{f.tiers} switch tier{'s' if f.tiers > 1 else ''} of {spec.spine_radix}-port spines cannot join the "
            f"{leaves} leaves ({f.down_ports} NIC ports each) that {domains} nodes x {nics_per_domain} NICs need: the "
            f"fabric needs {need} tiers",
            f"tiers: {need}, or spine_ports: {leaves} (a spine with a port for every leaf)" if f.tiers == 2 else f"tiers: {need}")


def _pcie_link(text) -> str:
    """machine.nic.pcie: the PCIe link a GPU reaches its NIC through, as built ('gen5x16'), in its canonical text."""
    try:
        return str(pcie.parse(text))
    except ValueError as exc:
        raise ScenarioError(str(exc), hint="the narrowest link between a GPU and its NIC (GPU, PCIe switch, NIC)") from None


MACHINE_VOCABULARY = {"fabric_kind": FABRIC_KINDS, "forwarding": FORWARDING, "cpu_vendor": CPU_VENDORS,   # the models'
                      "pcie": _pcie_link, "fabric_tiers": _tiers_refused, "nccl": scenario_nccl,  # (machine_document.py)
                      "nccl_tables": NCCL_TABLES}


def _merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(base[k], v) if isinstance(v, dict) and isinstance(base.get(k), dict) else v
    return out


def load_variants(path: str | Path, nodes: int | None = None) -> list[tuple[str, Scenario]]:
    """A scenario and its what-if variants: `variants: {label: {machine: {...overrides}}}` each give a
    Scenario whose machine is the base machine with those keys replaced (checked as strictly); a variant may replace
    the job list (`jobs:`) or set dotted keys of the document (`set:` with lines `jobs[0].parallel.tp: 4`, after the others)."""
    path = Path(path)
    doc, lines = _read(path)
    r = ScenarioReader(path, lines)
    variants = doc.get("variants") if isinstance(doc, dict) else None
    if variants is None:
        return [("", _build(path, doc, r, nodes))]
    if not isinstance(variants, dict) or not variants:
        r.fail("variants", "expected a mapping of label -> overrides")
    out = []
    for label, over in variants.items():
        r.variant = str(label)
        r.mapping(over, f"variants.{label}", set(), {"machine", "jobs", "description", "set"})
        merged = _merge({k: v for k, v in doc.items() if k != "variants"}, {"machine": over.get("machine", {})})
        if "jobs" in over:  # a variant may replace the job list (e.g. a different storage setup)
            merged["jobs"] = over["jobs"]
        merged = _set_keys(r, merged, over.get("set"), f"variants.{label}.set")
        out.append((str(label), _build(path, merged, r, nodes)))
    return out


def _set_keys(r: ScenarioReader, doc: dict, keys, where: str) -> dict:
    """A variant's `set: {dotted.key: value}` applied to the document (one-line errors at the key)."""
    from simcluster.dotted import set_key

    if keys is None:
        return doc
    if not isinstance(keys, dict) or not keys:
        r.fail(where, "expected a mapping of dotted keys to values", hint="set:, then one 'jobs[0].parallel.tp: 4' per line")
    for key, value in keys.items():
        if str(key).split(".")[0].split("[")[0] == "variants":
            r.fail(f"{where}.{key}", "a variant cannot set variants (it is read from the base document)")
        try:
            doc = set_key(doc, str(key), value)
        except ValueError as exc:
            r.fail(f"{where}.{key}", str(exc).removeprefix(f"{key}: "))
    return doc


def load(path: str | Path) -> Scenario:
    """The scenario (its first variant, where it has several)."""
    return load_variants(path)[0][1]


def _read(path: Path) -> tuple[dict, dict[str, int]]:
    doc, lines = strict.load_yaml(path, ScenarioError, what="scenario (YAML)", lines=True, schema=documents.SCENARIO)
    if doc is None:
        ScenarioReader(path, lines).fail("", "the scenario is empty")
    return doc, lines


DLIO_KEYS = {"workflow", "dataset", "reader"}  # a DLIO workload config's top level, not a scenario's


def _rescale_llm_dp(r: ScenarioReader, doc: dict, nodes: int) -> dict:
    """`--nodes N` on an llm_training job: the model-parallel split (tp, pp, cp) stays, dp takes the GPUs it leaves, and
    the global batch grows with dp (each replica keeps its sequences per step, so the micro-batches per step stay)."""
    per_node = doc["machine"].get("gpus_per_node", 1)
    jobs = doc.get("jobs")
    if not isinstance(jobs, list) or not isinstance(per_node, int):
        return doc
    out = []
    for i, job in enumerate(jobs):
        par = job.get("parallel") if isinstance(job, dict) and job.get("kind") == "llm_training" else None
        degrees = [par.get(k, 1) for k in ("tp", "pp", "cp", "dp")] + [job.get("global_batch")] if isinstance(par, dict) else [None]
        if not all(isinstance(x, int) and not isinstance(x, bool) and x >= 1 for x in degrees):
            out.append(job)     # the reader refuses what is wrong, at its key
            continue
        split = par.get("tp", 1) * par.get("pp", 1) * par.get("cp", 1)
        old_dp = par.get("dp", 1)
        if (nodes * per_node) % split:
            r.fail(f"jobs[{i}].parallel", f"--nodes {nodes}: {nodes * per_node} GPUs do not divide by tp x pp x cp = {split}")
        dp = nodes * per_node // split
        if (job["global_batch"] * dp) % old_dp:
            r.fail(f"jobs[{i}].global_batch", f"--nodes {nodes}: dp {old_dp} -> {dp} cannot scale the global batch "
                   f"{job['global_batch']} by {dp}/{old_dp} to whole sequences")
        out.append({**job, "parallel": {**par, "dp": dp}, "global_batch": job["global_batch"] * dp // old_dp})
    return {**doc, "jobs": out}


def _build(path: Path, doc, r: ScenarioReader, nodes: int | None = None) -> Scenario:
    if isinstance(doc, dict) and DLIO_KEYS <= set(doc):
        r.fail("", "this is a DLIO workload config, not a scenario",
               hint=f"use it with: simcluster storage max-accelerators --workload {path} --nvme CARD")
    r.mapping(doc, "", {"name", "machine", "jobs"}, {"description", "seed", "variants"})
    if nodes is not None and isinstance(doc.get("machine"), dict):
        doc = _merge(doc, {"machine": {"nodes": nodes}})
        doc = _rescale_llm_dp(r, doc, nodes)
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
        if machine.card is None and needs_collective_card(jobs[-1]):
            r.fail("machine", f"missing key 'card': a {kind} job needs the node's collective card (models/collective/)")
    seed = r.declared(documents.SCENARIO, doc, "").seed or 0    # the document as the variant or sweep point left it
    return Scenario(path, str(doc["name"]), str(doc.get("description", "")), seed, machine, tuple(jobs))
