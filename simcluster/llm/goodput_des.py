"""A whole training job as a DES on the simulation kernel: compute, checkpoints, failures, restarts.

Two processes on one Simulation: the job (compute tau of work, block for the checkpoint's copy, then either the
write is inside the block (synchronous) or a writer process makes the checkpoint durable `write_s` later
(asynchronous); the next copy waits for the last write) and the failures (exponential gaps drawn from the run's one
seeded generator, each interrupting the job wherever it is: computing, checkpointing or restarting). An interruption
rolls the job back to its last durable checkpoint and costs a restart; a write in flight is lost.
The standard error of the wall time comes from the run's own cycles (wall time between durable checkpoints, i.i.d.
for synchronous checkpoints, by memorylessness): sqrt(n) x their standard deviation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import simpy

from simcluster.engine import Simulation, expect_events

EVENTS_PER_CHECKPOINT = {False: 2, True: 5}   # kernel events per checkpoint, synchronous / asynchronous write (measured:
EVENTS_PER_INTERRUPTION = 4                    # 40,002 and 100,002 for 20,000; 3.7-4.9 more per interruption)


def expect_job_events(checkpoints: float, interruptions: float, asynchronous: bool) -> None:
    """The job DES's estimated kernel events, refused past --max-events before it runs (engine.expect_events)."""
    expect_events(EVENTS_PER_CHECKPOINT[asynchronous] * checkpoints + EVENTS_PER_INTERRUPTION * interruptions,
                  f"the job DES of {checkpoints:,.0f} checkpoints and {interruptions:,.0f} interruptions",
                  "a longer checkpoint interval, or fewer train_tokens")


@dataclass(frozen=True)
class JobRun:
    wall_s: float
    wall_se_s: float           # standard error of wall_s from the run's own cycles
    interruptions: int
    checkpoints: int
    events: int

    def to_json(self) -> dict:
        return {"wall_s": self.wall_s, "wall_se_s": self.wall_se_s, "interruptions": self.interruptions,
                "checkpoints": self.checkpoints, "events": self.events}


class _Job:
    def __init__(self, sim: Simulation, work_s, interval_s, blocking_s, write_s, restart_s):
        self.sim, self.work, self.tau = sim, work_s, interval_s
        self.blocking, self.write, self.restart = blocking_s, write_s, restart_s
        self.durable = 0.0          # work saved in a durable checkpoint
        self.generation = 0         # +1 per interruption: a write begun before it is lost
        self.writing = None         # the write in flight (asynchronous)
        self.interruptions = 0
        self.cycles = []            # wall time between durable advances
        self._last = 0.0

    def _durable(self, upto: float) -> None:
        if upto > self.durable:
            self.durable = upto
            now = self.sim.now
            self.cycles.append(now - self._last)
            self._last = now

    def _writer(self, upto: float, generation: int):
        yield self.sim.timeout(self.write)
        if generation == self.generation:
            self._durable(upto)

    def run(self):
        env, restarting = self.sim.env, False
        done = self.durable
        while self.durable < self.work:
            try:
                if restarting:
                    yield env.timeout(self.restart)
                    restarting = False
                if done < self.work:
                    target = min(done + self.tau, self.work)
                    yield env.timeout(target - done)
                    done = target
                    if self.writing is not None and self.writing.is_alive:
                        yield self.writing
                    yield env.timeout(self.blocking)
                    if self.write > 0:
                        self.writing = env.process(self._writer(done, self.generation))
                    else:
                        self._durable(done)
                elif self.writing is not None:   # all work done: wait for the last write
                    yield self.writing
            except simpy.Interrupt:
                self.interruptions += 1
                self.generation += 1
                self.writing = None
                done = self.durable
                restarting = True


def _failures(sim: Simulation, job, rate_per_s: float):
    rng = sim.rng
    while True:
        yield sim.timeout(rng.exponential(1.0 / rate_per_s))
        if job.is_alive:
            job.interrupt()


def simulate_job(work_s: float, interval_s: float, blocking_s: float, write_s: float, restart_s: float,
                 rate_per_s: float, seed: int = 0) -> JobRun:
    """One run of the job: `work_s` of computing, a checkpoint every `interval_s` of it that blocks `blocking_s` and
    is durable `write_s` after that (0: synchronous), restarts of `restart_s`, failures at `rate_per_s`."""
    expect_job_events(work_s / interval_s, rate_per_s * work_s, write_s > 0)
    sim = Simulation(seed, record=False)
    state = _Job(sim, work_s, interval_s, blocking_s, write_s, restart_s)
    job = sim.process(state.run())
    sim.process(_failures(sim, job, rate_per_s))
    sim.run(until=job)
    cycles = state.cycles
    n = len(cycles)
    mean = sum(cycles) / n
    sd = math.sqrt(sum((c - mean) ** 2 for c in cycles) / (n - 1)) if n > 1 else 0.0
    return JobRun(sim.now, math.sqrt(n) * sd, state.interruptions, n, sim.events_processed)
