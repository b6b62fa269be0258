"""The simulation kernel: events counted without a per-event hook, `run(until=...)`, the random generator, and the
host's cores as a processor-sharing resource (SharedCores) against hand-computed ends and the network solver."""

from __future__ import annotations

import numpy as np
import pytest

from simcluster.engine import Simulation
from simcluster.hardware.cpu import HostCpu, SharedCores
from simcluster.network.sharing import max_min_rates


def test_events_are_counted_and_until_stops_the_run():
    sim = Simulation()

    def ticks(n):
        for _ in range(n):
            yield sim.timeout(1.0)

    done = sim.process(ticks(5))
    sim.run(until=2.5)
    # the event that stops a run is counted when a later run takes it up again (SimPy re-schedules it)
    assert sim.now == 2.5 and sim.events_processed == 3          # the process's start, two ticks
    sim.run(until=done)
    assert sim.now == 5.0 and sim.events_processed == 7          # the until timeout, three more ticks
    assert sim.run(until=done) is None and sim.events_processed == 7
    with pytest.raises(ValueError):
        sim.run(until=1.0)
    never = sim.env.event()
    with pytest.raises(RuntimeError):
        sim.run(until=never)


def test_random_generator_is_seeded_and_made_once():
    a, b = Simulation(seed=7), Simulation(seed=7)
    assert a.rng is a.rng and a.rng.random() == b.rng.random()


def test_host_cpu_grants_are_the_network_solvers_max_min():
    rng = np.random.default_rng(1)
    for _ in range(500):
        n, cores = int(rng.integers(1, 8)), float(rng.uniform(0.5, 10))
        wants = list(rng.uniform(0, 5, n))
        ref = np.minimum(max_min_rates(np.arange(n), np.zeros(n, dtype=np.int64), np.array([cores]), n,
                                       caps=np.array(wants)), wants)
        assert HostCpu(cores).grants(wants) == pytest.approx(list(ref), rel=1e-12, abs=1e-12)


def test_shared_cores_reshare_when_jobs_start_and_end():
    """2 cores. Job a wants 2 cores for 1 s (2 core-s); b arrives at 0.5 s wanting 1 core for 1 s. a does 1 core-s
    alone, then each gets 1 core: a needs 1 s more, b 1 s: both end at 1.5 s. c (0.5 core for 0.4 s) alone ends
    exactly 0.4 s after it starts."""
    sim = Simulation()
    cores = SharedCores(sim, 2.0)
    ends = {}

    def job(name, at, full_rate_s, cap):
        yield sim.timeout(at)
        yield cores.run("cpu", name, full_rate_s, cap)
        ends[name] = sim.now

    sim.process(job("a", 0.0, 1.0, 2.0))
    sim.process(job("b", 0.5, 1.0, 1.0))
    sim.process(job("c", 3.0, 0.4, 0.5))
    sim.run()
    assert ends["a"] == pytest.approx(1.5) and ends["b"] == pytest.approx(1.5) and ends["c"] == 3.0 + 0.4
    assert cores.busy_core_s == pytest.approx(2.0 + 1.0 + 0.2)
    names = [(i.name, i.start_s, i.end_s) for i in sim.recorder.intervals]
    assert ("a (2.00 cores)", 0.0, 0.5) in names and ("b (1.00 cores)", 0.5, pytest.approx(1.5)) in names


def test_shared_cores_starved_job_stretches():
    """1 core, three jobs each wanting 1 core for 1 s, all at once: each gets 1/3 and all end at 3 s."""
    sim = Simulation()
    cores = SharedCores(sim, 1.0)
    done = [cores.run("cpu", str(k), 1.0, 1.0) for k in range(3)]
    sim.run(until=sim.env.all_of(done))
    assert sim.now == pytest.approx(3.0)


def test_event_constructors_are_bound_once():
    """SimPy binds timeout/event/process/all_of/any_of on the instance for its own class only; the counting
    subclass binds them too, so env.timeout(...) is not a new bound method per call."""
    env = Simulation().env
    assert all(name in vars(env) for name in ("timeout", "event", "process", "all_of", "any_of"))
    assert env.timeout is env.timeout
