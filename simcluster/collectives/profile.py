"""Measured per-op profile: how each collective's time departs from the NCCL-primitives model on one kind of machine.

The primitives model (collectives/primitives.py) is fitted on all_reduce alone; what it cannot know is how NCCL's
other kernels differ from all_reduce's on given GPUs (p2p fixed latency, reduce_scatter's 2-rank bandwidth, the
ramp with size). A profile is that difference, measured once on a reference machine that ran every op:

    f_op(S) = measured_op(S) / model_op(S)         on the reference, its own all_reduce-fitted card
    T_op(S) = model_op(S) x f_op(S)                 on another machine of the same kind, its own all_reduce card

log f is interpolated linearly in log2(S) between the measured sizes and held at the end values outside them.
A profile holds for one rank count and one launch mode (CUDA graph or host-launched); it is not applied to any
other (measured: a 2-rank profile does not improve 4-rank predictions). See docs/models/collectives.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class OpProfile:
    ranks: int
    cuda_graph: bool                           # measured as CUDA graphs (GPU time) or host-launched
    ops: dict                                  # op -> (sizes_B, log factors), both tuples in increasing size
    source: str = ""                           # where it was measured (bundle or logs)

    @property
    def launch(self) -> str:
        return "cuda_graph" if self.cuda_graph else "host"

    def factor(self, op: str, size: float) -> float:
        if op not in self.ops or size <= 0:
            return 1.0
        sizes, logs = self.ops[op]
        return math.exp(float(np.interp(math.log2(size), np.log2(sizes), logs)))


def matching(profiles: tuple[OpProfile, ...], ranks: int, host_launch: bool) -> OpProfile | None:
    """The profile measured at this rank count and launch mode, if the card has one."""
    return next((p for p in profiles if p.ranks == ranks and p.cuda_graph != host_launch), None)
