"""Flows over a Platform inside a SimPy simulation, sharing links max-min fairly.

`FlowNetwork.transfer(src, dst, nbytes, rate_cap_Bps)` returns a SimPy event that fires when
the last byte has arrived: after the path latency (propagation, switch, store-and-forward
packet delay) plus the transfer under the fair share. Rates are recomputed only when a flow
starts or ends (SimGrid's idea); between those moments every flow progresses linearly.
"""

from __future__ import annotations

import numpy as np

from simcluster.engine import Simulation
from simcluster.network.platform import Platform
from simcluster.network.sharing import max_min_rates

_EPS_BYTES = 1e-6


class FlowNetwork:
    def __init__(self, sim: Simulation, platform: Platform, packet_bytes: float = 4096.0):
        self.sim, self.platform, self.packet_bytes = sim, platform, packet_bytes
        self.capacity = platform.capacity
        self._flows: dict[int, dict] = {}
        self._next_id = 0
        self._last_update = 0.0
        self._wakeup = None
        self.flows_completed = 0

    def transfer(self, src: str, dst: str, nbytes: float, rate_cap_Bps: float = np.inf):
        done = self.sim.env.event()
        path, latency = self.platform.path(src, dst, min(self.packet_bytes, nbytes))
        self.sim.process(self._start_after(latency, path, float(nbytes), rate_cap_Bps, done))
        return done

    def _start_after(self, latency_s, path, nbytes, cap, done):
        if latency_s > 0:
            yield self.sim.timeout(latency_s)
        if nbytes <= 0 or (not path and not np.isfinite(cap)):
            done.succeed()
            return
        self._advance()
        self._flows[self._next_id] = {"path": path, "left": nbytes, "cap": cap, "done": done, "rate": 0.0}
        self._next_id += 1
        self._reshare()

    def _advance(self) -> None:
        """Move every flow forward to now at its current rate."""
        now = self.sim.now
        elapsed = now - self._last_update
        if elapsed > 0:
            for flow in self._flows.values():
                flow["left"] -= flow["rate"] * elapsed
        self._last_update = now

    def _reshare(self) -> None:
        ids = list(self._flows)
        if not ids:
            return
        flow_idx = np.concatenate([np.full(len(self._flows[i]["path"]), k) for k, i in enumerate(ids)]).astype(np.int64)
        link_idx = np.concatenate([np.asarray(self._flows[i]["path"], dtype=np.int64) for i in ids])
        caps = np.array([self._flows[i]["cap"] for i in ids])
        rates = max_min_rates(flow_idx, link_idx, self.capacity, len(ids), caps)
        soonest = np.inf
        for k, i in enumerate(ids):
            flow = self._flows[i]
            flow["rate"] = rates[k]
            soonest = min(soonest, flow["left"] / rates[k] if rates[k] > 0 else np.inf)
        token = object()
        self._wakeup = token
        self.sim.process(self._wake(max(soonest, 0.0), token))

    def _wake(self, delay_s, token):
        yield self.sim.timeout(delay_s)
        if token is not self._wakeup:
            return  # superseded by a later reshare
        self._advance()
        # done when what is left would take under a nanosecond (absorbs float round-off)
        finished = [i for i, f in self._flows.items() if f["left"] <= max(_EPS_BYTES, 1e-9 * f["rate"])]
        for i in finished:
            self._flows.pop(i)["done"].succeed()
            self.flows_completed += 1
        self._reshare()
