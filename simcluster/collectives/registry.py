"""The collective models a card can name (`params.model`) and the one reader of a card's params into one of them.

Kept apart from collectives/interface.py (the protocol every model follows) so that the models import the interface and
this registry imports the models: no circle."""

from __future__ import annotations

from simcluster.collectives.chunked_ring import ChunkedRingParams
from simcluster.collectives.interface import CollectiveModel
from simcluster.collectives.primitives import PrimitiveParams
from simcluster.collectives.profile import Profiled, op_profiles
from simcluster.errors import ModelCardError

MODELS: dict[str, type] = {m.model_name: m for m in (ChunkedRingParams, PrimitiveParams)}


def from_params_yaml(params: dict, where: str) -> CollectiveModel:
    """The model a card's `params` describe (read through its declaration, collectives/card_params.COLLECTIVE; `where`: the card's
    file), wrapped in its per-op profiles if it has any."""
    if not isinstance(params, dict):
        raise ModelCardError("params: expected a mapping", where=where)
    name = params.get("model", "chunked-ring")
    if name not in MODELS:
        raise ModelCardError(f"params.model: unknown collective model {str(name)[:40]!r}", where=where,
                             hint=f"one of {', '.join(MODELS)}")
    base = MODELS[name].from_params_yaml({k: v for k, v in params.items() if k != "op_profiles"}, where)
    if "op_profiles" in params:
        return Profiled(base, op_profiles(params["op_profiles"], where))
    return base
