"""Simulation: one SimPy environment, one seeded numpy Generator, one recorder of intervals (the timeline).

Everything that happens in a run hangs off a Simulation, so a run is reproducible from
(scenario, seed) alone: no module-level state, no other source of randomness.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import simpy
from simpy.core import BoundClass, EmptySchedule, StopSimulation

from simcluster.errors import SimclusterError


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
    """The intervals of a run, in the order they were recorded; perfetto.py turns them into a trace."""

    enabled: bool = True
    intervals: list[Interval] = field(default_factory=list)

    def interval(self, lane: str, name: str, start_s: float, end_s: float, process: str = "") -> None:
        if self.enabled and end_s > start_s:
            self.intervals.append(Interval(lane, name, start_s, end_s, process))


MAX_EVENTS = 100_000_000     # events one run may process (simcluster --max-events); several minutes at ~0.5 M events/s


class EventLimitError(SimclusterError):
    """A run that passed MAX_EVENTS events: refused instead of running on for hours."""


def expect_events(events: float, what: str, fewer: str = "fewer steps, micro-batches or ranks") -> None:
    """Refuse a run before it starts when its estimated event count is past MAX_EVENTS: one line naming the estimate,
    what it counts, the limit and the flag that raises it (the kernel's own count stops a run that gets there anyway);
    `fewer`: what in the input makes the run smaller."""
    if not events <= MAX_EVENTS:    # (NaN too)
        raise EventLimitError(f"{what}: about {events:,.0f} events to simulate, past the limit of {MAX_EVENTS:,} "
                              "(--max-events)", hint=f"{fewer}; or raise the limit with 'simcluster --max-events N "
                              "...' if the run is meant")


class _CountingEnvironment(simpy.Environment):
    """A SimPy environment that counts the events it processes (for events/s in the benchmarks).

    The count is kept in `run`'s own loop (a local integer per event), not in an overridden `step`, which
    would add a Python call per event (~15%). `until` is an event (its callbacks stop the run, as in SimPy)
    or a time (a timeout at that time: events already scheduled for that same instant also run)."""

    def __init__(self):
        super().__init__()
        self.processed = 0
        # SimPy binds its event constructors (timeout, event, process, all_of, any_of) to the instance only for
        # the class's own attributes; a subclass would make a bound method on every env.timeout(...) (~20%).
        for name, attr in vars(simpy.Environment).items():
            if isinstance(attr, BoundClass):
                setattr(self, name, getattr(self, name))

    def run(self, until=None):
        if until is not None:
            if not isinstance(until, simpy.Event):
                if float(until) <= self.now:
                    raise ValueError(f"until ({until}) must be later than the current simulation time ({self.now})")
                until = self.timeout(float(until) - self.now)
            elif until.callbacks is None:   # already processed
                return until.value
            until.callbacks.append(StopSimulation.callback)
        step, n, room = self.step, 0, MAX_EVENTS - self.processed
        try:
            while True:
                step()
                n += 1
                if not n & 0xFFFF and n > room:   # checked every 65,536 events: a bound, not a per-event cost
                    raise EventLimitError(f"the simulation passed {MAX_EVENTS:,} events without finishing",
                                          hint="the inputs ask for a very long run; raise the limit with "
                                               "'simcluster --max-events N ...' if it is meant")
        except StopSimulation as stop:
            return stop.args[0]
        except EmptySchedule:
            if until is not None and not until.triggered:
                raise RuntimeError(f"no scheduled events left but the run's end ({until}) was not reached") from None
            return None
        finally:
            self.processed += n


class Simulation:
    """The SimPy environment plus the run's single random generator and recorder."""

    def __init__(self, seed: int = 0, record: bool = True):
        self.env = _CountingEnvironment()
        self.seed = seed
        self._rng: np.random.Generator | None = None
        self.recorder = Recorder(enabled=record)

    @property
    def rng(self) -> np.random.Generator:
        """The run's one random generator, made on first use (a run that draws nothing does not pay for it)."""
        if self._rng is None:
            self._rng = np.random.default_rng(self.seed)
        return self._rng

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
