"""HostCpu: a host's cores as a shared resource; SharedCores: the same cores as a processor-sharing resource
on the simulation kernel.

Demands are in cores (core-seconds per second). When they fit, every consumer gets what it asks
for; when they do not, the cores are shared max-min fairly (the same rule as network links), so
an onloaded TCP transport and a data loader that both want more than the host has each get a fair
share and both slow down. On one resource max-min is progressive filling: serve the consumers in
order of demand, each getting min(its demand, what is left / consumers left). Output: what each
consumer gets.

SharedCores runs jobs (the loader's work on a batch, the transport's work while a bucket is on the
wire) on those cores as they happen: a job asks for `cap` cores and needs `full_rate_s` seconds at
that rate; whenever a job starts or ends, every running job's rate is re-shared (HostCpu.grants) and
its end re-planned, so a job runs at speed granted / cap of its full rate. A job alone on enough
cores ends exactly full_rate_s after it started.
"""

from __future__ import annotations

from dataclasses import dataclass

from simcluster.engine import Simulation


@dataclass(frozen=True)
class HostCpuParams:
    """A host-cpu card: what one host's cores cost an onloaded (kernel TCP) transport."""

    cores: float | None            # the host's cores, when the bundle recorded them
    tcp_cpu_s_per_byte: float      # core-seconds per byte of one TCP stream (sender or receiver, the larger)
    tcp_stack_latency_s: float     # small-message one-way latency through the host's TCP stack (loopback)


@dataclass(frozen=True)
class HostCpu:
    cores: float

    def share(self, demands: dict[str, float]) -> dict[str, float]:
        """Cores granted to each named consumer (never more than it asks for); tutorial 03 uses it."""
        return dict(zip(demands, self.grants(list(demands.values())), strict=True))

    def grants(self, wants: list[float]) -> list[float]:
        """Max-min fair cores for consumers asking for `wants` cores, in the same order."""
        wants = [max(0.0, w) for w in wants]
        if sum(wants) <= self.cores:
            return wants
        out, left, n = [0.0] * len(wants), self.cores, len(wants)
        for served, k in enumerate(sorted(range(n), key=wants.__getitem__)):
            out[k] = min(wants[k], left / (n - served))
            left -= out[k]
        return out


class _Job:
    __slots__ = ("lane", "name", "cap", "left_s", "speed", "since", "done")

    def __init__(self, lane: str, name: str, cap: float, full_rate_s: float, done):
        self.lane, self.name, self.cap, self.left_s, self.done = lane, name, cap, full_rate_s, done
        self.speed, self.since = 0.0, 0.0


class SharedCores:
    """A host's cores on the kernel, processor-shared max-min among the jobs running now (module docstring).
    Each job's stretches at one rate are recorded as intervals on its lane ("loader 2.70 cores")."""

    def __init__(self, sim: Simulation, cores: float):
        self.sim, self.host = sim, HostCpu(cores)
        self.jobs: list[_Job] = []
        self.busy_core_s = 0.0      # core-seconds granted so far (all jobs)
        self._last = 0.0
        self._plan = 0              # which planned end is current (a re-share makes older ones stale)

    def run(self, lane: str, name: str, full_rate_s: float, cap: float):
        """An event that fires when the job is done: `full_rate_s` seconds of work at `cap` cores."""
        done = self.sim.env.event()
        if full_rate_s <= 0 or cap <= 0:
            return done.succeed()
        self._advance()
        job = _Job(lane, name, cap, full_rate_s, done)
        job.since = self.sim.now
        self.jobs.append(job)
        self._reshare()
        return done

    def _advance(self) -> None:
        now = self.sim.now
        dt = now - self._last
        if dt > 0:
            for job in self.jobs:
                job.left_s -= job.speed * dt
                self.busy_core_s += job.speed * job.cap * dt
        self._last = now

    def _reshare(self) -> None:
        now = self.sim.now
        grants = self.host.grants([job.cap for job in self.jobs])
        for job, granted in zip(self.jobs, grants, strict=True):
            speed = granted / job.cap
            if speed != job.speed:
                self._segment(job)
                job.speed, job.since = speed, now
        self._plan += 1
        if self.jobs:
            plan = self._plan
            end = min(job.left_s / job.speed for job in self.jobs)
            self.sim.env.timeout(max(0.0, end)).callbacks.append(lambda _event: self._on_end(plan))

    def _on_end(self, plan: int) -> None:
        if plan != self._plan:
            return
        self._advance()
        finished = [job for job in self.jobs if job.left_s <= 1e-12]   # seconds of work left: rounding only
        first = min(self.jobs, key=lambda job: job.left_s)
        for job in finished or [first]:   # the job this end was planned for, whatever rounding left of it
            self._segment(job)
            self.jobs.remove(job)
            job.done.succeed()
        self._reshare()

    def _segment(self, job: _Job) -> None:
        if job.speed > 0:
            self.sim.recorder.interval(job.lane, f"{job.name} ({job.speed * job.cap:.2f} cores)", job.since, self.sim.now)
