"""The input pipeline of one node on the simulation kernel: batches read from the node's drives and prepared on
its cores while the training step runs.

Every GPU of a node is fed alike, so one pipeline builds batch k for all G GPUs of the node at once. `workers`
batch builders work in parallel (DLIO's read_threads per GPU with storage, else one); builder w builds batches
w, w + workers, ... and may start batch k only once the step k - ahead has taken its batch (PyTorch's
prefetch: `ahead` batches ready or in progress). Building a batch is
  read   (with storage) every sample's file of each GPU's batch from the node's drives, the G GPUs in parallel,
         through storage/loader.py's SampleReader (the NVMe queue model, files striped over the drives);
  cpu    G x batch x cpu_per_sample core-seconds on the host's SharedCores, at most `cores_per_build` cores
         at once (all the host's cores without storage, one per GPU with it), shared max-min with the
         transport's work as it happens.
With storage the run starts cold (nothing prefetched, every builder starting), as a DLIO epoch does (the storage
model is validated against DLIO runs); without, it starts warm (the first `ahead` batches built, as mid-epoch),
so a loader that keeps up shows its steady state in the first step. The step model waits for its batch and
books the wait as storage stall up to the end of the batch's reads, CPU-bound after.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from simcluster.engine import Simulation
from simcluster.hardware.cpu import SharedCores


@dataclass(frozen=True)
class StorageSpec:
    """A training job's storage (the scenario's `storage:`): the loader simulated on local NVMe drives."""

    workload: Path            # a DLIO workload YAML: sample sizes, read threads, prefetch
    nvme: Path                # an nvme card
    drives: int               # local drives per node (striped)
    io_size: int


@dataclass(frozen=True)
class PipelineSpec:
    gpus: int                    # GPUs of the node fed by this pipeline
    batch: int                   # samples per GPU per step
    cpu_per_sample_s: float      # host core-seconds to prepare one sample
    storage: StorageSpec | None = None   # the job's storage: DLIO workload, NVMe card, drives, I/O size


@dataclass(frozen=True)
class HostSetup:
    """A node's host as the step simulation sees it: its cores, the transport's demand while a bucket is on the
    wire (cores; 0 = offloaded) and the input pipeline (None = batches are always ready)."""

    cores: float
    tcp_cores: float = 0.0
    pipeline: PipelineSpec | None = None


class InputPipeline:
    """Batches for the steps of one node (module docstring): `ready(k)` fires when batch k is built,
    `take(k)` says step k took it, `reads_end_s[k]` is when its reads ended."""

    def __init__(self, sim: Simulation, spec: PipelineSpec, cores: SharedCores, steps: int):
        self.sim, self.spec, self.cores = sim, spec, cores
        self.reads_end_s: dict[int, float] = {}
        self.reader = None
        workers, ahead = 1, 2
        if spec.storage is not None:
            self.reader, workload = _reader(sim, spec, steps)
            workers, ahead = max(1, workload.read_threads), max(1, workload.read_threads) * max(1, workload.prefetch)
        self.ahead, self.steps = ahead, steps
        self.cores_per_build = float(spec.gpus) if spec.storage is not None else cores.host.cores
        self._ready: dict[int, object] = {}
        self._taken: dict[int, object] = {}
        self.warm = spec.storage is None
        for k in range(ahead if self.warm else 0):
            self.ready(k).succeed()
            self.reads_end_s[k] = 0.0
        for w in range(workers):
            sim.process(self._builder(w, workers, ahead, steps))

    def ready(self, k: int):
        return self._event(self._ready, k)

    def full(self, k: int) -> bool:
        """Whether batches k .. k + ahead - 1 are all built (the pipeline cannot run further ahead); False where
        that reaches past the simulated steps (no builder goes there)."""
        return k + self.ahead <= self.steps and all(self.ready(j).triggered for j in range(k, k + self.ahead))

    def take(self, k: int) -> None:
        self._event(self._taken, k).succeed()

    def _event(self, events: dict, k: int):
        if k not in events:
            events[k] = self.sim.env.event()
        return events[k]

    def _builder(self, w: int, workers: int, ahead: int, steps: int):
        sim, spec = self.sim, self.spec
        lane = f"loader {w}" if workers > 1 else "loader"
        for k in range(w + (ahead if self.warm else 0), steps, workers):
            taken = self._event(self._taken, k - ahead) if k >= ahead else None
            if taken is not None and not taken.triggered:
                yield taken
            if self.reader is not None:
                start = sim.now
                yield sim.env.all_of([sim.process(self.reader.read_batch(g, k)) for g in range(spec.gpus)])
                sim.interval(lane, f"read batch {k}", start)
            self.reads_end_s[k] = sim.now
            work = spec.gpus * spec.batch * spec.cpu_per_sample_s
            if work > 0:
                yield self.cores.run(lane, f"prepare batch {k}", work / self.cores_per_build, self.cores_per_build)
            self.ready(k).succeed()


def _reader(sim: Simulation, spec: PipelineSpec, steps: int):
    """storage/loader.py's SampleReader for this node: its DLIO workload at the job's batch size."""
    from simcluster.storage import dlio_workload, loader
    from simcluster.storage.nvme import load_nvme

    storage = spec.storage
    workload = dataclasses.replace(dlio_workload.load(storage.workload), batch_size=spec.batch)
    nvme, _ = load_nvme(storage.nvme)
    config = loader.LoaderConfig(io_size=storage.io_size, steps=steps)
    loader.check_setup(spec.gpus, storage.drives, config)
    loader.check_reads(workload, spec.gpus, steps, config.io_size)
    return loader.SampleReader(sim, workload, nvme, storage.drives, spec.gpus, config), workload
