"""HostCpu: a host's cores as a shared resource.

Demands are in cores (core-seconds per second). When they fit, every consumer gets what it asks
for; when they do not, the cores are shared max-min fairly (the same solver as network links),
so an onloaded TCP transport and a data loader that both want more than the host has each get a
fair share and both slow down. Outputs: what each consumer gets and the host's utilisation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simcluster.network.sharing import max_min_rates


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
        """Cores granted to each consumer (never more than it asks for)."""
        names = sorted(demands)
        wants = np.array([max(0.0, demands[n]) for n in names], dtype=float)
        idx = np.arange(len(names))
        granted = max_min_rates(idx, np.zeros(len(names), dtype=np.int64), np.array([self.cores]), len(names), caps=wants)
        return {n: float(min(g, w)) for n, g, w in zip(names, granted, wants, strict=True)}

    def utilisation(self, demands: dict[str, float]) -> float:
        """Fraction of the host's cores busy under these demands."""
        return sum(self.share(demands).values()) / self.cores
