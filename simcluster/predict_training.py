"""A training job on a machine: step time, throughput, speedup, breakdown and a Perfetto timeline.

Communication per bucket comes from the machine: one node -> its collective card at N ranks;
several nodes -> the fabric model (NICs, topology, algorithm choice) for an all_reduce of that
bucket. The host: the node's input pipeline (batches read from its drives when the job has `storage:`,
loader_cpu_per_sample core-seconds per sample) and an onloaded TCP transport (the cores the NIC model
says the ring's traffic takes, while a bucket is on the wire) run on the host's cores in the same
simulation as the step (training/step.py, training/pipeline.py); the step's wait for its batch is the
storage stall and the CPU-bound time. Speedup is against the same workload on 1 GPU and on 1 node.
"""

from __future__ import annotations

from dataclasses import dataclass

from simcluster.cards import load_collective, load_ddp, load_training
from simcluster.collectives.model import predict
from simcluster.scenario_jobs import TrainingJob
from simcluster.scenario_machine import Machine
from simcluster.training.pipeline import HostSetup, PipelineSpec
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
    transport_cores_per_node: float = 0.0   # host cores the TCP transport takes at the all_reduce's full rate (0: RDMA)

    @property
    def timeline(self) -> dict:
        """A Perfetto trace of a few steps of one rank (perfetto_trace), as an LLM prediction's `timeline`."""
        return perfetto_trace(self)

    @property
    def scaling_efficiency(self) -> float:
        return self.speedup_vs_1gpu / self.ranks

    def as_json(self) -> dict:
        return {"workload": self.workload, "ranks": self.ranks, "nodes": self.nodes, "transport": self.transport,
                "step_time_s": self.step.step_s, "samples_per_s": self.samples_per_s,
                "speedup": self.speedup_vs_1gpu, "speedup_vs_1node": self.speedup_vs_1node,
                "scaling_efficiency": self.scaling_efficiency, "time_to_train_s": self.time_to_train_s,
                "transport_cores_per_node": self.transport_cores_per_node, "breakdown": self.step.breakdown}


def _comm(machine: Machine, intra, nodes: int, ranks: int, cluster=None):
    """(bucket bytes -> all_reduce seconds, transport label, TCP cores per node at full rate). `cluster`: the
    scenario's own (build.py), used when `nodes` is the machine's; else one is built for that node count."""
    if nodes <= 1:
        return _once_per_size(lambda size: predict(intra, "all_reduce", size, ranks).time_s if ranks > 1 else 0.0), "nvlink", 0.0
    from dataclasses import replace

    from simcluster.collectives.fabric import predict_fabric
    from simcluster.collectives.ring_flows import ring_flows
    from simcluster.machine_models import build_cluster

    if cluster is None or nodes != machine.nodes:
        cluster = build_cluster(replace(machine, nodes=nodes), intra)
    flows = ring_flows(cluster)
    cores = flows.cpu_cores_per_node if cluster.nic.onloaded else 0.0
    return _once_per_size(lambda size: predict_fabric(cluster, "all_reduce", size, None, flows).time_s), cluster.nic.transport, cores


def _once_per_size(time_s):
    """The bucket time function, each size computed once (every simulated step reduces the same buckets)."""
    known: dict[int, float] = {}

    def bucket_s(size) -> float:
        size = int(size)
        if size not in known:
            known[size] = time_s(size)
        return known[size]
    return bucket_s


def _step(w, ddp: DdpParams, machine: Machine, intra, nodes: int, ranks: int, job: TrainingJob,
          cluster=None) -> tuple[StepResult, str, float]:
    comm, transport, tcp_cores = _comm(machine, intra, nodes, ranks, cluster)
    pipeline = None
    if job.storage is not None or job.loader_cpu_per_sample_s > 0:
        pipeline = PipelineSpec(min(ranks, machine.gpus_per_node), w.batch_per_gpu, job.loader_cpu_per_sample_s, job.storage)
    host = HostSetup(machine.host_cores, tcp_cores, pipeline)
    return simulate_step(w, ranks, comm, ddp, job.storage_stall_s, host=host), transport, tcp_cores


def predict_training(machine: Machine, job: TrainingJob, cluster=None) -> TrainingPrediction:
    """The job on the machine, and on 1 GPU and 1 node for the speedups. `cluster`: the scenario's multi-node
    Cluster (build.py builds it once per scenario), else built here."""
    w, _ = load_training(job.workload)
    ddp = load_ddp(job.ddp)[0] if job.ddp else DdpParams()
    intra = cluster.intra if cluster is not None else load_collective(machine.card)[0]
    ranks = machine.nodes * machine.gpus_per_node
    step, transport, tcp_cores = _step(w, ddp, machine, intra, machine.nodes, ranks, job, cluster)
    one = _step(w, ddp, machine, intra, 1, 1, job)[0]
    node = step if machine.nodes == 1 else _step(w, ddp, machine, intra, 1, machine.gpus_per_node, job)[0]
    rate = ranks * w.batch_per_gpu / step.step_s
    rate_1 = w.batch_per_gpu / one.step_s
    rate_node = machine.gpus_per_node * w.batch_per_gpu / node.step_s
    ttt = job.dataset_samples * job.epochs / rate if job.dataset_samples else None
    return TrainingPrediction(f"{w.model}-{w.image}-b{w.batch_per_gpu}", ranks, machine.nodes, step, rate,
                              rate / rate_1, rate / rate_node, ttt, transport, tcp_cores)


def perfetto_trace(pred: TrainingPrediction, steps: int = 3) -> dict:
    """Chrome/Perfetto trace document of a few consecutive steps of one rank (json.dumps it; open in
    ui.perfetto.dev). The library returns it; the CLI writes it."""
    from simcluster.perfetto import chrome_trace

    lanes = ("host", "gpu", "comm")  # always first and in this order, also when a lane is empty; then the host's
    ordered = sorted(pred.step.timeline, key=lambda i: (lanes.index(i.lane), "") if i.lane in lanes else (3, i.lane))
    return chrome_trace(f"{pred.workload} on {pred.ranks} GPUs (rank 0)", ordered, steps, pred.step.step_s)
