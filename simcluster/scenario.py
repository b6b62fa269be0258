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
from simcluster.errors import ScenarioError
from simcluster.hardware import pcie
from simcluster.network.builders import FORWARDING, FabricSpec, leaves_per_plane, tiers_needed
from simcluster.network.builders import KINDS as FABRIC_KINDS
from simcluster.scenario_jobs import JOB_READERS, CollectiveSweep, ConcurrentJob, QperfJob, TrainingJob, needs_collective_card
from simcluster.scenario_machine import FabricConfig, Machine, NicSpec
from simcluster.scenario_reader import MAX_GPUS, MAX_GPUS_PER_NODE, MAX_NICS_PER_NODE, ScenarioReader
from simcluster.units import parse_time

GPU_CLOCKS = ("fixed", "duty")   # machine.gpu.clock: the card's reference clock, or the step's own (llm/clock.py)


@dataclass(frozen=True)
class Scenario:
    path: Path
    name: str
    description: str
    seed: int
    machine: Machine
    jobs: tuple[CollectiveSweep | TrainingJob | QperfJob | ConcurrentJob, ...]


def _machine(r: ScenarioReader, m) -> Machine:
    r.mapping(m, "machine", set(), {"card", "gpus_per_node", "nodes", "nic", "fabric", "host", "aggregation", "nvls", "gpu",
                                    "nvlink_domain"})
    card = r.card(m, "machine") if m.get("card") is not None else None
    gpus = r.integer(m, "machine", "gpus_per_node", default=1, maximum=MAX_GPUS_PER_NODE)
    nodes = r.integer(m, "machine", "nodes", default=1, maximum=MAX_GPUS // gpus)
    domain = _nvlink_domain(r, m, gpus, nodes)
    nic = fabric = aggregation = None
    if nodes * gpus > domain:
        for name in ("nic", "fabric"):
            if m.get(name) is None:
                r.fail("machine", f"missing key '{name}': a machine of {nodes * gpus // domain} NVLink domains needs a NIC card and a fabric")
    if m.get("nic") is not None:
        d = r.mapping(m["nic"], "machine.nic", {"card", "per_node"}, {"streams", "pcie"})
        nic = NicSpec(r.card(d, "machine.nic"), r.integer(d, "machine.nic", "per_node", maximum=MAX_NICS_PER_NODE),
                      r.integer(d, "machine.nic", "streams", default=1, maximum=1024), _pcie(r, d))
        if nodes * nic.per_node > MAX_GPUS:
            r.fail("machine.nic.per_node", f"{nodes} nodes x {nic.per_node} NICs is {nodes * nic.per_node:,} NICs; at most "
                   f"{MAX_GPUS:,} are modelled (the fabric model is O(NICs))")
    if m.get("fabric") is not None:
        d = r.mapping(m["fabric"], "machine.fabric", {"kind"},
                      {"down_ports", "spines", "oversubscription", "planes", "link_latency", "switch_latency", "forwarding",
                       "spine_ports", "tiers"})
        k = "machine.fabric"
        fabric = FabricConfig(r.choice(d, k, "kind", FABRIC_KINDS), r.integer(d, k, "down_ports", default=32),
                              r.integer(d, k, "spines", default=16), r.ratio(d, k, "oversubscription", 1.0),
                              r.integer(d, k, "planes", default=1), r.quantity(d, k, "link_latency", parse_time, "0s"),
                              r.quantity(d, k, "switch_latency", parse_time, "0s"),
                              r.choice(d, k, "forwarding", FORWARDING, "cut-through"),
                              r.integer(d, k, "spine_ports", minimum=2, maximum=4096) if d.get("spine_ports") is not None else None,
                              r.integer(d, k, "tiers", maximum=8) if d.get("tiers") is not None else None)
    cores = 64.0
    host_card = None
    cpu_vendor = "intel"
    os_jitter = None
    if "host" in m:
        d = r.mapping(m["host"], "machine.host", set(), {"cores", "card", "cpu_vendor", "os_jitter"})
        cpu_vendor = r.choice(d, "machine.host", "cpu_vendor", CPU_VENDORS, "intel")
        if d.get("os_jitter") is not None:   # mean time a host loses to OS noise per GPU and step (llm/scaleout.py)
            os_jitter = r.quantity(d, "machine.host", "os_jitter", parse_time, None)
            if not 0 <= os_jitter <= 10.0:
                r.fail("machine.host.os_jitter", f"expected a time from 0s to 10s, got {os_jitter:g} s",
                       hint="the mean time one host loses to daemons and interrupts per step, e.g. 50us or 1ms")
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
    gpu, gpu_clock, spread = None, "fixed", None
    if m.get("gpu") is not None:
        d = r.mapping(m["gpu"], "machine.gpu", {"card"}, {"clock", "speed_spread"})
        gpu, gpu_clock = r.card(d, "machine.gpu"), r.choice(d, "machine.gpu", "clock", GPU_CLOCKS, "fixed")
        if d.get("speed_spread") is not None:
            spread = r.number(d, "machine.gpu", "speed_spread", 0.0, None, maximum=0.5)
    machine = Machine(card, gpus, nodes, nic, fabric, cores, aggregation, nvls, gpu, host_card, cpu_vendor, gpu_clock,
                      0 if domain == gpus else domain, spread, os_jitter)
    _check_tiers(r, machine)
    return machine


def _pcie(r: ScenarioReader, d: dict) -> str | None:
    """machine.nic.pcie: the PCIe link a GPU reaches its NIC through, as built ('gen5x16')."""
    if d.get("pcie") is None:
        return None
    try:
        return str(pcie.parse(d["pcie"]))
    except ValueError as exc:
        r.fail("machine.nic.pcie", str(exc), hint="the narrowest link between a GPU and its NIC (GPU, PCIe switch, NIC)")


def _check_tiers(r: ScenarioReader, m: Machine) -> None:
    """A fabric whose stated switch tiers cannot join its leaves is refused at machine.fabric.tiers."""
    f = m.fabric
    if f is None or f.tiers is None or m.domains < 2 or m.nic is None:
        return
    spec = FabricSpec(m.domains, m.nics_per_domain, 1.0, f.kind, f.down_ports, f.spines, f.oversubscription, f.planes,
                      spine_ports=f.spine_ports, tiers=f.tiers)
    need = tiers_needed(spec)
    if need > f.tiers:
        leaves = leaves_per_plane(spec)
        r.fail("machine.fabric.tiers", f"{f.tiers} switch tier{'s' if f.tiers > 1 else ''} of {spec.spine_radix}-port spines "
               f"cannot join the {leaves} leaves ({f.down_ports} NIC ports each) that {m.domains} nodes x "
               f"{m.nics_per_domain} NICs need: the fabric needs {need} tiers",
               hint=f"tiers: {need}, or spine_ports: {leaves} (a spine with a port for every leaf)" if f.tiers == 2 else f"tiers: {need}")


def _nvlink_domain(r: ScenarioReader, m: dict, gpus: int, nodes: int) -> int:
    """machine.nvlink_domain: GPUs sharing one NVLink fabric across nodes (multi-node NVLink, GB200 NVL72: 72); a
    multiple of gpus_per_node that divides the machine's GPUs; default one node's GPUs."""
    if m.get("nvlink_domain") is None:
        return gpus
    domain = r.integer(m, "machine", "nvlink_domain", minimum=gpus, maximum=MAX_GPUS_PER_NODE)
    if domain % gpus:
        r.fail("machine.nvlink_domain", f"{domain} GPUs is not a whole number of nodes of {gpus} GPUs",
               hint=f"a multiple of gpus_per_node, e.g. {gpus * max(1, domain // gpus)} or {gpus * (domain // gpus + 1)}")
    if domain > nodes * gpus or (nodes * gpus) % domain:
        r.fail("machine.nvlink_domain", f"the machine's {nodes * gpus} GPUs ({nodes} nodes x {gpus}) are not a whole number "
               f"of {domain}-GPU NVLink domains", hint=f"nodes: a multiple of {domain // gpus}")
    return domain


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
    seed = r.integer(doc, "", "seed", minimum=0, default=0)
    return Scenario(path, str(doc["name"]), str(doc.get("description", "")), seed, machine, tuple(jobs))
