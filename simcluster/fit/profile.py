"""Learn a per-op profile (collectives/profile.py) from a reference machine that ran every collective.

Every op's rounds are reduced to their median per size; f_op(S) = measured / predicted by the reference's own
all_reduce-fitted NCCL-primitives card (without any profile). One profile per (rank count, launch mode) found.
"""

from __future__ import annotations

import math

from simcluster.collectives.interface import CollectiveModel
from simcluster.collectives.primitives import PrimitiveParams
from simcluster.collectives.profile import OpProfile, Profiled, unprofiled
from simcluster.errors import CalibrationError
from simcluster.traces.nccl_tests import CollectiveTrace, median_of_rounds


def learn(params: CollectiveModel, traces: list[CollectiveTrace], source: str = "") -> tuple[OpProfile, ...]:
    base = unprofiled(params)
    if base.model_name != PrimitiveParams.model_name:
        raise CalibrationError("a per-op profile is measured against an NCCL-primitives card",
                               hint="fit the reference's all_reduce with its NCCL tuning log (--nccl-log)")
    found: dict[tuple[int, bool], dict] = {}
    for (op, ranks, graph), trace in median_of_rounds(traces).items():
        rows = [r for r in trace.rows if r.size_bytes > 0 and r.time_s > 0]
        if len(rows) < 2:
            raise CalibrationError(f"{op}: {len(rows)} usable rows; a profile needs a size sweep", where=trace.path)
        sizes = tuple(float(r.size_bytes) for r in rows)
        logs = tuple(math.log(r.time_s / base.call_time(op, r.size_bytes, ranks, host_launch=not graph)[0])
                     for r in rows)
        found.setdefault((ranks, graph), {})[op] = (sizes, logs)
    return tuple(OpProfile(ranks, graph, ops, source) for (ranks, graph), ops in sorted(found.items()))


def with_profile(params: CollectiveModel, path: str) -> Profiled:
    """A card's model wrapped in the per-op profiles of an op-profile file (replacing any it had)."""
    from simcluster.cards import load_op_profiles

    base = unprofiled(params)
    if base.model_name != PrimitiveParams.model_name:
        raise CalibrationError("--op-profile applies to the NCCL-primitives model",
                               hint="pass the all_reduce run's NCCL tuning log with --nccl-log")
    return Profiled(base, load_op_profiles(path)[0])
