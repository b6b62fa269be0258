"""The one composition root: a Scenario and its model cards become runnable jobs and results."""

from __future__ import annotations

from simcluster.cards import load_collective
from simcluster.collectives import des
from simcluster.collectives.model import Prediction, predict
from simcluster.engine import Simulation
from simcluster.network.topology import single_node
from simcluster.scenario import CollectiveSweep, Scenario


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


def run_scenario(scenario: Scenario) -> list[dict]:
    params, card = load_collective(scenario.machine.card)
    results = []
    for job in scenario.jobs:
        predictions = run_sweep(params, job, scenario.machine.gpus_per_node, scenario.seed)
        results.append({"job": job, "card": str(scenario.machine.card), "card_name": card.get("name"),
                        "predictions": predictions})
    return results
