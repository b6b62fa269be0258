"""NVMe SSD model: a submission queue, internal parallelism, a fitted service-time distribution and
a bandwidth ceiling (PCIe link / controller).

An I/O of s bytes submitted at time t:
  1. waits for one of P internal units (channels x dies working in parallel; FIFO queue),
  2. occupies it for  t0 * X + s / B_unit,  X ~ lognormal(mu = -sigma^2 / 2, sigma)  (mean 1),
  3. then crosses the link, shared by all I/Os in FIFO order at B (s / B each).
Small random reads are bounded by P / t0 (IOPS ceiling), large reads by B (bandwidth ceiling).
Queue depth seen by an I/O = I/Os outstanding on the device when it is submitted (0 = idle device).
Parameters come from a card (models/nvme/): published specifications plus a service-time shape
fitted from fio (simcluster.fit.nvme). See docs/models/storage.md.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

import numpy as np
import simpy

from simcluster import card_document as cd
from simcluster import card_params as cp


@dataclass(frozen=True)
class NvmeParams:
    service_time_s: float     # t0: mean media time of a 4 KiB random read
    sigma: float              # lognormal shape of the service time
    parallelism: int          # P: I/Os the media serves at once
    bandwidth_Bps: float      # B: link/controller ceiling
    unit_bandwidth_Bps: float  # B_unit: one I/O's media transfer rate
    write_bandwidth_Bps: float | None = None  # sequential write ceiling (checkpoints, llm/goodput.py); None: not stated

    @property
    def iops_ceiling(self) -> float:
        return self.parallelism / (self.service_time_s + 4096 / self.unit_bandwidth_Bps)


@dataclass
class IoLog:
    """What the device saw: per I/O submission time, queue depth at submission, completion, bytes."""

    submit_s: list[float] = field(default_factory=list)
    qd: list[int] = field(default_factory=list)
    done_s: list[float] = field(default_factory=list)
    nbytes: list[int] = field(default_factory=list)

    def throughput(self, bin_s: float, end_s: float) -> tuple[np.ndarray, np.ndarray]:
        """(bin start times, bytes/s completed in each bin); at most MAX_BINS bins (wider ones over a long run)."""
        bin_s = max(bin_s, end_s / MAX_BINS)
        bins = np.arange(0.0, end_s + bin_s, bin_s)
        hist, _ = np.histogram(self.done_s, bins=bins, weights=self.nbytes)
        return bins[:-1], hist / bin_s

    def latency_percentiles(self, pcts=(50, 90, 99, 99.9)) -> dict[float, float]:
        lat = np.asarray(self.done_s) - np.asarray(self.submit_s)
        return {p: float(np.percentile(lat, p)) for p in pcts} if len(lat) else {}


MAX_BINS = 100_000


class NvmeDevice:
    """One drive inside a SimPy environment. The two FIFO queues are computed when an I/O is submitted (submissions come
    in time order): the unit is the earliest-free of P (start = max(now, its free time)); the link is taken in submission
    order (an I/O whose unit work ends early waits behind an earlier one still on its unit: at most one service-time
    jitter, t0 x X, against a transfer of s / B). One SimPy timeout per I/O instead of a process with two resources
    (about 6x fewer events; seed 001's figures are unchanged within their tolerances)."""

    def __init__(self, env: simpy.Environment, params: NvmeParams, rng: np.random.Generator, log: IoLog | None = None):
        self.env, self.p, self.rng = env, params, rng
        self.units = [0.0] * params.parallelism      # a heap of the units' free times
        self.link_free = 0.0
        self.pending: list[float] = []                # a heap of completion times of I/Os in flight
        self.unit_busy_s = 0.0                        # unit-seconds of service (IOPS use: / (P x time))
        self.link_busy_s = 0.0                        # link-seconds (bandwidth use: / time)
        self.log = log if log is not None else IoLog()
        self._mu = -params.sigma**2 / 2

    @property
    def outstanding(self) -> int:
        now, pending = self.env.now, self.pending
        while pending and pending[0] <= now:
            heapq.heappop(pending)
        return len(pending)

    def _service(self, nbytes: int) -> float:
        x = math.exp(self._mu + self.p.sigma * self.rng.standard_normal()) if self.p.sigma > 0 else 1.0
        return self.p.service_time_s * x + nbytes / self.p.unit_bandwidth_Bps

    def read(self, nbytes: int) -> simpy.Event:
        """One read I/O of nbytes: the event of its completion."""
        now = self.env.now
        qd = self.outstanding
        service = self._service(nbytes)
        unit_end = max(now, heapq.heappop(self.units)) + service
        heapq.heappush(self.units, unit_end)
        transfer = nbytes / self.p.bandwidth_Bps
        done = max(unit_end, self.link_free) + transfer
        self.link_free = done
        self.unit_busy_s += service
        self.link_busy_s += transfer
        heapq.heappush(self.pending, done)
        log = self.log
        log.submit_s.append(now)
        log.qd.append(qd)
        log.done_s.append(done)
        log.nbytes.append(nbytes)
        return self.env.timeout(done - now)


def load_nvme(path) -> tuple[NvmeParams, dict]:
    """An NVMe drive's card (kind: nvme) -> NvmeParams."""
    card = cd.load_card(path, kind="nvme")
    p = cd.declared_params(card, str(path), cp.NVME)
    return NvmeParams(p.service_time, float(p.sigma), p.parallelism, p.bandwidth,
                      p.bandwidth if p.unit_bandwidth is None else p.unit_bandwidth, p.write_bandwidth), card
