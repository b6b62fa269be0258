"""A training job on a machine: step time, throughput, speedup, breakdown and a Perfetto timeline.

Communication per bucket comes from the machine: one node -> its collective card at N ranks;
several nodes -> the fabric model (NICs, topology, algorithm choice) for an all_reduce of that
bucket. Host CPU: the data loader (loader_cpu_per_sample x samples per second per node) and an
onloaded TCP transport (cores the NIC model says the ring's traffic takes) share the host's cores
max-min (HostCpu); a loader that gets fewer cores than it needs stalls the step (cpu-bound time).
Speedup is against the same workload on 1 GPU and on 1 node.
"""

from __future__ import annotations

from dataclasses import dataclass

from simcluster.cards import load_collective, load_ddp, load_training
from simcluster.collectives.model import predict
from simcluster.hardware.cpu import HostCpu
from simcluster.scenario import Machine, TrainingJob
from simcluster.training.step import DdpParams, StepResult, simulate_step


@dataclass
class TrainingPrediction:
    workload: str
    ranks: int
    nodes: int
    step: StepResult
    samples_per_s: float
    speedup_vs_1gpu: float
    speedup_vs_1node: float
    time_to_train_s: float | None
    transport: str

    @property
    def scaling_efficiency(self) -> float:
        return self.speedup_vs_1gpu / self.ranks

    def as_json(self) -> dict:
        return {"workload": self.workload, "ranks": self.ranks, "nodes": self.nodes, "transport": self.transport,
                "step_time_s": self.step.step_s, "samples_per_s": self.samples_per_s,
                "speedup": self.speedup_vs_1gpu, "speedup_vs_1node": self.speedup_vs_1node,
                "scaling_efficiency": self.scaling_efficiency, "time_to_train_s": self.time_to_train_s,
                "breakdown": self.step.breakdown}


def _comm(machine: Machine, nodes: int, ranks: int):
    """(bucket bytes -> all_reduce seconds, transport label, TCP cores per node at full rate)."""
    intra = load_collective(machine.card)[0]
    if nodes <= 1:
        return (lambda size: predict(intra, "all_reduce", int(size), ranks).time_s if ranks > 1 else 0.0), "nvlink", 0.0
    from dataclasses import replace

    from simcluster.build import build_cluster
    from simcluster.collectives.fabric import predict_fabric, ring_flows

    cluster = build_cluster(replace(machine, nodes=nodes), intra)
    flows = ring_flows(cluster)
    cores = flows.cpu_cores_per_node if cluster.nic.transport == "tcp" else 0.0
    return (lambda size: predict_fabric(cluster, "all_reduce", int(size), None, flows).time_s), cluster.nic.transport, cores


def storage_stall_s(w, job: TrainingJob, step_s: float, gpus: int) -> float:
    """Mean wait per step for the input pipeline: one DLIO-style loader per GPU of a node reading its
    samples from the node's local drives, each GPU consuming a batch every step_s."""
    if job.storage is None:
        return job.storage_stall_s
    import dataclasses

    from simcluster.cards import load_nvme
    from simcluster.storage import dlio_workload, loader

    spec = job.storage
    dl = dataclasses.replace(dlio_workload.load(spec.workload), batch_size=w.batch_per_gpu, computation_time_s=step_s,
                             computation_stdev_s=0.0)
    nvme, _ = load_nvme(spec.nvme)
    run = loader.simulate(dl, nvme, gpus, spec.drives, loader.LoaderConfig(io_size=spec.io_size, steps=24))
    return job.storage_stall_s + run.stall_per_step_s


def _step(w, ddp: DdpParams, machine: Machine, nodes: int, ranks: int, job: TrainingJob) -> tuple[StepResult, str]:
    comm, transport, tcp_cores = _comm(machine, nodes, ranks)
    step = simulate_step(w, ranks, comm, ddp)
    stall = storage_stall_s(w, job, step.step_s, min(ranks, machine.gpus_per_node))
    if stall > 0:
        step = simulate_step(w, ranks, comm, ddp, stall)
    if job.loader_cpu_per_sample_s > 0:
        gpus = min(ranks, machine.gpus_per_node)
        need = gpus * w.batch_per_gpu * job.loader_cpu_per_sample_s / step.step_s     # cores to keep up
        busy = step.comm_total_s / step.step_s if step.step_s else 0.0
        granted = HostCpu(machine.host_cores).share({"loader": need, "tcp": tcp_cores * min(1.0, busy)})["loader"]
        if granted < need * (1 - 1e-9):
            loader_time = gpus * w.batch_per_gpu * job.loader_cpu_per_sample_s / granted
            step = simulate_step(w, ranks, comm, ddp, stall, loader_time - step.step_s)
    return step, transport


def predict_training(machine: Machine, job: TrainingJob) -> TrainingPrediction:
    w, _ = load_training(job.workload)
    ddp = load_ddp(job.ddp)[0] if job.ddp else DdpParams()
    ranks = machine.nodes * machine.gpus_per_node
    step, transport = _step(w, ddp, machine, machine.nodes, ranks, job)
    one, _ = _step(w, ddp, machine, 1, 1, job)
    node, _ = _step(w, ddp, machine, 1, machine.gpus_per_node, job)
    rate = ranks * w.batch_per_gpu / step.step_s
    rate_1 = w.batch_per_gpu / one.step_s
    rate_node = machine.gpus_per_node * w.batch_per_gpu / node.step_s
    ttt = job.dataset_samples * job.epochs / rate if job.dataset_samples else None
    return TrainingPrediction(f"{w.model}-{w.image}-b{w.batch_per_gpu}", ranks, machine.nodes, step, rate,
                              rate / rate_1, rate / rate_node, ttt, transport)


def perfetto_trace(pred: TrainingPrediction, steps: int = 3) -> dict:
    """Chrome/Perfetto trace document of a few consecutive steps of one rank (json.dumps it; open in
    ui.perfetto.dev). The library returns it; the CLI writes it."""
    from simcluster.report.perfetto import chrome_trace

    lanes = ("host", "gpu", "comm")  # always in this order, also when a lane is empty
    ordered = sorted(pred.step.timeline, key=lambda i: lanes.index(i.lane))
    return chrome_trace(f"{pred.workload} on {pred.ranks} GPUs (rank 0)", ordered, steps, pred.step.step_s)
