"""Simulation: one SimPy environment, one seeded numpy Generator, one recorder.

Everything that happens in a run hangs off a Simulation, so a run is reproducible from
(scenario, seed) alone: no module-level state, no other source of randomness.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import simpy


@dataclass
class Recorder:
    """Flat event records: (time_s, kind, fields). Cheap to append, easy to turn into tables."""

    enabled: bool = True
    records: list[tuple[float, str, dict]] = field(default_factory=list)

    def record(self, time_s: float, kind: str, **fields) -> None:
        if self.enabled:
            self.records.append((time_s, kind, fields))

    def of_kind(self, kind: str) -> list[tuple[float, dict]]:
        return [(t, f) for t, k, f in self.records if k == kind]


class Simulation:
    """The SimPy environment plus the run's single random generator and recorder."""

    def __init__(self, seed: int = 0, record: bool = True):
        self.env = simpy.Environment()
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

    def record(self, kind: str, **fields) -> None:
        self.recorder.record(self.env.now, kind, **fields)

    @property
    def events_processed(self) -> int:
        # SimPy numbers every scheduled event from an itertools.count; drawing one more id only
        # skips a number, the order of later events is unchanged.
        return next(self.env._eid)
