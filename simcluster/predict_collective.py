"""`simcluster predict collective`: a sweep of one collective, from a card (one node) or a scenario's machine
(any number of nodes), with the header nccl-tests would print. Inputs are checked here, once."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from simcluster.collectives.model import Prediction
from simcluster.errors import SimclusterError
from simcluster.scenario_jobs import CollectiveSweep
from simcluster.trust.band import MachineTrust
from simcluster.units import parse_size_arg

MAX_NVLINK_RANKS = 1024        # GPUs of one NVLink domain a --card sweep takes (NVL72 racks are 72)
MAX_SIZE_BYTES = 2**50         # 1 PiB: far past any collective a job runs
RANK_LINES = 64                # '# Rank' lines printed before the rest are counted


@dataclass(frozen=True)
class CollectiveSweepResult:
    op: str
    ranks: int
    ranks_per_node: int
    source: str                       # the card or scenario the prediction came from
    device: str
    notes: list[str]
    predictions: list[Prediction]
    description: str = ""             # a scenario's machine: nodes, NICs, fabric, the algorithm chosen
    # what its trust reads of the machine (build.machine_trust): the link the bytes cross (one NVLink domain, nvlink-<gpu>,
    # or the NIC transport across nodes), its GPU model, why it is unvalidated whatever its regimes' bands
    machine_trust: MachineTrust = field(kw_only=True)   # no default (cold review B53 item 11)
    variant: str = ""                 # the scenario's what-if variant
    nccl_protocols: dict | None = None   # across nodes, NCCL's protocols as the NIC card restricts them (its source), else None

    def trust_lines(self) -> list[str]:
        """One line per regime the sizes fall in: its 80% band and validation status."""
        from simcluster.trust.band import sweep_trust_lines

        return sweep_trust_lines(self.predictions, self.machine_trust)

    def to_json(self) -> dict:
        from simcluster.trust.band import annotate_collective

        rows = []
        for p in self.predictions:
            row = {"size_bytes": p.size_bytes, "time_s": p.time_s, "algbw_Bps": p.algbw_Bps, "busbw_Bps": p.busbw_Bps,
                   "protocol": p.protocol, "algorithm": getattr(p, "algorithm", "") or "nvlink-card",
                   **({"breakdown": p.breakdown} if getattr(p, "breakdown", None) else {})}
            rows.append(annotate_collective(row, p, self.machine_trust))
        return {**({"variant": self.variant} if self.variant else {}), "op": self.op, "ranks": self.ranks,
                "ranks_per_node": self.ranks_per_node, "source": self.source, "link": self.machine_trust.link,
                "description": self.description, "notes": self.notes,
                **({"nccl_protocols": self.nccl_protocols} if self.nccl_protocols else {}), "rows": rows}

    def header_lines(self, version: str) -> list[str]:
        lines = [f"simcluster {version} prediction: {self.op}, {self.ranks} ranks, {self.source}"]
        lines += [self.description] if self.description else []
        lines += [f"note: {n}" for n in self.notes]
        lines += [f"Collective test starting: {self.op}_perf", "Using devices"]
        shown = min(self.ranks, RANK_LINES)
        lines += [f" Rank {r:2d} Group  0 Pid      0 on {'node' + str(r // self.ranks_per_node):>10s} device "
                  f"{r % self.ranks_per_node:2d} [0000:00:00] {self.device}" for r in range(shown)]
        if self.ranks > shown:
            lines.append(f" ... {self.ranks - shown} more ranks ({self.ranks // self.ranks_per_node} nodes in all)")
        return lines


def size_range(min_size: str, max_size: str, factor: int) -> list[int]:
    from simcluster.build import sizes
    from simcluster.units import parse_size_arg

    lo, hi = parse_size_arg(min_size), parse_size_arg(max_size)
    if factor < 2:
        raise SimclusterError(f"-f {factor}: the size factor must be >= 2")
    if hi > MAX_SIZE_BYTES:
        raise SimclusterError(f"-e {max_size}: at most {MAX_SIZE_BYTES} bytes (1 PiB)")
    if lo > hi:
        raise SimclusterError(f"-b {min_size} is larger than -e {max_size}: no size to predict")
    return sizes(lo, hi, factor)


def sweep_from_card(card_path: str, op: str, ranks: int, ranks_per_node: int | None, min_size: str, max_size: str,
                    factor: int, host_launched: bool) -> CollectiveSweepResult:
    from simcluster.cards import load_collective
    from simcluster.collectives.model import predict
    from simcluster.collectives.schedule import canonical_op
    from simcluster.fit.validate import card_notes, size_notes
    from simcluster.trust.regime import card_nvlink_link

    op = canonical_op(op)
    per_node = ranks_per_node or ranks
    if not 1 <= ranks <= MAX_NVLINK_RANKS:
        raise SimclusterError(f"--ranks {ranks}: a card predicts 1 to {MAX_NVLINK_RANKS} GPUs of one NVLink domain",
                              hint="across nodes use --scenario (NIC card and fabric)")
    if per_node < 1:
        raise SimclusterError(f"--ranks-per-node {per_node}: expected 1 or more")
    if per_node < ranks:
        raise SimclusterError(f"--ranks {ranks} over --ranks-per-node {per_node} spans several nodes; card {card_path} "
                              "models one node's NVLink domain", hint="multi-node collectives need --scenario (a machine "
                              "with nodes, a NIC card and a fabric), e.g. scenarios/oci-bm-gpu-h100-8x2.yaml")
    span = size_range(min_size, max_size, factor)
    params, card = load_collective(card_path)
    notes = card_notes(params, card, op, ranks, host_launch=host_launched) + size_notes(card, span)
    if ranks_per_node is None and ranks > 8:
        notes.append(f"{ranks} GPUs taken as one NVLink domain (an NVL rack); nodes of 8 GPUs joined by NICs need --scenario")
    preds = [predict(params, op, s, ranks, host_launch=host_launched) for s in span]
    device = (card.get("machine", {}).get("devices") or ["simulated GPU"])[0]
    trust = MachineTrust(card_nvlink_link(card, card_path))   # one NVLink domain: the card's GPU's regime, no machine
    return CollectiveSweepResult(op, ranks, per_node, f"card {card.get('name')} ({card_path})", device, notes, preds,
                                 machine_trust=trust)


def sweep_from_scenario(scenario_path: str, op: str, min_size: str, max_size: str, factor: int,
                        algorithm: str | None, variant: str | None = None) -> list[CollectiveSweepResult]:
    """One sweep per what-if variant of the scenario (or the one named `variant`)."""
    from simcluster import scenario as scenario_mod

    size_range(min_size, max_size, factor)
    variants = scenario_mod.load_variants(scenario_path)
    if variant is not None:
        labels = [label for label, _ in variants]
        if variant not in labels:
            raise SimclusterError(f"--variant {variant!r}: the scenario has no such variant", where=scenario_path,
                                  hint=f"its variants: {', '.join(labels)}" if any(labels) else "it has no variants")
        variants = [(label, sc) for label, sc in variants if label == variant]
    return [_sweep_machine(scenario_path, label, sc, op, min_size, max_size, factor, algorithm) for label, sc in variants]


def _sweep_machine(scenario_path: str, label: str, sc, op: str, min_size: str, max_size: str, factor: int,
                   algorithm: str | None) -> CollectiveSweepResult:
    from simcluster.build import sweep_result
    from simcluster.card_document import load_card
    from simcluster.collectives.domain import domain_algorithm
    from simcluster.collectives.schedule import canonical_op

    op = canonical_op(op)
    m = sc.machine
    if m.card is None:
        raise SimclusterError("the machine has no collective card (machine.card): nothing to predict a collective with",
                              where=scenario_path)
    notes = []
    if algorithm and m.domains == 1:        # the rule the published validator uses (collectives/domain.domain_algorithm)
        try:
            domain_algorithm(algorithm, m.nvls_card is not None)
        except SimclusterError as exc:
            raise SimclusterError(f"--algorithm {algorithm}: {exc.message}", where=scenario_path) from None
        notes.append(f"--algorithm {algorithm} on one NVLink domain without an NVLS card: the domain's NVLink card (its "
                     "chunked ring model)")
        algorithm = None
    ranks = m.nodes * m.gpus_per_node
    job = CollectiveSweep(op, ranks, parse_size_arg(min_size), parse_size_arg(max_size), factor, "analytic", algorithm)
    result = sweep_result(sc, job)
    device = (f"{Path(m.gpu_card).stem} (simulated)" if m.gpu_card else
              (load_card(m.card).get("machine", {}).get("devices") or ["simulated GPU"])[0])
    notes += (_nvls_unpriced(m, op, [p.size_bytes for p in result.predictions]) + _nvls_above_board(m, op) + _borrowed_card(m)
              + _across_large_domains(m) + _stated_tables(m))
    restricted = _nic_protocols(m)
    if restricted:
        notes.append(f"NCCL protocols across nodes: {' / '.join(restricted['protocols'])} only ({', '.join(restricted['excluded'])} "
                     f"excluded by {restricted['source']})")
    return CollectiveSweepResult(op, ranks, m.gpus_per_node, f"scenario {sc.name} ({scenario_path})", device, notes,
                                 result.predictions, result.description, label, restricted,
                                 machine_trust=result.machine_trust)   # the one build: `run` judges the same rows alike


def _stated_tables(m) -> list[str]:
    """A note where the machine opts in to its stated NCCL's tuner tables (machine.nccl_tables: stated with a
    machine.nccl): that choice is unvalidated, so the trust lines say unvalidated, no band (cold review B51 item 2); on
    the one held-out file it moves (Lambda B200 x 2, NCCL 2.26.2) it errs more than the default."""
    from simcluster.collectives.nccl_versions import NEWEST_READ
    from simcluster.machine_models import machine_nccl

    nccl = machine_nccl(m)
    release, used = nccl.tuner, nccl.opted_in        # the tables that priced it (final read 51 item 1)
    if not used:                            # not opted in (no tuner), or opted in to the default's tables
        return []
    stated = ".".join(map(str, release))
    newer = f", newer than the newest release read, {'.'.join(map(str, NEWEST_READ))}" if release[:2] > NEWEST_READ[:2] else ""
    return [f"NCCL's choice priced with {used}'s tuner tables (NCCL {stated} stated{newer}; machine.nccl_tables: stated, an "
            "opt-in): unvalidated, the error band below is not applied; on the one held-out file it moves (Lambda B200 x 2, "
            "NCCL 2.26.2) it errs more than the default, 2.28.3's tables (docs/models/fabric.md, NCCL's tables by release)"]


def _borrowed_card(m) -> list[str]:
    """Across nodes, a note where the NVLink card's GPU (the one its name names) is not the machine's GPU: the intra-node
    half of the answer comes from another GPU's board (as llm/caveats says for a derived GPU card)."""
    from simcluster.machine_models import machine_gpu, machine_nvlink_link
    from simcluster.trust.regime import gpu_model

    if m.domains <= 1:
        return []
    card_gpu, gpu = gpu_model(machine_nvlink_link(m)), machine_gpu(m)
    if not card_gpu or not gpu or card_gpu == gpu:
        return []
    return [f"NVLink card {Path(str(m.card)).name} fitted on {card_gpu}, not on this machine's {gpu}: the intra-node half of "
            f"this answer is the {card_gpu} board's"]


def _nvls_unpriced(m, op: str, sizes: list[int]) -> list[str]:
    """A note where NCCL runs NVLS inside one NVLink domain at a GPU count its NVLS card has no rate for (below its
    smallest count: the card's law carries only upwards): the answer is the NVLink card's ring there
    (collectives/domain.NvlinkDomain.nvls_unpriced)."""
    from simcluster.machine_models import build_domain

    if m.domains != 1 or not m.nvls_card:
        return []
    domain = build_domain(m)
    unpriced = domain.nvls_unpriced(op, sizes)
    if not unpriced:
        return []
    counts = ", ".join(str(n) for n in sorted(domain.nvls[0]))
    return [f"NCCL runs NVLS on these {domain.ranks} GPUs from {min(unpriced) >> 20} MiB, but the NVLS card has rates from "
            f"{counts} GPUs only (carried upwards, never below): those sizes are priced on the NVLink card's ring, not "
            "what NCCL runs (docs/models/fabric.md, NVLS inside one NVLink domain)"]


def _nvls_above_board(m, op: str) -> list[str]:
    """A note where an all_reduce's NVLS price inside an NVLink domain of more than 8 GPUs is a fit or unmeasured
    (collectives/nvls_domain.unmeasured_note)."""
    from simcluster.cards import load_nvls
    from simcluster.collectives.nvls_domain import unmeasured_note
    from simcluster.collectives.schedule import canonical_op
    from simcluster.machine_models import machine_arch

    if not m.nvls_card or canonical_op(op) != "all_reduce":
        return []
    note = unmeasured_note(machine_arch(m), m.domain_gpus, load_nvls(m.nvls_card)[0], m.domains)
    return [note] if note else []


def _across_large_domains(m) -> list[str]:
    """Across NVLink domains of more than 8 GPUs (NVL72 racks joined by a network), a note that the answer is
    unvalidated: the only rows of that shape are development and the ring's miss there has no sourced cause
    (docs/models/fabric-findings.md, session 51, gb200x51). Where it fires the trust lines say unvalidated, no band, as
    every answer on the machine does (trust/band.machine_shape_why, the rule)."""
    from simcluster.machine_models import domain_gpus_across, machine_gpu
    from simcluster.trust.band import large_domains

    if not large_domains(domain_gpus_across(m)):
        return []
    gpu = machine_gpu(m)
    other = f"; none of any {gpu} machine, so what follows is GB200's alone" if gpu and gpu != "GB200" else ""
    return [f"across NVLink domains of {m.domain_gpus} GPUs: unvalidated. The only measured rows of this shape (GB200 rows "
            f"only: CoreWeave's NVL72 at 2 and 20 racks{other}) are development, and at 20 racks (NVLS off) the ring moves "
            "bytes about a third slower than this model's NVLink-bound price, for no cause any source gives "
            "(docs/models/fabric.md, Multi-node NVLink domains)"]


def _nic_protocols(m) -> dict | None:
    """Across nodes, NCCL's protocols where the machine restricts them: the NIC card's `nccl_protocols` (e.g. efa-100g's
    Simple: aws-ofi-nccl's NCCL_PROTO=simple on p4d / p4de), and LL128 where the NICs hang off the CPU under an NCCL
    before 2.27 (machine.nic.via_cpu, machine.nccl: collectives/cluster.no_ll128_via_cpu): {protocols, excluded,
    source}; else None."""
    from simcluster.collectives.cluster import no_ll128_via_cpu
    from simcluster.collectives.nccl_search import PROTOCOLS
    from simcluster.machine_models import machine_nccl, machine_nic

    if m.domains <= 1 or m.nic is None:
        return None
    nic, _ = machine_nic(m)
    protocols, sources = list(nic.nccl_protocols or PROTOCOLS), []
    if not set(protocols) >= set(PROTOCOLS):
        sources.append(f"the NIC card's nccl_protocols ({os.path.normpath(str(m.nic.card))})")
    if no_ll128_via_cpu(m.nic.via_cpu, m.domains, machine_nccl(m).stated) and "LL128" in protocols and len(protocols) > 1:
        protocols.remove("LL128")
        sources.append(f"NCCL {m.nccl} with the NICs on the CPU (machine.nic.via_cpu; LL128 over that path from NCCL 2.27)")
    if not sources:
        return None
    return {"protocols": protocols, "excluded": [p for p in PROTOCOLS if p not in protocols], "source": "; ".join(sources)}
