"""The one composition root: a Scenario and its model cards become runnable jobs and typed results."""

from __future__ import annotations

import dataclasses

from simcluster.cards import load_aggregation, load_collective, load_nic, load_nvls
from simcluster.collectives import des
from simcluster.collectives.domain import NvlinkDomain
from simcluster.collectives.fabric import Cluster, predict_fabric
from simcluster.collectives.model import Prediction, predict
from simcluster.collectives.ring_flows import ring_flows
from simcluster.engine import Simulation
from simcluster.errors import ModelCardError
from simcluster.llm.job import LlmJob
from simcluster.network.builders import FabricSpec, aggregation_levels, fabric_tiers, machine_platform, nodes_within_levels
from simcluster.network.platform import Platform
from simcluster.results import (
    ConcurrentResult,
    ConcurrentRun,
    LlmTrainingResult,
    QperfResult,
    ScenarioResult,
    SweepResult,
    TrainingResult,
)
from simcluster.scenario import Machine, Scenario
from simcluster.scenario_jobs import CollectiveSweep, ConcurrentJob, QperfJob, TrainingJob


def sizes(min_bytes: int, max_bytes: int, factor: int) -> list[int]:
    out, size = [], max(1, min_bytes)
    while size <= max_bytes:
        out.append(size)
        size *= factor
    return out


def run_sweep(params, job: CollectiveSweep, seed: int, platform: Platform | None = None) -> list[Prediction]:
    """One node: the card's closed form per size, or the chunk DES on the first job.ranks GPUs of the platform's
    node 0, its NVLink ports at the card's own link rate."""
    predictions = []
    if job.engine == "des":
        platform = platform or machine_platform(1, job.ranks, 0.0)
        platform = platform.with_link_rate(platform.nvlink_links, params.link_bandwidth_Bps)
        ranks = platform.gpus[:job.ranks]
    for size in sizes(job.min_bytes, job.max_bytes, job.factor):
        closed = predict(params, job.op, size, job.ranks)
        if job.engine == "des":
            closed = des.simulate(params, platform, job.op, size, closed.protocol, ranks=ranks, sim=Simulation(seed, record=False))
        predictions.append(closed)
    return predictions


def machine_nic(machine: Machine):
    """The machine's NIC card; a TCP NIC takes its host cost per byte from the machine's host-cpu card, if any."""
    nic, card = load_nic(machine.nic.card)
    if machine.host_card is not None and nic.transport == "tcp":
        from simcluster.cards import load_host_cpu

        host, _ = load_host_cpu(machine.host_card)
        nic = dataclasses.replace(nic, cpu_s_per_byte=host.tcp_cpu_s_per_byte, cpu_s_per_message=0.0, csum_s_per_byte=0.0,
                                  cpu_s_per_packet=0.0)
    return nic, card


def build_platform(machine: Machine, nvlink_Bps: float) -> Platform:
    """The machine as one Platform: every NVLink domain (one node's, or several nodes' with machine.nvlink_domain;
    ports at nvlink_Bps, the collective card's link rate) and, across domains, the fabric of the machine's NICs (a
    domain's NICs are those of its nodes). Built once per scenario machine; every job reads it."""
    spec = None
    if machine.domains > 1:
        nic, _ = machine_nic(machine)
        f = machine.fabric
        spec = FabricSpec(machine.domains, machine.nics_per_domain, nic.line_rate_Bps, f.kind, f.down_ports, f.spines,
                          f.oversubscription, f.planes, f.link_latency_s, f.switch_latency_s, f.forwarding,
                          f.spine_ports, f.tiers)
    return machine_platform(machine.domains, machine.domain_gpus, nvlink_Bps, spec)


def build_cluster(machine: Machine, intra=None, platform: Platform | None = None) -> Cluster:
    """Cards + the machine's platform -> the multi-node Cluster the fabric collectives run on."""
    intra = intra or load_collective(machine.card)[0]
    nic, _ = machine_nic(machine)
    platform = platform or build_platform(machine, intra.link_bandwidth_Bps)
    aggregation = load_aggregation(machine.aggregation_card)[0] if machine.aggregation_card else None
    if aggregation is not None and aggregation.line_rate_Bps < nic.line_rate_Bps * (1 - 1e-9):
        raise ModelCardError(f"the aggregating switch's ports run at {aggregation.line_rate_Bps * 8 / 1e9:g} Gb/s, slower than "
                             f"the NICs' {nic.line_rate_Bps * 8 / 1e9:g} Gb/s (machine.aggregation.card)",
                             where=str(machine.aggregation_card), hint="use an aggregation card of the NICs' line rate")
    if aggregation is not None and aggregation.max_levels is not None and platform.fabric is not None:
        levels = aggregation_levels(platform.fabric, machine.domains)
        if levels > aggregation.max_levels:
            raise ModelCardError(f"the aggregation tree over {machine.domains} nodes needs {levels} switch levels; the "
                                 f"card's switches build at most {aggregation.max_levels} (machine.aggregation.card)",
                                 where=str(machine.aggregation_card),
                                 hint=f"at most {nodes_within_levels(platform.fabric, aggregation.max_levels)} nodes, or "
                                      "a card whose switches build deeper trees")
    nvls = None
    if machine.nvls_card:
        table, latency, _ = load_nvls(machine.nvls_card)
        if machine.domain_gpus not in table:
            raise ModelCardError(f"no NVLS bandwidth for {machine.domain_gpus} GPUs per NVLink domain (has {sorted(table)})",
                                 where=str(machine.nvls_card))
        nvls = (table[machine.domain_gpus], latency)
    arch = machine_arch(machine)
    gpu_pcie, nic_pcie = machine_pcie(machine, nic, arch)
    return Cluster(intra, nic, platform, machine.domain_gpus, machine.host_cores, machine.nic.streams, aggregation,
                   nvls, arch=arch, cpu_vendor=machine.cpu_vendor, gpu_pcie=gpu_pcie, nic_pcie=nic_pcie)


def machine_pcie(machine: Machine, nic, arch: str):
    """(GPU side, NIC side) of the PCIe path between a GPU and its NIC (hardware/pcie.py): machine.nic.pcie where the
    scenario states it (both sides), else the GPU architecture's port as its board wires it and the NIC card's own."""
    from simcluster.hardware import pcie

    if machine.nic.pcie:
        link = pcie.parse(machine.nic.pcie)
        return link, link
    gpu = pcie.parse(pcie.GPU_PCIE[arch]) if arch in pcie.GPU_PCIE else None
    return gpu, nic.pcie


def build_domain(machine: Machine, intra=None) -> NvlinkDomain:
    """One NVLink domain of the machine (no network): its NVLink card, its NVLS card where it has one, its GPUs."""
    intra = intra or load_collective(machine.card)[0]
    nvls = load_nvls(machine.nvls_card)[:2] if machine.nvls_card else None
    return NvlinkDomain(intra, machine.domain_gpus, machine_arch(machine), nvls)


def machine_arch(machine: Machine) -> str:
    """The architecture NCCL's decision model (collectives/nccl_tuner.py) indexes: the GPU card's, Hopper without one."""
    if not machine.gpu_card:
        return "hopper"
    from simcluster.cards import load_card
    from simcluster.collectives.nccl_constants import arch_of

    card = load_card(machine.gpu_card, kind="gpu")
    return arch_of(str(card.get("name", "")), card.get("machine", {}).get("arch"))


def choices(preds) -> str:
    """The algorithm / protocol each size ran, runs of sizes with one choice together: 'tree/LL 8B-64KiB, tree/Simple 1MiB'."""
    from simcluster.units import format_size

    runs: list[list] = []
    for p in preds:
        choice = f"{getattr(p, 'algorithm', '') or 'nvlink'}/{p.protocol}"
        if runs and runs[-1][0] == choice:
            runs[-1][2] = p.size_bytes
        else:
            runs.append([choice, p.size_bytes, p.size_bytes])
    return "algorithm/protocol " + ", ".join(f"{c} {format_size(lo)}" + (f"-{format_size(hi)}" if hi != lo else "")
                                             for c, lo, hi in runs)


def machine_predictions(scenario: Scenario, op: str, size_list, algorithm: str | None = None, host_launch: bool = False,
                        context=None, ranks: int | None = None) -> tuple[list[Prediction], object]:
    """One collective at each size on the scenario's whole machine, the one path `predict collective --scenario` and
    `validate LOG --scenario` share: across NVLink domains the fabric model (NCCL's algorithm and protocol, or
    `algorithm`); inside one domain NVLS where the machine has an NVLS card, else the machine's card (with its host
    launch floor when `host_launch`); `ranks` of one domain, default all its GPUs. Returns (predictions, the ring step's
    flow solution or None inside one domain)."""
    m = scenario.machine
    context = context or _Context(scenario)
    if m.domains > 1:
        cluster = context.cluster()
        flows = ring_flows(cluster)
        return [predict_fabric(cluster, op, size, algorithm, flows) for size in size_list], flows
    params, _ = context.machine_card()
    ranks = ranks or m.nodes * m.gpus_per_node
    if m.nvls_card:
        domain = build_domain(m, params)
        return [domain.predict(op, size, ranks=ranks) for size in size_list], None
    return [predict(params, op, size, ranks, host_launch=host_launch) for size in size_list], None


def run_concurrent(cluster: Cluster, job: ConcurrentJob) -> ConcurrentResult:
    """Each job's collective alone on the fabric and with all the jobs at once."""
    import numpy as np

    from simcluster.collectives.ring_flows import concurrent_ring_flows

    groups = [np.array(g) for g in job.groups]
    together = concurrent_ring_flows(cluster, groups)
    runs = []
    for g, shared in zip(groups, together, strict=True):
        alone = concurrent_ring_flows(cluster, [g])[0]
        view = dataclasses.replace(cluster, job_nodes=len(g))
        together_view = dataclasses.replace(view, tree_jobs=len(groups))   # every job's aggregation trees at once
        runs.append(ConcurrentRun([int(n) for n in g], predict_fabric(view, job.op, job.size_bytes, job.algorithm, alone),
                                  predict_fabric(together_view, job.op, job.size_bytes, job.algorithm, shared),
                                  alone.node_rate_Bps, shared.node_rate_Bps, shared.ecmp_collisions))
    return ConcurrentResult(job, runs, link=cluster.nic.transport)


def _qperf(scenario: Scenario, job: QperfJob, context) -> QperfResult:
    from simcluster.hardware import qperf_model

    nic, card = machine_nic(scenario.machine)
    return QperfResult(job, str(card.get("name")), qperf_model.predict(nic, job.tests, job.streams,
                                                                       scenario.machine.host_cores))


def _training(scenario: Scenario, job: TrainingJob, context) -> TrainingResult:
    from simcluster.training.predict import predict_training

    cluster = context.cluster() if scenario.machine.nodes > 1 else None
    return TrainingResult(job, predict_training(scenario.machine, job, cluster))


def _llm(scenario: Scenario, job: LlmJob, context) -> LlmTrainingResult:
    from simcluster.llm.predict import predict_llm_job

    cluster = context.cluster() if scenario.machine.domains > 1 else None
    p = predict_llm_job(scenario.machine, job, trace=context.trace, cluster=cluster, where=str(scenario.path))
    goodput = None
    if job.reliability is not None:
        from simcluster.llm.goodput import predict_goodput

        goodput = predict_goodput(job.model, job.reliability, p.gpus, scenario.machine.gpus_per_node, p.step_time_s,
                                  job.batch.global_batch * job.model.seq, job.train_tokens, scenario.seed)   # refusals name the key
    return LlmTrainingResult(job, p, goodput=goodput)


def _concurrent(scenario: Scenario, job: ConcurrentJob, context) -> ConcurrentResult:
    return run_concurrent(context.cluster(), job)


def sweep_result(scenario: Scenario, job: CollectiveSweep) -> SweepResult:
    """One collective sweep on the scenario's machine (a job of the scenario or one made up for it)."""
    return _sweep(scenario, job, _Context(scenario))


def _sweep(scenario: Scenario, job: CollectiveSweep, context) -> SweepResult:
    m = scenario.machine
    if m.domains > 1:
        params, card = context.machine_card()
        cluster = context.cluster()
        preds, flows = machine_predictions(scenario, job.op, sizes(job.min_bytes, job.max_bytes, job.factor), job.algorithm,
                                           context=context)
        how = (f"{m.domains} NVLink domains of {m.domain_gpus} GPUs ({m.nodes} nodes x {m.gpus_per_node}), " if m.nvlink_domain else "")
        how += (f"{m.nodes} nodes x {m.gpus_per_node} GPUs, {m.nic.per_node} NICs/node ({m.nic.card.name}), "
               f"{m.fabric.kind} ({fabric_tiers(cluster.platform.fabric)} switch tiers), {choices(preds)}; network "
               f"{flows.node_rate_Bps / 1e9:.1f} GB/s per node ({flows.limit} binds it), ECMP collisions {flows.ecmp_collisions}"
               + (f"; {cluster.nic.transport.upper()} takes {flows.cpu_cores_per_node:.1f} host cores per node at that rate"
                  if cluster.nic.onloaded else ""))
        return SweepResult(job, str(m.card), str(card.get("name")), preds, description=how, link=cluster.nic.transport)
    params, card = load_collective(job.card) if job.card else context.machine_card()
    platform = context.platform() if job.engine == "des" else None
    if m.nvls_card and job.engine == "analytic" and not job.card:   # NCCL may run NVLS inside the NVLink domain
        preds, _ = machine_predictions(scenario, job.op, sizes(job.min_bytes, job.max_bytes, job.factor), context=context,
                                       ranks=job.ranks)
    else:
        preds = run_sweep(params, job, scenario.seed, platform)
    where = f"1 node x {m.gpus_per_node} GPUs" if not m.nvlink_domain else \
        f"1 NVLink domain of {m.domain_gpus} GPUs ({m.nodes} nodes x {m.gpus_per_node}, multi-node NVLink)"
    result = SweepResult(job, str(job.card or m.card), str(card.get("name")), preds, description=where)
    if not job.measured:
        return result
    from simcluster.fit.validate import measured_sweep

    measured, skipped = measured_sweep(params, card, job.measured, job.op, job.ranks)
    return dataclasses.replace(result, measured=measured, measured_skipped=skipped)


class _Context:
    """What the jobs of one scenario share, built once and only when a job needs it."""

    def __init__(self, scenario: Scenario, trace: bool = False):
        self.scenario, self.trace = scenario, trace
        self._card = self._cluster = self._platform = None

    def machine_card(self):
        if self._card is None:
            self._card = load_collective(self.scenario.machine.card)
        return self._card

    def platform(self) -> Platform:
        if self._platform is None:
            m = self.scenario.machine   # no machine card (a sweep with its own): NVLink rate unknown here, 0
            self._platform = build_platform(m, self.machine_card()[0].link_bandwidth_Bps if m.card else 0.0)
        return self._platform

    def cluster(self) -> Cluster:
        if self._cluster is None:
            self._cluster = build_cluster(self.scenario.machine, self.machine_card()[0], self.platform())
        return self._cluster


JOB_RUNNERS = {CollectiveSweep: _sweep, ConcurrentJob: _concurrent, QperfJob: _qperf, TrainingJob: _training,
               LlmJob: _llm}


def run_scenario(scenario: Scenario, variant: str = "", trace: bool = False) -> ScenarioResult:
    """Every job of the scenario, in order, as typed results; `trace`: keep the timelines jobs can record."""
    context = _Context(scenario, trace)
    return ScenarioResult(scenario.name, scenario.seed, variant,
                          [JOB_RUNNERS[type(job)](scenario, job, context) for job in scenario.jobs])


def run_file(path, nodes: int | None = None, trace: bool = False) -> list[ScenarioResult]:
    """A scenario file and each of its what-if variants."""
    from simcluster.scenario import load_variants

    return [run_scenario(sc, label, trace) for label, sc in load_variants(path, nodes)]
