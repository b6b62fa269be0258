"""Simulation: one SimPy environment, one seeded numpy Generator, one recorder of intervals (the timeline).

Everything that happens in a run hangs off a Simulation, so a run is reproducible from
(scenario, seed) alone: no module-level state, no other source of randomness.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import simpy


@dataclass(frozen=True)
class Interval:
    """Something that took time on one lane (a GPU stream, a host thread, a link): what the timeline shows."""

    lane: str
    name: str
    start_s: float
    end_s: float
    process: str = ""          # a group of lanes (a pipeline stage, a rank); one timeline process each


@dataclass
class Recorder:
    """The intervals of a run, in the order they were recorded; report/perfetto.py turns them into a trace."""

    enabled: bool = True
    intervals: list[Interval] = field(default_factory=list)

    def interval(self, lane: str, name: str, start_s: float, end_s: float, process: str = "") -> None:
        if self.enabled and end_s > start_s:
            self.intervals.append(Interval(lane, name, start_s, end_s, process))


class _CountingEnvironment(simpy.Environment):
    """A SimPy environment that counts the events it processes (for events/s in the benchmarks)."""

    def __init__(self):
        super().__init__()
        self.processed = 0

    def step(self) -> None:
        self.processed += 1
        super().step()


class Simulation:
    """The SimPy environment plus the run's single random generator and recorder."""

    def __init__(self, seed: int = 0, record: bool = True):
        self.env = _CountingEnvironment()
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.recorder = Recorder(enabled=record)

    @property
    def now(self) -> float:
        return self.env.now

    def process(self, generator):
        return self.env.process(generator)

    def timeout(self, delay_s: float):
        return self.env.timeout(delay_s)

    def run(self, until=None):
        return self.env.run(until=until)

    def interval(self, lane: str, name: str, start_s: float) -> None:
        """Record that `name` ran on `lane` from start_s until now."""
        self.recorder.interval(lane, name, start_s, self.env.now)

    @property
    def events_processed(self) -> int:
        return self.env.processed
