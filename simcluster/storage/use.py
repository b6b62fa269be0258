"""What limits a simulated DLIO run: each resource's busy share over the steady window (storage/loader.py's counters)
and the name of the one that binds (docs/models/storage.md, "What limits the answer")."""

from __future__ import annotations

from simcluster.storage import steady
from simcluster.storage.nvme import NvmeParams

SATURATED = 0.9      # a resource busy this share of the steady window limits the run
KEEPS_UP = 99.5      # AU (%) at or above which the accelerators never wait: storage keeps up, whatever its busy shares
ACCELERATORS = "accelerators (storage keeps up)"


def busy_shares(snapshots, release, est: steady.Estimate, drives: int, config, workers: int, nvme: NvmeParams) -> dict:
    """Busy share of each resource over the steady window [first_step, last_step)."""
    a, b = est.first_step, est.last_step
    before = snapshots[a - 1] if a > 0 else (0.0,) * 5
    d = [x - y for x, y in zip(snapshots[b - 1], before, strict=True)]
    span = release[b - 1] - (release[a - 1] if a > 0 else 0.0)
    use = {"drive": max(d[0] / drives, d[1] / (nvme.parallelism * drives)) / span, "loader threads": d[4] / (workers * span)}
    if config.network_Bps:
        use["network"] = d[2] / span
    if config.cores and config.thread_read_Bps:
        use["host CPU"] = d[3] / (max(1, int(config.cores)) * span)
    return use


def limit_of(use: dict, au_percent: float = 0.0) -> str:
    """What limits the run: the accelerators' own compute when AU >= KEEPS_UP (a drive 90% busy that still feeds every
    step on time binds nothing); else the busiest of drive, network and host CPU when it is saturated; else the loader threads
    when they are always busy (reads in flight per thread, or their intake rate); else nothing saturated: the batches a
    rank may have in flight (threads x prefetch factor) against the loads' latency and the per-step barrier."""
    if au_percent >= KEEPS_UP:
        return ACCELERATORS
    shared = {k: v for k, v in use.items() if k != "loader threads"}
    name, value = max(shared.items(), key=lambda kv: kv[1])
    if value >= SATURATED:
        return name
    return "loader threads" if use["loader threads"] >= SATURATED else "prefetch depth and barrier (no resource saturated)"
