"""One collective call predicted by any collective model (collectives/interface.py): the Prediction record."""

from __future__ import annotations

from dataclasses import dataclass, field

from simcluster.collectives.interface import CollectiveModel
from simcluster.collectives.schedule import bus_factor, canonical_op


@dataclass(frozen=True)
class Prediction:
    op: str
    size_bytes: int
    nranks: int
    time_s: float
    protocol: str

    @property
    def algbw_Bps(self) -> float:
        return self.size_bytes / self.time_s if self.time_s > 0 else 0.0

    @property
    def busbw_Bps(self) -> float:
        return self.algbw_Bps * bus_factor(self.op, self.nranks)


@dataclass(frozen=True)
class FabricPrediction(Prediction):
    """A Prediction of a multi-node (or NVLS) algorithm: which algorithm ran and where the time went, with the limit
    that binds it (`breakdown['binding_limit']`, collectives/fabric.py)."""

    algorithm: str = ""
    breakdown: dict = field(default_factory=dict)


def predict(model: CollectiveModel, op: str, size_bytes: int, nranks: int, protocol: str | None = None,
            host_launch: bool = False) -> Prediction:
    """Predicted time of one collective call; the model's (or NCCL's) protocol unless one is forced;
    `host_launch`: launched from the host (the model's host launch floor), not a CUDA graph."""
    op = canonical_op(op)
    time_s, proto = model.call_time(op, size_bytes, nranks, host_launch, protocol)
    return Prediction(op, int(size_bytes), nranks, time_s, proto)
