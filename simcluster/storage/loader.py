"""DLIO's training loop on emulated accelerators, reading from NVMe drives (SimPy).

Per accelerator (one MPI rank in DLIO): a loader with `read_threads` workers; worker w builds batches w, w+T, w+2T, ...
by reading each sample's record in `io_size` reads with `depth` reads in flight (the kernel's readahead; a TFRecord
batch is one sequential stream through its file), each read then taken in by the worker at `thread_read_Bps` on one
of the host's `cores`; remote storage: every read also crosses the host's network link (`network_Bps`, FIFO). Batch j
is handed to its worker when batch j - T x f is consumed (PyTorch; f = 2 when prefetch_size is 0, else ceil(prefetch_size / T)).
The step loop: wait for the batch (load), compute for computation_time, barrier across accelerators (DLIO's per-step
sync). Files are spread over the drives round-robin (a striped volume). Page cache: `page_cache` (every record read
before is in memory) or `cache_bytes` (an LRU over epochs reshuffled at random: hit share h = c^2 / 2, c = cache / dataset).

Outputs per run: the steady-state estimate (storage/steady.py) and, exactly as DLIO computes them over the whole run
(dlio_benchmark/utils/statscounter.py; proc = load + compute + barrier, so the first load is excluded):
  AU per rank = sum(compute[1:]) / (block wall - proc[0]) x 100,   averaged over ranks
  throughput  = steps x batch / block wall  (samples/s per rank, summed over ranks)
  I/O rate    = throughput x record_length / 2^20  (MiB/s; DLIO prints it as "MB/s")
  stall       = mean over ranks and steps 2.. of (proc - compute), the barrier's wait included (not a DLIO output)
plus the device log and each resource's use over the steady window (storage/use.py): what limits the run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import simpy

from simcluster.engine import Simulation, expect_events
from simcluster.errors import SimclusterError
from simcluster.storage import steady
from simcluster.storage.dlio_workload import DlioWorkload
from simcluster.storage.nvme import IoLog, NvmeDevice, NvmeParams
from simcluster.storage.use import busy_shares, limit_of

MAX_ACCELERATORS = 4096
MAX_DRIVES = 256
MIN_IO_BYTES, MAX_IO_BYTES = 4096, 64 * 2**20     # one page to 64 MiB per read I/O
MAX_IOS = 1_000_000                               # reads one simulation may issue (about 5-10 s on one core)
EVENTS_PER_READ, EVENTS_PER_STEP = 1.1, 6         # kernel events per read I/O and per accelerator step (measured)


class SimulationBound(SimclusterError):
    """A run larger than the simulation's bound (MAX_IOS reads): a stated limit, not a bad input."""


@dataclass(frozen=True)
class LoaderConfig:
    io_size: int = 256 * 1024    # bytes per read I/O (readahead window for sequential file reads)
    depth: int = 2               # reads in flight per worker
    steps: int | None = None     # steps per rank (None: until the steady-state estimate settles)
    at_least: bool = False       # steps is a minimum: go on until the estimate settles (max-accelerators)
    decide_au_percent: float | None = None   # a search's candidate: stop as soon as AU is decidedly above or below this
    page_cache: bool = False
    cache_bytes: float | None = None      # host page cache the dataset may use (None: none, MLPerf's sizing rule)
    thread_read_Bps: float | None = None  # bytes/s one worker can take in (copy, decode); None = no limit
    cores: float | None = None   # host cores the workers share; None = one per worker
    network_Bps: float | None = None      # remote storage: the host's link every read crosses; None = local drives


@dataclass
class RunResult:
    accelerators: int
    drives: int
    steps: int
    au_percent: float            # steady state (steady.Estimate); DLIO's whole-run value in dlio_au_percent
    throughput_samples_per_s: float
    throughput_MiB_per_s: float
    wall_s: float
    stall_per_step_s: float      # mean step time beyond compute (own batch wait + the barrier's wait for the others), first step excluded
    events: int = 0              # SimPy events processed (for the speed benchmark)
    logs: list[IoLog] = field(default_factory=list)
    compute: list[list[float]] = field(default_factory=list)
    proc: list[list[float]] = field(default_factory=list)
    dlio_au_percent: float = 0.0
    dlio_throughput_samples_per_s: float = 0.0
    estimate: steady.Estimate | None = None
    use: dict = field(default_factory=dict)   # resource -> busy share of the steady window
    limit: str = ""
    bound: str = ""              # max_accelerators: the next count to try exceeded the simulation bound (an answer of "at least")


def dlio_au_percent(compute: list[float], proc: list[float], wall_s: float) -> float:
    """DLIO's AU of one rank's block: first step excluded from both compute and wall."""
    total_compute = float(np.sum(compute[1:]))
    if total_compute == 0:
        return 0.0
    return total_compute / (wall_s - proc[0]) * 100.0


def prefetch_factor(workload: DlioWorkload) -> int:
    """Batches each loader worker may hold ready: DLIO's PyTorch loader gives prefetch_factor = ceil(prefetch_size / T),
    2 when prefetch_size is 0; its TensorFlow loader interleaves T files and prefetches prefetch_size batches (>= 1)."""
    threads = workload.read_threads
    if workload.format == "tfrecord":
        return max(1, math.ceil(workload.prefetch / threads))
    return math.ceil(workload.prefetch / threads) if workload.prefetch > 0 else 2


def check_setup(accelerators: int, drives: int, config: LoaderConfig) -> None:
    """Refuse accelerator, drive, I/O size, depth and step counts outside their bounds (one-line errors)."""
    if not (1 <= accelerators <= MAX_ACCELERATORS and 1 <= drives <= MAX_DRIVES):
        raise SimclusterError(f"need 1 to {MAX_ACCELERATORS} accelerators and 1 to {MAX_DRIVES} drives, "
                              f"got {accelerators} and {drives}")
    if not MIN_IO_BYTES <= config.io_size <= MAX_IO_BYTES:
        raise SimclusterError(f"I/O size {config.io_size} B: expected {MIN_IO_BYTES // 1024} KiB to {MAX_IO_BYTES // 2**20} MiB")
    if config.depth < 1 or (config.steps is not None and config.steps < 1):
        raise SimclusterError(f"reads in flight per thread (--depth {config.depth}) and --steps ({config.steps}) must be >= 1")


def reads_per_step(workload: DlioWorkload, io_size: int) -> int:
    """Read I/Os one accelerator issues per step (a record below one page is one page read)."""
    if workload.format == "tfrecord":
        return math.ceil(workload.batch_size * max(MIN_IO_BYTES, workload.record_bytes) / io_size)
    return workload.batch_size * math.ceil(max(MIN_IO_BYTES, workload.record_bytes) / io_size)


def check_reads(workload: DlioWorkload, accelerators: int, steps: int, io_size: int, least_steps: int = 0) -> None:
    """Refuse a run past MAX_IOS reads, or whose least steps (default: steps) cost more kernel events than --max-events."""
    least, per_step = least_steps or steps, reads_per_step(workload, io_size)
    expect_events(least * accelerators * (EVENTS_PER_READ * per_step + EVENTS_PER_STEP), f"the loader's {least:,} steps x "
                  f"{accelerators:,} accelerators", "fewer --steps or accelerators, or a larger --io-size")
    ios = steps * accelerators * per_step
    if ios > MAX_IOS:
        raise SimulationBound(f"{ios:.3g} reads to simulate ({steps} steps x {accelerators} accelerators x "
                              f"{workload.batch_size} samples of {workload.record_bytes:.4g} B in {io_size} B I/Os); "
                              f"at most {MAX_IOS:,}", where=workload.path, hint="fewer --steps or a larger --io-size")


class SampleReader:
    """The loader's I/O path on a Simulation: the workload's files (sizes drawn once), DLIO's seeded shuffle, files
    striped round-robin over `drives` NVMe devices, each record read in `io_size` reads with `depth` in flight (a
    record below one page is one page read). `consume(bytes)`, when given, is a generator run after each read
    completes (a worker taking it in). Busy time is counted for the network link and the host cores."""

    def __init__(self, sim: Simulation, workload: DlioWorkload, nvme: NvmeParams, drives: int, accelerators: int,
                 config: LoaderConfig, logs: list[IoLog] | None = None, consume=None, cache_hit: float = 0.0):
        self.env, self.workload, self.config, self.accelerators, self.consume = sim.env, workload, config, accelerators, consume
        rng = sim.rng
        self.devices = [NvmeDevice(sim.env, nvme, rng, logs[d] if logs else None) for d in range(drives)]
        files = workload.num_files
        self.sizes = np.maximum(512, rng.normal(workload.record_bytes, workload.record_stdev_bytes, files)).astype(np.int64)  # one sector at least
        self.order = rng.permutation(files * workload.samples_per_file)  # DLIO's seeded shuffle
        self.cached: set[int] = set()
        self.cache_hit = cache_hit
        self.cache_rng = np.random.default_rng([sim.seed, 1]) if cache_hit > 0 else None  # its own stream: no other draw moves
        self.link = simpy.Resource(sim.env, capacity=1) if config.network_Bps else None
        self.link_busy_s = 0.0

    def _read(self, dev: NvmeDevice, n: int):
        """One read I/O: the drive, then (remote storage) the host's link."""
        yield dev.read(n)
        if self.link is not None:
            with self.link.request() as req:
                yield req
                t = n / self.config.network_Bps
                self.link_busy_s += t
                yield self.env.timeout(t)

    def read_bytes(self, f: int, size: int):
        env, config, dev = self.env, self.config, self.devices[f % len(self.devices)]
        size, offset, inflight = max(MIN_IO_BYTES, size), 0, []
        start = dev.read if self.link is None else (lambda n: env.process(self._read(dev, n)))
        while offset < size:
            n = min(config.io_size, size - offset)
            offset += n
            inflight.append((start(n), n))
            if len(inflight) >= config.depth:
                done, m = inflight.pop(0)
                yield done
                if self.consume:
                    yield from self.consume(m)
        for done, m in inflight:
            yield done
            if self.consume:
                yield from self.consume(m)

    def read_file(self, f: int):
        yield from self.read_bytes(f, int(self.sizes[f]))

    def sample_file(self, rank: int, step: int, k: int) -> int:
        w = self.workload
        idx = (step * self.accelerators + rank) * w.batch_size + k
        return int(self.order[idx % len(self.order)]) // w.samples_per_file

    def _hit(self) -> bool:
        return self.cache_rng is not None and self.cache_rng.random() < self.cache_hit

    def read_batch(self, rank: int, step: int):
        """A process body: read every sample of `rank`'s batch `step`, one record after another (TFRecord: the batch's
        records as one sequential stream through the first sample's file)."""
        w = self.workload
        if w.format == "tfrecord":
            f = self.sample_file(rank, step, 0)
            if not self._hit():
                yield from self.read_bytes(f, int(w.batch_size * w.record_bytes))
            return
        for k in range(w.batch_size):
            f = self.sample_file(rank, step, k)
            if (self.config.page_cache and f in self.cached) or self._hit():
                continue
            yield from self.read_file(f)
            self.cached.add(f)


def cache_hit_share(workload: DlioWorkload, cache_bytes: float | None) -> float:
    """Share of record reads the page cache serves in the epochs after the first: an LRU of C bytes over a dataset of D
    reshuffled at random each epoch keeps a record read at position y of one epoch until position x of the next when
    (1 - y + x) D < C, so h = c^2 / 2 for c = C / D < 1 (hits evict nothing, which this ignores), 1 for c >= 1."""
    if not cache_bytes:
        return 0.0
    c = cache_bytes / (workload.num_files * workload.samples_per_file * workload.record_bytes)
    return 1.0 if c >= 1 else c * c / 2


def plan_for(workload: DlioWorkload, accelerators: int, config: LoaderConfig) -> tuple[steady.Plan, int]:
    """The steady-state plan and the steps this run simulates (fixed, or the bound of a run until settled)."""
    bound = min(steady.MAX_STEPS, MAX_IOS // max(1, accelerators * reads_per_step(workload, config.io_size)))
    p = steady.plan(workload.read_threads, bound, workload.steps_per_epoch(accelerators))
    if config.steps is not None and not config.at_least:
        return p, config.steps
    if bound < p.min_steps:
        raise SimulationBound(f"a steady-state run needs >= {p.min_steps} steps, and {p.min_steps} steps x {accelerators} "
                              f"accelerators x {reads_per_step(workload, config.io_size)} reads per step exceed the bound of "
                              f"{MAX_IOS:,} reads", where=workload.path, hint="a larger --io-size, fewer accelerators or drives, "
                              "or a fixed run (storage simulate --steps N)")
    return p, bound    # --steps N of a run until settled is a minimum within the bound (the bound is the stated limit)


def simulate(workload: DlioWorkload, nvme: NvmeParams, accelerators: int, drives: int = 1,
             config: LoaderConfig = LoaderConfig(), seed: int = 0) -> RunResult:
    check_setup(accelerators, drives, config)
    sim = Simulation(seed, record=False)
    env, rng = sim.env, sim.rng
    logs = [IoLog() for _ in range(drives)]
    plan, steps = plan_for(workload, accelerators, config)
    check_reads(workload, accelerators, steps, config.io_size, steps if config.steps and not config.at_least else plan.min_steps)
    if steps < 2:
        raise SimclusterError(f"{steps} step(s) per rank at {accelerators} accelerators; DLIO's AU needs >= 2",
                              where=workload.path, hint="simulate more steps (--steps) or give the workload more files")
    until_settled = config.steps is None or config.at_least
    threads = workload.read_threads
    ahead = threads * prefetch_factor(workload)
    # a run until settled reads on past its end as training reads the next batches (its last steps are no faster); a
    # fixed run is one DLIO epoch whose loader stops with it
    reads_to = steps + ahead + threads if until_settled else steps
    barrier_waiters: list = []
    compute_log = [[] for _ in range(accelerators)]
    lead_log = [[] for _ in range(accelerators)]
    asked_log = [[] for _ in range(accelerators)]
    done = [0] * accelerators                   # batches each rank's loaders have finished
    release: list[float] = []                   # when each step's barrier opened
    busy = {"threads": 0.0, "cpu": 0.0}
    snapshots: list[tuple] = []                 # cumulative busy counters at each release
    stop = env.event()
    t_end = [0.0] * accelerators

    cpu = simpy.Resource(env, capacity=max(1, int(config.cores))) if config.cores else None

    def consume(n: int):
        t = n / config.thread_read_Bps
        if cpu is None:
            yield env.timeout(t)
            return
        with cpu.request() as core:
            yield core
            busy["cpu"] += t
            yield env.timeout(t)

    reader = SampleReader(sim, workload, nvme, drives, accelerators, config, logs,
                          consume if config.thread_read_Bps is not None else None,
                          cache_hit_share(workload, config.cache_bytes))

    def counters() -> tuple:
        devs = reader.devices
        return (sum(d.link_busy_s for d in devs), sum(d.unit_busy_s for d in devs), reader.link_busy_s, busy["cpu"],
                busy["threads"] + sum(env.now - t for t in reading.values()))

    reading: dict = {}

    def worker(rank: int, w: int, ready: list, issued: list):
        for step in range(w, reads_to, threads):
            yield issued[step]
            reading[(rank, w)] = env.now
            yield from reader.read_batch(rank, step)
            busy["threads"] += env.now - reading.pop((rank, w))
            done[rank] += 1
            ready[step].succeed()

    def barrier():
        ev = env.event()
        barrier_waiters.append(ev)
        if len(barrier_waiters) == accelerators:
            for e in barrier_waiters:
                e.succeed()
            barrier_waiters.clear()
            release.append(env.now)
            snapshots.append(counters())
            n = len(release)
            if until_settled and not stop.triggered and n >= max(plan.min_steps, min(config.steps or 0, steps)) \
                    and (n - plan.warmup) % plan.block == 0:
                args = (release, np.asarray(compute_log)[:, :len(release)], _lead(), workload.batch_size, accelerators, plan)
                if steady.settled_estimate(*args) is not None or (
                        config.decide_au_percent is not None and steady.decided_estimate(*args, config.decide_au_percent)):
                    stop.succeed()
        return ev

    def _lead() -> np.ndarray:
        n = len(release)
        return np.mean([lead[:n] for lead in lead_log], axis=0)

    def rank_loop(rank: int):
        ready = [env.event() for _ in range(reads_to)]
        # PyTorch's DataLoader hands batch j to worker j % T when batch j - T x f is consumed (in order, not to
        # whichever worker is idle first): the first T x f are issued at once
        issued = [env.event() for _ in range(reads_to)]
        for j in range(min(ahead, reads_to)):
            issued[j].succeed()
        for w in range(threads):
            env.process(worker(rank, w, ready, issued))
        for step in range(steps):
            asked_log[rank].append(env.now)
            lead_log[rank].append(done[rank] - step)
            yield ready[step]
            if step + ahead < reads_to:
                issued[step + ahead].succeed()
            c = workload.computation_time_s
            if workload.computation_stdev_s > 0:
                c = max(0.0, rng.normal(c, workload.computation_stdev_s))
            compute_log[rank].append(c)
            yield env.timeout(c)
            yield barrier()
        t_end[rank] = env.now
        if rank == 0 and not stop.triggered:
            stop.succeed()

    for r in range(accelerators):
        env.process(rank_loop(r))
    sim.run(until=stop)
    n = len(release)
    compute = np.asarray([c[:n] for c in compute_log])
    proc = [[release[i] - asked_log[r][i] for i in range(n)] for r in range(accelerators)]  # DLIO: load start to step end
    wall = release[-1]
    lead = _lead()
    args = (release, compute, lead, workload.batch_size, accelerators, plan)
    est = (steady.settled_estimate(*args) if until_settled else None) \
        or (steady.decided_estimate(*args, config.decide_au_percent) if until_settled and config.decide_au_percent is not None
            else None) or steady.fixed_estimate(*args)
    dlio_au = float(np.mean([dlio_au_percent(compute[r], proc[r], wall) for r in range(accelerators)]))
    dlio_samples = accelerators * n * workload.batch_size / wall
    stall = max(0.0, float(np.mean([np.mean(np.asarray(proc[r][1:]) - compute[r][1:]) for r in range(accelerators)])))  # no rounding residue
    use = busy_shares(snapshots, release, est, drives, config, accelerators * threads, nvme)
    samples = est.throughput_samples_per_s
    return RunResult(accelerators, drives, n, est.au_percent, samples, samples * workload.record_bytes / 2**20, wall,
                     stall, sim.events_processed, logs, compute.tolist(), proc, dlio_au, dlio_samples, est, use, limit_of(use, est.au_percent))
