"""A DES Task (llm/simulate.Task) made from its parts and combined: the arithmetic of llm/work.py and llm/layer_work.py.
A Task's duration is the sum of its parts (simulate.PARTS, seconds); add and scale keep that, and leave the eager host's
issue figures (Task.issue_s, bound_s, kernels) at their defaults: work._host_bound sets them on the finished task."""

from __future__ import annotations

from simcluster.llm.simulate import PARTS, Task


def task(**parts: float) -> Task:
    """The Task of these parts (seconds; every other part 0)."""
    full = dict.fromkeys(PARTS, 0.0)
    full.update(parts)
    return Task(sum(full.values()), full)


def add(a: Task, b: Task) -> Task:
    """a then b: each part summed."""
    return Task(a.duration_s + b.duration_s, {k: a.parts[k] + b.parts[k] for k in a.parts})


def scale(a: Task, k: float) -> Task:
    """k times a: each part times k."""
    return Task(a.duration_s * k, {p: v * k for p, v in a.parts.items()})
