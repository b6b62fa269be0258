"""The one composition root: a Scenario and its model cards become runnable jobs and typed results."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from simcluster.cards import load_collective
from simcluster.collectives import des
from simcluster.collectives.cluster import Cluster
from simcluster.collectives.fabric import predict_fabric
from simcluster.collectives.model import Prediction, predict
from simcluster.collectives.ring_flows import ring_flows
from simcluster.engine import Simulation
from simcluster.llm.job import LlmJob
from simcluster.machine_models import (
    build_cluster,
    build_domain,
    build_platform,
    domain_gpus_across,
    machine_gpu,
    machine_nccl,
    machine_nic,
    network_link,
)
from simcluster.network.builders import fabric_tiers, machine_platform
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
from simcluster.scenario import Scenario
from simcluster.scenario_jobs import CollectiveSweep, ConcurrentJob, QperfJob, TrainingJob
from simcluster.trust.band import MachineTrust, machine_shape_why
from simcluster.trust.regime import card_nvlink_link


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


def machine_trust(machine) -> MachineTrust:
    """What every answer's trust reads of the machine (trust/band.MachineTrust), built here once per scenario machine
    (_Context.machine_trust): the machine layer's facts (machine_models: network_link, machine_gpu) and its mark
    (machine_unvalidated)."""
    return MachineTrust(network_link(machine), machine_gpu(machine), machine_unvalidated(machine))


def machine_unvalidated(machine) -> str:
    """Why every answer priced on the machine's collectives is unvalidated whatever its regime, '' where nothing: the
    trust layer's rule (trust/band.machine_shape_why) on the machine layer's facts it reads
    (machine_models.domain_gpus_across, machine_nccl's NcclRelease.opted_in). MachineTrust.unvalidated; an LLM step's
    regime takes it and the machine's GPU from MachineTrust (_marked), no link (its regime names none)."""
    return machine_shape_why(domain_gpus_across(machine), machine_nccl(machine).opted_in)


def run_concurrent(cluster: Cluster, job: ConcurrentJob, trust: MachineTrust) -> ConcurrentResult:
    """Each job's collective alone on the fabric and with all the jobs at once; `trust` the machine's (machine_trust)."""
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
    return ConcurrentResult(job, runs, machine_trust=trust)


def _qperf(scenario: Scenario, job: QperfJob, context) -> QperfResult:
    from simcluster.hardware import qperf_model

    nic, card = machine_nic(scenario.machine)
    return QperfResult(job, str(card.get("name")), qperf_model.predict(nic, job.tests, job.streams,
                                                                       scenario.machine.host_cores))


def _training(scenario: Scenario, job: TrainingJob, context) -> TrainingResult:
    from simcluster.predict_training import predict_training

    cluster = context.cluster() if scenario.machine.nodes > 1 else None
    return TrainingResult(job, predict_training(scenario.machine, job, cluster), machine_trust=context.machine_trust())


def _llm(scenario: Scenario, job: LlmJob, context) -> LlmTrainingResult:
    from simcluster.llm.predict import predict_llm_job

    p = _marked(context, predict_llm_job(scenario.machine, job, context.gpu(), context.llm_network(),
                                         trace=context.trace, simulate=context.simulate, where=str(scenario.path)))
    goodput = None
    if job.reliability is not None:
        from simcluster.llm.goodput import predict_goodput

        goodput = predict_goodput(job.model, job.reliability, p.gpus, scenario.machine.gpus_per_node, p.step_time_s,
                                  job.batch.global_batch * job.model.seq, job.train_tokens, scenario.seed)   # refusals name the key
    return LlmTrainingResult(job, p, goodput=goodput)


def llm_network(machine):
    """A machine's network for LLM steps (llm/comm.py's Network), its cards read here, at the edge."""
    return _Context(Scenario(Path("<machine>"), "", "", 0, machine, ())).llm_network()


def llm_prediction(machine, job: LlmJob, trace: bool = False, simulate: bool = True, where: str = "<machine>"):
    """One llm_training job on a machine (llm/predict.py's LlmResult), its cards read here, at the edge."""
    from simcluster.llm.predict import predict_llm_job

    context = _Context(Scenario(Path(where), "", "", 0, machine, (job,)), trace, simulate)
    return _marked(context, predict_llm_job(machine, job, context.gpu(), context.llm_network(), trace=trace,
                                            simulate=simulate, where=where))


def _marked(context, p):
    """An LLM step's answer judged as its machine's, by MachineTrust's two rules (machine_trust): its regime's GPU the
    machine's GPU (machine_gpu; a GB200 machine's step is GB200's, not its b200 GPU card's: no GB200 LLM row is held, so
    it reads extrapolated, not validated on B200 rows; cold review B53 item 6) and why its machine is unvalidated
    (machine_unvalidated); not the whole MachineTrust, whose link an LLM regime does not name and a plan point would pay
    for."""
    if not p.regime:
        return p
    gpu = context.machine_gpu() or p.regime.gpu
    why = machine_unvalidated(context.scenario.machine) or p.regime.unvalidated
    return p if (gpu, why) == (p.regime.gpu, p.regime.unvalidated) else \
        dataclasses.replace(p, regime=dataclasses.replace(p.regime, gpu=gpu, unvalidated=why))


def _concurrent(scenario: Scenario, job: ConcurrentJob, context) -> ConcurrentResult:
    return run_concurrent(context.cluster(), job, context.machine_trust())


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
        how += (f"{m.nodes} nodes x {m.gpus_per_node} GPUs, NVLink card {Path(str(m.card)).name}, "
                f"{m.nic.per_node} NICs/node ({m.nic.card.name}), "
               f"{m.fabric.kind} ({fabric_tiers(cluster.platform.fabric)} switch tiers), {choices(preds)}; network "
               f"{flows.node_rate_Bps / 1e9:.1f} GB/s per node ({flows.limit} binds it), ECMP collisions {flows.ecmp_collisions}"
               + (f"; {cluster.nic.transport.upper()} takes {flows.cpu_cores_per_node:.1f} host cores per node at that rate"
                  if cluster.nic.onloaded else ""))
        return SweepResult(job, str(m.card), str(card.get("name")), preds, description=how, machine_trust=context.machine_trust())
    params, card = load_collective(job.card) if job.card else context.machine_card()
    platform = context.platform() if job.engine == "des" else None
    if m.nvls_card and job.engine == "analytic" and not job.card:   # NCCL may run NVLS inside the NVLink domain
        preds, _ = machine_predictions(scenario, job.op, sizes(job.min_bytes, job.max_bytes, job.factor), context=context,
                                       ranks=job.ranks)
    else:
        preds = run_sweep(params, job, scenario.seed, platform)
    where = f"1 node x {m.gpus_per_node} GPUs" if not m.nvlink_domain else \
        f"1 NVLink domain of {m.domain_gpus} GPUs ({m.nodes} nodes x {m.gpus_per_node}, multi-node NVLink)"
    # one node: the card's NVLink (a job's own card, else the machine's) and the GPU that names, the machine's mark
    trust = dataclasses.replace(context.machine_trust(), link=card_nvlink_link(card, job.card or m.card), gpu="")
    result = SweepResult(job, str(job.card or m.card), str(card.get("name")), preds, description=where, machine_trust=trust)
    if not job.measured:
        return result
    from simcluster.fit.validate import measured_sweep

    measured, skipped = measured_sweep(params, card, job.measured, job.op, job.ranks)
    return dataclasses.replace(result, measured=measured, measured_skipped=skipped)


_SHARED: dict = {}       # (what, machine, its cards' stamps) -> a model built from cards, kept for the process's next points
SHARED_ENTRIES = 64


def _stamp(path) -> tuple | None:
    """A card file's identity: its path, modification time and size (a rewritten card is read again)."""
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return (str(path), None)
    return (str(path), st.st_mtime_ns, st.st_size)


def _shared(what: str, machine, make, extra=(), stamp=_stamp):
    """The model `what` of this machine, built by `make` once per process while its cards are unchanged: a sweep's points
    that share a machine (a plan's parallel splits) share its GPU card, Cluster and LLM network, with the collective
    times each network's groups priced (llm/comm.py). Only the cards the machine names are stamped (a machine card's
    kind card, read from its folder, is not)."""
    cards = (machine.card, machine.gpu_card, machine.nic.card if machine.nic else None, machine.aggregation_card,
             machine.nvls_card, machine.host_card)
    return _kept((what, machine, tuple(stamp(c) for c in cards), extra), make)


def _kept(key, make):
    """_SHARED's entry for `key`, made by `make` the first time (the oldest entry dropped beyond SHARED_ENTRIES)."""
    if key not in _SHARED:
        if len(_SHARED) >= SHARED_ENTRIES:
            _SHARED.pop(next(iter(_SHARED)))
        _SHARED[key] = make()
    return _SHARED[key]


class _Context:
    """What the jobs of one scenario share, built once and only when a job needs it. `simulate` False: an LLM step's
    pipeline is evaluated by its max-plus recurrence instead of the DES (equal numbers, no event count; llm/maxplus.py)."""

    def __init__(self, scenario: Scenario, trace: bool = False, simulate: bool = True):
        self.scenario, self.trace, self.simulate = scenario, trace, simulate
        self._card = self._cluster = self._platform = self._trust = None
        self._stamps: dict = {}

    def _stamp(self, path):
        """_stamp, once per card for this scenario's jobs."""
        if path not in self._stamps:
            self._stamps[path] = _stamp(path)
        return self._stamps[path]

    def gpu(self):
        """The machine's GPU card (hardware/gpu.py's GpuParams), read once per process."""
        from simcluster.errors import ScenarioError
        from simcluster.hardware.gpu import load_gpu

        m = self.scenario.machine
        if m.gpu_card is None:
            raise ScenarioError("machine.gpu: an llm_training job needs a GPU card (machine.gpu.card)", where=str(self.scenario.path))
        return _shared("gpu", m, lambda: load_gpu(m.gpu_card)[0], stamp=self._stamp)

    def llm_network(self):
        """The machine's collective card inside an NVLink domain and its Cluster across domains, as llm/comm.py's Network."""
        from simcluster.llm.predict import network_for
        from simcluster.machine_models import machine_arch

        m = self.scenario.machine
        arch = _shared("arch", m, lambda: machine_arch(m), stamp=self._stamp)   # all the network takes from the GPU card (NCCL's tuner)
        bare = dataclasses.replace(m, gpu_card=None, gpu_clock="fixed", gpu_speed_spread=None,
                                   os_jitter_s=None)   # points of other GPUs share it
        return _shared("llm network", bare, lambda: network_for(m, self.machine_card()[0],
                                                                self.cluster() if m.domains > 1 else None), arch, self._stamp)

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

    def machine_trust(self) -> MachineTrust:
        """machine_trust of the scenario's machine, once for its jobs."""
        if self._trust is None:
            self._trust = machine_trust(self.scenario.machine)
        return self._trust

    def machine_gpu(self) -> str:
        """machine_models.machine_gpu (MachineTrust.gpu's), once per process per GPU card and collective card while both
        are unchanged (it reads no other part of the machine): an LLM step's regime GPU (_marked) at a plan point's cost."""
        m = self.scenario.machine   # keyed by the two cards alone (_shared keys the whole machine): one entry for a plan
        return _kept(("machine gpu", m.card, m.gpu_card, self._stamp(m.card), self._stamp(m.gpu_card)), lambda: machine_gpu(m))


JOB_RUNNERS = {CollectiveSweep: _sweep, ConcurrentJob: _concurrent, QperfJob: _qperf, TrainingJob: _training,
               LlmJob: _llm}


def run_scenario(scenario: Scenario, variant: str = "", trace: bool = False, simulate: bool = True) -> ScenarioResult:
    """Every job of the scenario, in order, as typed results; `trace`: keep the timelines jobs can record; `simulate`
    False (a sweep's points): LLM pipelines by their recurrence, not the DES (_Context)."""
    context = _Context(scenario, trace, simulate)
    return ScenarioResult(scenario.name, scenario.seed, variant,
                          [JOB_RUNNERS[type(job)](scenario, job, context) for job in scenario.jobs])


def run_file(path, nodes: int | None = None, trace: bool = False) -> list[ScenarioResult]:
    """A scenario file and each of its what-if variants."""
    from simcluster.scenario import load_variants

    return [run_scenario(sc, label, trace) for label, sc in load_variants(path, nodes)]
