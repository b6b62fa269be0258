"""Parser for torch.profiler Chrome traces (`prof.export_chrome_trace`) of training steps.

The runner (`simcluster.runner.ddp_step --profile N`) marks each step with a user annotation
`simcluster_step`. For every step window this reads the GPU kernels that ran inside it and
reports, in seconds: the wall time, the union of compute-kernel intervals (GPU busy computing),
the union of NCCL kernel intervals (communication), their overlap, and on the host the number of
kernel launches and the CPU time spent in the launch calls. GPU idle = wall - busy: a step whose
GPU is idle most of the time is bound by the host (Python and launch overhead), not the GPU.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simcluster.errors import TraceFormatError
from simcluster.traces.common import loads_json, read_text, sha256_of

STEP_MARK = "simcluster_step"
LAUNCH_CALLS = ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernelEx")


@dataclass(frozen=True)
class StepProfile:
    wall_s: float
    compute_busy_s: float
    comm_busy_s: float
    overlap_s: float
    kernels: int
    comm_kernels: int
    launches: int
    launch_cpu_s: float

    @property
    def gpu_idle_s(self) -> float:
        return max(0.0, self.wall_s - (self.compute_busy_s + self.comm_busy_s - self.overlap_s))


@dataclass
class ProfileTrace:
    path: str
    steps: list[StepProfile]
    sha256: str = ""
    tool: str = "torch-profiler"

    def median(self, field: str) -> float:
        return float(np.median([getattr(s, field) for s in self.steps]))


def union(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[list[float]] = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def length(intervals) -> float:
    return sum(b - a for a, b in intervals)


def intersection(x, y) -> float:
    i = j = 0
    total = 0.0
    while i < len(x) and j < len(y):
        lo, hi = max(x[i][0], y[j][0]), min(x[i][1], y[j][1])
        total += max(0.0, hi - lo)
        if x[i][1] < y[j][1]:
            i += 1
        else:
            j += 1
    return total


def complete_events(path: str | Path) -> list[dict]:
    """A Chrome trace's complete ('X') events with ts and dur: the object form's traceEvents or the array form's list,
    plain or gzipped (the runner's --trace files); TraceFormatError naming the file for anything else."""
    where = str(path)
    if not Path(path).is_file():
        raise TraceFormatError("no such trace file", where=where)
    try:
        if str(path).endswith(".gz"):
            try:
                text = gzip.decompress(Path(path).read_bytes()).decode("utf-8", errors="replace")
            except (OSError, EOFError) as exc:
                raise TraceFormatError(f"not a gzipped file ({exc})", where=where) from None
        else:
            text = read_text(path)
        doc = loads_json(text)
    except json.JSONDecodeError as exc:
        raise TraceFormatError(f"line {exc.lineno}: not a complete Chrome trace JSON ({exc.msg})", where=where) from None
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        raise TraceFormatError("no 'traceEvents' list: not a torch.profiler Chrome trace", where=where)
    return [e for e in events if isinstance(e, dict) and e.get("ph") == "X" and "ts" in e and "dur" in e]


def parse(path: str | Path) -> ProfileTrace:
    where = str(path)
    events = complete_events(path)
    marks = sorted((float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in events
                   if e.get("name") == STEP_MARK and e.get("cat") == "user_annotation")
    if not marks:
        raise TraceFormatError(f"no '{STEP_MARK}' annotations: profile the steps with the runner's --profile", where=where)
    kernels = [(float(e["ts"]), float(e["ts"]) + float(e["dur"]), "nccl" in str(e.get("name", "")).lower())
               for e in events if e.get("cat") == "kernel"]
    launches = [(float(e["ts"]), float(e["dur"])) for e in events
                if e.get("cat") == "cuda_runtime" and e.get("name") in LAUNCH_CALLS]
    steps = []
    for lo, hi in marks:
        inside = [(a, min(b, hi)) for a, b, _ in kernels if lo <= a < hi]
        comm = union([(a, min(b, hi)) for a, b, c in kernels if c and lo <= a < hi])
        compute = union([(a, min(b, hi)) for a, b, c in kernels if not c and lo <= a < hi])
        calls = [d for t, d in launches if lo <= t < hi]
        n_comm = sum(1 for a, _, c in kernels if c and lo <= a < hi)
        steps.append(StepProfile((hi - lo) * 1e-6, length(compute) * 1e-6, length(comm) * 1e-6,
                                 intersection(compute, comm) * 1e-6, len(inside), n_comm, len(calls), sum(calls) * 1e-6))
    return ProfileTrace(where, steps, sha256_of(path))
