"""DLIO's training loop on emulated accelerators, reading from NVMe drives (SimPy).

Per accelerator (one MPI rank in DLIO): a PyTorch-style loader with `read_threads` workers; worker
w builds batches w, w+T, w+2T, ... by reading each sample's file from start to end in `io_size`
reads with `depth` reads in flight (the kernel's readahead), and may run at most `prefetch`
batches ahead of the step that consumes them. The step loop: wait for the batch (load), then
compute for computation_time, then a barrier across accelerators (DLIO's per-step sync).
Files are spread over the drives round-robin (a striped volume). With `page_cache`, a sample
read before in the run comes from memory (no I/O).

Outputs per run, computed exactly as DLIO computes them (dlio_benchmark/utils/statscounter.py):
  AU per rank = sum(compute[1:]) / (block wall - proc[0]) x 100,   averaged over ranks
  throughput  = steps x batch / block wall  (samples/s per rank, summed over ranks)
  I/O rate    = throughput x record_length / 2^20  (MiB/s; DLIO prints it as "MB/s")
  stall       = mean over ranks and steps 2.. of (batch wait + proc - compute): the step's time beyond its own compute,
                including the barrier's wait for slower ranks (their loads, and their compute jitter when the workload
                has computation_time_stdev); not a DLIO output; consistent with AU
plus the device log: throughput over time, queue depth per I/O, latency percentiles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import simpy

from simcluster.engine import Simulation
from simcluster.errors import SimclusterError
from simcluster.storage.dlio_workload import DlioWorkload
from simcluster.storage.nvme import IoLog, NvmeDevice, NvmeParams

MAX_ACCELERATORS = 4096
MAX_DRIVES = 256
MIN_IO_BYTES, MAX_IO_BYTES = 4096, 64 * 2**20     # one page to 64 MiB per read I/O
MAX_IOS = 1_000_000                               # reads one simulation may issue (about 5-10 s on one core)
MAX_SEARCH_IOS = 2 * MAX_IOS                      # reads a max-accelerators search may issue over all its runs


@dataclass(frozen=True)
class LoaderConfig:
    io_size: int = 256 * 1024    # bytes per read I/O (readahead window for sequential file reads)
    depth: int = 2               # reads in flight per worker
    steps: int | None = None     # steps per rank to simulate (default: one DLIO epoch)
    page_cache: bool = False
    thread_read_Bps: float | None = None  # bytes/s one worker can take in (copy, decode); None = no limit
    cores: float | None = None   # host cores the workers share; None = one per worker


@dataclass
class RunResult:
    accelerators: int
    drives: int
    steps: int
    au_percent: float
    throughput_samples_per_s: float
    throughput_MiB_per_s: float
    wall_s: float
    stall_per_step_s: float      # mean step time beyond compute (own batch wait + the barrier's wait for the others), first step excluded
    events: int = 0              # SimPy events processed (for the speed benchmark)
    logs: list[IoLog] = field(default_factory=list)
    compute: list[list[float]] = field(default_factory=list)
    proc: list[list[float]] = field(default_factory=list)


def dlio_au_percent(compute: list[float], proc: list[float], wall_s: float) -> float:
    """DLIO's AU of one rank's block: first step excluded from both compute and wall."""
    total_compute = float(np.sum(compute[1:]))
    if total_compute == 0:
        return 0.0
    return total_compute / (wall_s - proc[0]) * 100.0


def check_setup(accelerators: int, drives: int, config: LoaderConfig) -> None:
    """Refuse accelerator, drive, I/O size, depth and step counts outside their bounds (one-line errors)."""
    if not (1 <= accelerators <= MAX_ACCELERATORS and 1 <= drives <= MAX_DRIVES):
        raise SimclusterError(f"need 1 to {MAX_ACCELERATORS} accelerators and 1 to {MAX_DRIVES} drives, "
                              f"got {accelerators} and {drives}")
    if not MIN_IO_BYTES <= config.io_size <= MAX_IO_BYTES:
        raise SimclusterError(f"I/O size {config.io_size} B: expected {MIN_IO_BYTES // 1024} KiB to {MAX_IO_BYTES // 2**20} MiB")
    if config.depth < 1 or (config.steps is not None and config.steps < 1):
        raise SimclusterError(f"reads in flight ({config.depth}) and steps ({config.steps}) must be >= 1")


def reads(workload: DlioWorkload, accelerators: int, steps: int, io_size: int) -> int:
    """The reads a run issues, about (each sample's size taken as its mean plus one standard deviation)."""
    sample = max(512.0, workload.record_bytes) + workload.record_stdev_bytes   # the drawn sizes (SampleReader) at most so, mostly
    return steps * accelerators * workload.batch_size * math.ceil(sample / io_size)


def check_reads(workload: DlioWorkload, accelerators: int, steps: int, io_size: int) -> None:
    """Refuse a run that would issue more than MAX_IOS reads (a bound instead of a simulation of hours)."""
    sample = max(512.0, workload.record_bytes) + workload.record_stdev_bytes
    ios = reads(workload, accelerators, steps, io_size)
    if ios > MAX_IOS:
        raise SimclusterError(f"{ios:.3g} reads to simulate ({steps} steps x {accelerators} accelerators x "
                              f"{workload.batch_size} samples of up to {sample:.4g} B in {io_size} B I/Os); "
                              f"at most {MAX_IOS:,}", where=workload.path, hint="fewer --steps or a larger --io-size")


class SampleReader:
    """The loader's I/O path on a Simulation: the workload's files (sizes drawn once), DLIO's seeded shuffle, files
    striped round-robin over `drives` NVMe devices, each file read start to end in `io_size` reads with `depth` in
    flight. `consume(bytes)`, when given, is a generator run after each read completes (a worker taking it in)."""

    def __init__(self, sim: Simulation, workload: DlioWorkload, nvme: NvmeParams, drives: int, accelerators: int,
                 config: LoaderConfig, logs: list[IoLog] | None = None, consume=None):
        self.env, self.workload, self.config, self.accelerators, self.consume = sim.env, workload, config, accelerators, consume
        rng = sim.rng
        self.devices = [NvmeDevice(sim.env, nvme, rng, logs[d] if logs else None) for d in range(drives)]
        files = workload.num_files
        self.sizes = np.maximum(512, rng.normal(workload.record_bytes, workload.record_stdev_bytes, files)).astype(np.int64)  # one sector at least
        self.order = rng.permutation(files * workload.samples_per_file)  # DLIO's seeded shuffle
        self.cached: set[int] = set()

    def read_file(self, f: int):
        env, config, dev = self.env, self.config, self.devices[f % len(self.devices)]
        size, offset, inflight = int(self.sizes[f]), 0, []
        while offset < size:
            n = min(config.io_size, size - offset)
            offset += n
            inflight.append((env.process(dev.read(n)), n))
            if len(inflight) >= config.depth:
                done, m = inflight.pop(0)
                yield done
                if self.consume:
                    yield from self.consume(m)
        for done, m in inflight:
            yield done
            if self.consume:
                yield from self.consume(m)

    def sample_file(self, rank: int, step: int, k: int) -> int:
        w = self.workload
        idx = (step * self.accelerators + rank) * w.batch_size + k
        return int(self.order[idx % len(self.order)]) // w.samples_per_file

    def read_batch(self, rank: int, step: int):
        """A process body: read every sample of `rank`'s batch `step`, one file after another."""
        for k in range(self.workload.batch_size):
            f = self.sample_file(rank, step, k)
            if self.config.page_cache and f in self.cached:
                continue
            yield from self.read_file(f)
            self.cached.add(f)


def simulate(workload: DlioWorkload, nvme: NvmeParams, accelerators: int, drives: int = 1,
             config: LoaderConfig = LoaderConfig(), seed: int = 0) -> RunResult:
    check_setup(accelerators, drives, config)
    sim = Simulation(seed, record=False)
    env, rng = sim.env, sim.rng
    logs = [IoLog() for _ in range(drives)]
    steps = config.steps or workload.steps_per_epoch(accelerators)
    check_reads(workload, accelerators, steps, config.io_size)
    if steps < 2:
        raise SimclusterError(f"{steps} step(s) per rank at {accelerators} accelerators; DLIO's AU needs >= 2",
                              where=workload.path, hint="simulate more steps (--steps) or give the workload more files")
    threads = max(1, workload.read_threads)
    barrier_waiters: list = []
    compute_log = [[] for _ in range(accelerators)]
    wait_log = [[] for _ in range(accelerators)]
    proc_log = [[] for _ in range(accelerators)]
    t_start = [0.0] * accelerators
    t_end = [0.0] * accelerators

    cpu = simpy.Resource(env, capacity=max(1, int(config.cores))) if config.cores else None

    def consume(n: int):
        if cpu is None:
            yield env.timeout(n / config.thread_read_Bps)
            return
        with cpu.request() as core:
            yield core
            yield env.timeout(n / config.thread_read_Bps)

    reader = SampleReader(sim, workload, nvme, drives, accelerators, config, logs,
                          consume if config.thread_read_Bps is not None else None)

    def worker(rank: int, w: int, ready: list, credits: simpy.Container):
        for step in range(w, steps, threads):
            yield credits.get(1)
            yield from reader.read_batch(rank, step)
            ready[step].succeed()

    def barrier():
        ev = env.event()
        barrier_waiters.append(ev)
        if len(barrier_waiters) == accelerators:
            for e in barrier_waiters:
                e.succeed()
            barrier_waiters.clear()
        return ev

    def rank_loop(rank: int):
        ready = [env.event() for _ in range(steps)]
        credits = simpy.Container(env, init=threads * max(1, workload.prefetch), capacity=10**9)
        for w in range(threads):
            env.process(worker(rank, w, ready, credits))
        t_start[rank] = env.now
        for step in range(steps):
            asked = env.now
            yield ready[step]
            wait_log[rank].append(env.now - asked)
            yield credits.put(1)
            t0 = env.now
            c = workload.computation_time_s
            if workload.computation_stdev_s > 0:
                c = max(0.0, rng.normal(c, workload.computation_stdev_s))
            yield env.timeout(c)
            yield barrier()
            compute_log[rank].append(c)
            proc_log[rank].append(env.now - t0)
        t_end[rank] = env.now

    for r in range(accelerators):
        env.process(rank_loop(r))
    sim.run()
    events = sim.events_processed
    walls = [t_end[r] - t_start[r] for r in range(accelerators)]
    au = float(np.mean([dlio_au_percent(compute_log[r], proc_log[r], walls[r]) for r in range(accelerators)]))
    samples = sum(steps * workload.batch_size / walls[r] for r in range(accelerators))
    # steady state, first load excluded: what a step takes beyond its compute, waiting for its own batch and, at DLIO's
    # per-step barrier, for the other accelerators' batches (AU counts both)
    stall = max(0.0, float(np.mean([np.mean([w + p - c for w, p, c in zip(wait_log[r][1:], proc_log[r][1:], compute_log[r][1:],
                                                                       strict=True)])
                           for r in range(accelerators)])))   # >= 0: a rounding residue is no negative stall
    return RunResult(accelerators, drives, steps, au, samples, samples * workload.record_bytes / 2**20, max(walls),
                     stall, events, logs, compute_log, proc_log)


def max_accelerators(workload: DlioWorkload, nvme: NvmeParams, drives: int = 1, config: LoaderConfig = LoaderConfig(),
                     seed: int = 0, limit: int = 4096) -> tuple[RunResult | None, list[RunResult]]:
    """The largest accelerator count whose AU meets the workload's threshold (MLPerf Storage's
    headline), by doubling then bisection (AU falls as accelerators are added)."""
    threshold = workload.au_threshold * 100
    tried: dict[int, RunResult] = {}

    spent = [0]

    def run(n: int) -> RunResult:
        if n not in tried:
            ios = reads(workload, n, config.steps or workload.steps_per_epoch(n), config.io_size)
            if spent[0] + ios > MAX_SEARCH_IOS:   # refused before the run that would pass the search's budget
                raise SimclusterError(f"the search for the largest accelerator count would simulate more than "
                                      f"{MAX_SEARCH_IOS:,} reads (at {n} accelerators, {spent[0] + ios:,})", where=workload.path,
                                      hint="fewer --steps or a larger --io-size")
            spent[0] += ios
            tried[n] = simulate(workload, nvme, n, drives, config, seed)
        return tried[n]

    if run(1).au_percent < threshold:
        return None, list(tried.values())
    lo, hi = 1, 2
    while hi <= limit and run(hi).au_percent >= threshold:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if run(mid).au_percent >= threshold else (lo, mid)
    return run(lo), [tried[k] for k in sorted(tried)]
