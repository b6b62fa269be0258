"""The `reliability:` block of an llm_training job: how often the job is interrupted, what a restart costs, where
checkpoints go and how often (the model is llm/goodput.py, docs/models/goodput.md).

    - kind: llm_training
      ...
      train_tokens: 15T                     # optional: tokens to train (days_to_train needs it)
      reliability:
        failure_rate: 1.97e-5/GPU-hour      # r, per GPU-hour (or /GPU-day); or {published: FILE, run: 0}
        restart: 10min                      # R: from an interruption to training again (scheduling, loading)
        checkpoint:
          storage: {nvme: CARD, drives: 4, replica: 1TB/s}   # local NVMe drives per node (the card's write_bandwidth),
                                            # durable once copied on to a shared file system at `replica` (required:
                                            # a node's drives are lost with it); or {filesystem: 7TB/s}: written
                                            # straight to a shared file system at its aggregate rate
          interval: auto                    # auto (Young/Daly; raised to one step and to the time until durable,
                                            # said in the output) or a time ("30min"), rounded to whole steps
                                            # (refused below one step or below the time until durable)
          async_copy: 50GB/s                # optional: asynchronous; only the GPU -> host copy at this rate blocks

Every mistake is the scenario reader's one-line error at the key (file:line).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from simcluster.errors import SimclusterError

_PER = {"GPU-hour": 3600.0, "GPU-h": 3600.0, "GPU-day": 86400.0, "GPU-d": 86400.0}


@dataclass(frozen=True)
class CheckpointStorage:
    """Where checkpoints are written: local drives (a rate per node) then a copy on to a shared file system, or the
    shared file system directly (one aggregate rate). A checkpoint is durable once it is on the shared file system."""

    node_write_Bps: float | None      # drives x one drive's write bandwidth (every node writes its share at once); None: none
    filesystem_write_Bps: float       # the shared file system's aggregate rate for this job (direct, or the replica copy)
    describe: str

    def local_write_s(self, checkpoint_bytes: float, nodes: int) -> float:
        return checkpoint_bytes / nodes / self.node_write_Bps if self.node_write_Bps is not None else 0.0

    def durable_s(self, checkpoint_bytes: float, nodes: int) -> float:
        """From the start of the write (after any copy to host memory) until the checkpoint is on shared storage."""
        return self.local_write_s(checkpoint_bytes, nodes) + checkpoint_bytes / self.filesystem_write_Bps


@dataclass(frozen=True)
class Reliability:
    failure_rate_per_gpu_s: float     # r: interruptions per GPU-second
    rate_source: str                  # where r comes from (the scenario, or a published file and run)
    restart_s: float                  # R
    storage: CheckpointStorage
    interval_s: float | None          # None: Young/Daly's optimum
    async_copy_Bps: float | None      # per GPU, device -> host; None: a synchronous checkpoint
    where: str = ""                   # file:line of the block (a refusal found once the step time is known names it)
    key: str = "reliability"          # its dotted key (variants.LABEL... where a what-if variant overrides it)
    variant: str = ""                 # the what-if variant read


def parse_failure_rate(text) -> float:
    """'1.97e-5/GPU-hour' -> interruptions per GPU-second."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)\s*/\s*(GPU-hour|GPU-h|GPU-day|GPU-d)\s*", str(text)) \
        if isinstance(text, str) and len(text) < 80 else None
    if not m or not 0 < float(m.group(1)) < 1e6:
        raise ValueError(f"{str(text)[:40]!r} is not a failure rate per GPU (write e.g. 2e-5/GPU-hour or 5e-4/GPU-day)")
    return float(m.group(1)) / _PER[m.group(2)]


def read_reliability(r, declared, doc: dict, key: str) -> Reliability:
    """The block at `key`, read through its declaration (job_documents.Reliability: `declared`, with `doc` as written)
    by the scenario reader `r` (ScenarioReader): the published rate and the drive card resolved, the model built."""
    rate, source = _rate(r, declared.failure_rate, f"{key}.failure_rate")
    c = declared.checkpoint
    storage = _storage(r, c.storage, doc["checkpoint"]["storage"], f"{key}.checkpoint.storage")
    where, dotted = r.locate(key)
    return Reliability(rate, source, declared.restart, storage, c.interval, c.async_copy, where, dotted, r.variant)


def _rate(r, value, key: str) -> tuple[float, str]:
    """(interruptions per GPU-second, where from): the scenario's rate (parsed by the declaration), or a published run's."""
    if isinstance(value, float):
        return value, "scenario"
    from simcluster.interruptions import published_rate

    path = r.existing({"published": value.published}, key, "published", "a calibration/published/reliability-*.yaml file")
    try:
        return published_rate(path, value.run)
    except SimclusterError as exc:
        r.fail(key, exc.message, hint=exc.hint)


def _storage(r, declared, doc: dict, key: str) -> CheckpointStorage:
    if hasattr(declared, "filesystem"):
        return CheckpointStorage(None, declared.filesystem, f"shared file system at {doc['filesystem']}")
    replica, drives = declared.replica, declared.drives
    card = r.card(doc, key, "nvme")
    from simcluster.storage.nvme import load_nvme

    try:
        params, c = load_nvme(card)
    except SimclusterError as exc:
        r.fail(f"{key}.nvme", exc.message, hint=exc.hint)
    if params.write_bandwidth_Bps is None:
        r.fail(f"{key}.nvme", f"the card {c.get('name')} states no write_bandwidth (params.write_bandwidth)",
               hint="give the drive's sequential write rate in its card, with its source")
    return CheckpointStorage(drives * params.write_bandwidth_Bps, replica,
                             f"{drives} x {c.get('name')} per node, copied on to a shared file system at {doc['replica']}")
