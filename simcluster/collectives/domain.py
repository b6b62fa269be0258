"""A collective inside one NVLink domain: one node, or several nodes on one NVLink fabric (multi-node NVLink, MNNVL:
GB200 NVL72's 72 GPUs behind its NVLink switch trays). NCCL (2.20+, NCCL_MNNVL_ENABLE with IMEX / cuMem fabric
handles) fuses the topology of every GPU of an MNNVL clique into one "node" (src/graph/topo.c, ncclTopoGetSystem),
so its search and tuner see one node of that many GPUs; collectives/nccl_search.py and nccl_tuner.py do the same.

Without an NVLS card a call is the NVLink card's (collectives/model.predict: NCCL's ring / chain as the card prices
them). With one, an all_reduce runs NVLS where NCCL's decision model picks it for this domain (elsewhere the card):

    T = l_NVLS + S / algbw_NVLS(n) + F_NVLS(S)

algbw_NVLS and the pipeline fill F_NVLS as collectives/nvls_domain.py prices them: up to 8 GPUs the card's rate and no
fill (as before session 44); above 8 the card's rate carried by its heads law, the fill, and on Blackwell the fitted
per-channel ceiling (C the NVLS channels the domain's NCCL version runs). Below the card's smallest GPU count a call
runs as the NVLink card.
docs/models/collectives.md, "Multi-node NVLink"; docs/models/fabric.md, "NVLS inside one NVLink domain".
"""

from __future__ import annotations

from dataclasses import dataclass

from simcluster.collectives.interface import CollectiveModel
from simcluster.collectives.model import FabricPrediction, Prediction, predict
from simcluster.collectives.nccl_search import NcclTopology
from simcluster.collectives.nccl_tuner import decide
from simcluster.collectives.nccl_versions import MODEL_RELEASE, NcclRelease
from simcluster.collectives.nvls_domain import carried_algbw, domain_fill_s, domain_nvls_rate, nvls_channels, nvls_heads
from simcluster.collectives.schedule import canonical_op
from simcluster.errors import SimclusterError


def domain_predict(intra: CollectiveModel, op: str, size_bytes: int, ranks: int, arch: str,
                   nvls: tuple[dict[int, float], float] | None = None,
                   nccl: NcclRelease = MODEL_RELEASE) -> Prediction:
    """One call on `ranks` GPUs of one NVLink domain; `nvls`: (all_reduce algbw by GPU count, latency s) of the
    domain's NVLink SHARP card; `nccl` the NCCL it runs (nccl_versions.NcclRelease): its stated release (None: the
    model's) sets the NVLS channels, its resolved `tuner` the tables NCCL's choice is priced with."""
    op = canonical_op(op)
    channels = nvls_channels(arch, nccl.stated, one_clique=True)
    rate = domain_nvls_rate(nvls[0], ranks, channels, arch) if nvls is not None and ranks >= 2 else None
    if rate is None or op != "all_reduce":
        return predict(intra, op, size_bytes, ranks)
    d = decide(NcclTopology(arch, ranks, 1, nvls=True, nccl=nccl.tuner), op, size_bytes)
    if d.algorithm != "NVLS":
        return predict(intra, op, size_bytes, ranks)
    (algbw, binds), heads = rate, nvls_heads(ranks)
    fill = domain_fill_s(size_bytes, ranks, channels, algbw)
    time = nvls[1] + size_bytes / algbw + fill
    return FabricPrediction(op, int(size_bytes), ranks, time, "Simple", "nvls",
                            {"nccl_algorithm": d.algorithm, "nccl_protocol": d.protocol, "nccl_channels": channels,
                             "nvls_heads": heads, "nvls_algbw_Bps": algbw, "pipeline_fill_s": fill, "binding_limit": binds})


def domain_algorithm(algorithm: str | None, nvls: bool) -> None:
    """A forced algorithm (NCCL_ALGO, --algorithm) resolved on one NVLink domain: None (the domain's own model). A Ring
    on a domain without an NVLS card is its NVLink card (a chunked ring model, docs/models/collectives.md); anything
    else is refused with one line: the multi-node algorithms (tree, nvls-tree, ...) do not run inside one domain, and a
    domain with an NVLS card has no model of NCCL with NVLS turned off. The one rule for predict collective
    --algorithm (predict_collective.py) and the published nccl validator (reference/nccl.py)."""
    if algorithm is None or (algorithm == "ring" and not nvls):
        return None
    if algorithm == "ring":
        raise SimclusterError("algorithm 'ring' forced on one NVLink domain with an NVLS card: a Ring there is not "
                              "modelled (the card's ring stands for it only where the domain has no NVLS card)")
    raise SimclusterError(f"algorithm {algorithm!r} forced on one NVLink domain: no multi-node algorithm runs there "
                          "(only a forced ring, as the domain's NVLink card)")


@dataclass(frozen=True)
class NvlinkDomain:
    """One NVLink domain of a machine, its cards read once (build.build_domain): every call inside it, as domain_predict."""

    intra: CollectiveModel
    ranks: int
    arch: str
    nvls: tuple[dict[int, float], float] | None
    nccl: NcclRelease = MODEL_RELEASE             # the NCCL the domain runs, resolved at machine build (Cluster's)

    def predict(self, op: str, size_bytes: int, algorithm: str | None = None, ranks: int | None = None) -> Prediction:
        domain_algorithm(algorithm, self.nvls is not None)        # None, or a one-line refusal
        return domain_predict(self.intra, op, size_bytes, ranks or self.ranks, self.arch, self.nvls, self.nccl)

    def nvls_unpriced(self, op: str, sizes: list[int], ranks: int | None = None) -> list[int]:
        """The sizes at which NCCL's decision model runs NVLS on `ranks` GPUs of this domain but the NVLS card has no
        rate there (fewer GPUs than its smallest count: nvls_domain.carried_algbw carries only upwards), so
        domain_predict prices the NVLink card instead (not what NCCL runs)."""
        ranks = ranks or self.ranks
        if self.nvls is None or canonical_op(op) != "all_reduce" or ranks < 2 or carried_algbw(self.nvls[0], ranks):
            return []
        topo = NcclTopology(self.arch, ranks, 1, nvls=True, nccl=self.nccl.tuner)
        return [s for s in sizes if decide(topo, "all_reduce", s).algorithm == "NVLS"]
