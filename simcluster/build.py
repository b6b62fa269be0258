"""The one composition root: a Scenario and its model cards become runnable jobs and results."""

from __future__ import annotations

from simcluster.cards import load_aggregation, load_collective, load_nic, load_nvls
from simcluster.collectives import des
from simcluster.collectives.fabric import Cluster, predict_fabric, ring_flows
from simcluster.collectives.model import Prediction, predict
from simcluster.engine import Simulation
from simcluster.network.fabric import Fabric, FabricSpec
from simcluster.network.topology import single_node
from simcluster.scenario import CollectiveSweep, ConcurrentJob, Machine, QperfJob, Scenario, TrainingJob


def sizes(min_bytes: int, max_bytes: int, factor: int) -> list[int]:
    out, size = [], max(1, min_bytes)
    while size <= max_bytes:
        out.append(size)
        size *= factor
    return out


def run_sweep(params, job: CollectiveSweep, gpus_per_node: int, seed: int) -> list[Prediction]:
    predictions = []
    topology = single_node(job.ranks, params.link_bandwidth_Bps) if job.engine == "des" else None
    for size in sizes(job.min_bytes, job.max_bytes, job.factor):
        closed = predict(params, job.op, size, job.ranks)
        if job.engine == "des":
            closed = des.simulate(params, topology, job.op, size, closed.protocol, sim=Simulation(seed, record=False))
        predictions.append(closed)
    return predictions


def build_cluster(machine: Machine, intra=None) -> Cluster:
    """Cards + machine shape -> the multi-node Cluster the fabric collectives run on."""
    intra = intra or load_collective(machine.card)[0]
    nic, _ = load_nic(machine.nic.card)
    f = machine.fabric
    spec = FabricSpec(machine.nodes, machine.nic.per_node, nic.line_rate_Bps, f.kind, f.down_ports, f.spines,
                      f.oversubscription, f.planes, f.link_latency_s, f.switch_latency_s, f.forwarding)
    aggregation = load_aggregation(machine.aggregation_card)[0] if machine.aggregation_card else None
    nvls = None
    if machine.nvls_card:
        table, latency, _ = load_nvls(machine.nvls_card)
        if machine.gpus_per_node not in table:
            from simcluster.errors import ModelCardError

            raise ModelCardError(f"no NVLS bandwidth for {machine.gpus_per_node} GPUs per node (has {sorted(table)})",
                                 where=str(machine.nvls_card))
        nvls = (table[machine.gpus_per_node], latency)
    return Cluster(intra, nic, Fabric(spec), machine.gpus_per_node, machine.host_cores, machine.nic.streams, aggregation,
                   nvls)


def run_fabric_sweep(cluster: Cluster, job: CollectiveSweep):
    flows = ring_flows(cluster)
    return [predict_fabric(cluster, job.op, size, job.algorithm, flows)
            for size in sizes(job.min_bytes, job.max_bytes, job.factor)]


def run_concurrent(machine: Machine, job: ConcurrentJob, intra=None) -> list[dict]:
    """Each job's collective alone on the fabric and with all the jobs at once."""
    import dataclasses

    import numpy as np

    from simcluster.collectives.fabric import concurrent_ring_flows

    cluster = build_cluster(machine, intra)
    groups = [np.array(g) for g in job.groups]
    together = concurrent_ring_flows(cluster, groups)
    out = []
    for g, shared in zip(groups, together, strict=True):
        alone = concurrent_ring_flows(cluster, [g])[0]
        view = dataclasses.replace(cluster, job_nodes=len(g))
        t_alone = predict_fabric(view, job.op, job.size_bytes, job.algorithm, alone)
        t_shared = predict_fabric(view, job.op, job.size_bytes, job.algorithm, shared)
        out.append({"nodes": [int(n) for n in g], "alone": t_alone, "shared": t_shared,
                    "network_alone_Bps": alone.node_rate_Bps, "network_shared_Bps": shared.node_rate_Bps,
                    "ecmp_collisions": shared.ecmp_collisions})
    return out


def run_scenario(scenario: Scenario) -> list[dict]:
    params, card = load_collective(scenario.machine.card)
    sweeps = [j for j in scenario.jobs if isinstance(j, CollectiveSweep)]  # only sweeps need the cluster built here
    cluster = build_cluster(scenario.machine, params) if scenario.machine.nodes > 1 and sweeps else None
    results = []
    for job in scenario.jobs:
        if isinstance(job, ConcurrentJob):
            results.append({"job": job, "concurrent": run_concurrent(scenario.machine, job, params)})
            continue
        if isinstance(job, QperfJob):
            from simcluster.hardware import qperf_model

            nic, card = load_nic(scenario.machine.nic.card)
            results.append({"job": job, "qperf": qperf_model.predict(nic, job.tests, job.streams, scenario.machine.host_cores),
                            "nic_card": card.get("name")})
            continue
        if isinstance(job, TrainingJob):
            from simcluster.training.predict import predict_training

            results.append({"job": job, "training": predict_training(scenario.machine, job)})
            continue
        if cluster is not None:
            results.append({"job": job, "card": str(scenario.machine.card), "card_name": card.get("name"),
                            "predictions": run_fabric_sweep(cluster, job)})
            continue
        path = job.card or scenario.machine.card
        job_params, job_card = load_collective(job.card) if job.card else (params, card)
        result = {"job": job, "card": str(path), "card_name": job_card.get("name"),
                  "predictions": run_sweep(job_params, job, scenario.machine.gpus_per_node, scenario.seed)}
        if job.measured:
            from simcluster.fit.validate import measured_sweep

            result["measured"], result["measured_skipped"] = measured_sweep(job_params, job_card, job.measured,
                                                                            job.op, job.ranks)
        results.append(result)
    return results
