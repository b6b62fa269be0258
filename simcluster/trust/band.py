"""An answer's 80% band and validation status from its regime's held-out residuals (trust/table.py)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from simcluster.trust.moved import Moves
from simcluster.trust.noise import FloorVerdict, floor_verdict
from simcluster.trust.regime import Regime, transport_regime
from simcluster.trust.table import LEVEL, MIN_ROWS, MIN_SOURCES, Table, band_edges, edges_text, gpu_counts, load_table

STATUSES = ("validated", "extrapolated", "unvalidated")
AXIS_UNITS = {"gpus": "GPUs", "accelerators": "accelerators"}
# what a band cannot say for a class of answers, by regime key (tests/test_rdma_published.py checks it against the cards)
RDMA_CAVEAT = ("RDMA: the band printed is the transport family's pooled band (held-out TCP and UDP host-stack rows, the "
               "few RDMA rows among them; for rdma_ud extended to its own rows), not an RDMA band; the RDMA rows check "
               "the host CPU per WQE of the polled-verbs model (rdma-polled-verbs-100g: 33.07 ns per WQE, 109.8 ns per "
               "doorbell, from Kalia et al. ATC'16) against published per-core rates, a cost that does not bind at "
               "qperf's 64 KiB messages (0.027 of a core at the wire's rate), so no row checks an rc_bw or rc_lat "
               "answer; seed004-ib-edr-offload prices interrupt-driven completions (1.17 us per message) and the other "
               "RDMA cards price 0 s per message, which no row checks (docs/models/nic-and-cpu.md, RDMA verbs per "
               "operation)")
REGIME_CAVEATS = {transport_regime(kind).key: RDMA_CAVEAT for kind in ("rdma_rc", "rdma_ud", "rdma_uc")}
# across NVLink domains of more GPUs than this (NVL72 racks joined by a network) no held-out row covers an answer
LARGE_DOMAIN_GPUS = 8


@dataclass(frozen=True)
class MachineTrust:
    """What an answer's trust reads of the machine it was priced on, built once per scenario machine
    (build.machine_trust) and carried whole by its results: `link` the link a collective of the whole machine crosses as
    its regime names it (one NVLink domain's, 'nvlink-h200'; across domains the NIC's transport and fabric, 'rdma-ib');
    `gpu` the machine's GPU model ('': the one the link names); `unvalidated` why every answer priced on the machine's
    collectives is unvalidated with no band whatever its regime's (machine_shape_why), '' where nothing."""

    link: str = "nvlink"
    gpu: str = ""
    unvalidated: str = ""


@dataclass(frozen=True)
class Trust:
    """How far to trust one class of answers: the residual bounds (rho, as a time) and where they come from."""

    regime: Regime
    status: str                           # validated / extrapolated / unvalidated
    rho: tuple[float, float] | None       # (low, high) of measured / predicted as a time; None: nothing ever checked
    rows: int                             # residual rows behind rho
    sources: int
    scale_range: tuple[float, float] | None = None
    outside: str = ""                     # extrapolated: why (its rows miss the family's target; the axis outside)
    pooled: bool = False                  # unvalidated: rho from every row of the family (over pool_link where set)
    pool_link: str = ""                   # pooled: the link whose rows alone make the band (Table.pool_link); '': all
    own: tuple[int, int] = (0, 0)         # unvalidated: the regime's own held-out rows and sources (too few to band)
    own_range: tuple[float, float] | None = None   # unvalidated: the lowest and highest rho of those rows
    widened: bool = False                 # unvalidated: the pooled band widened to contain own_range
    gpus: tuple[tuple[str, int], ...] = ()   # rows per GPU model the band's rows ran on ('': rows naming none)
    moves: Moves | None = None            # today's model's move on the band's registered rows (trust/moved.py)
    # a lab eager regime's verdict at this GPU count against its noise floor (trust/noise.FloorVerdict), set by trust_of:
    # the one field the caveat and the status text read
    verdict: FloorVerdict | None = None
    # a shape the regime key cannot see and no held-out row covers (shape_unvalidated): why, and the regime's band, not applied
    shape_why: str = ""
    shape_band: tuple[float, float] | None = None
    shape_band_from: str = ""             # which band shape_band is: its regime's own, or the family's pooled (and rows)
    edges: tuple = ()                     # an edge resting on one or two sources' rows (table.band_edges), display only

    @property
    def caveat(self) -> str:
        """What the band cannot say (REGIME_CAVEATS), and where a lab eager regime at this GPU count missed the target
        or was marked, its verdict against its own noise floor (Trust.verdict)."""
        verdict = self.verdict.text() if self.verdict else ""
        return "; ".join(t for t in (REGIME_CAVEATS.get(self.regime.key, ""), verdict) if t)

    @property
    def noise_limited(self) -> bool:
        """Its verdict is noise-limited and the band its own: unvalidated with its own band widened to all its rows."""
        return self.verdict is not None and self.verdict.verdict == "noise-limited" and not self.pooled and self.rho is not None

    @property
    def too_weak(self) -> bool:
        """Its verdict is 'undecided: test too weak': unvalidated on its own band, the miss not excused."""
        return self.verdict is not None and self.verdict.verdict == "undecided: test too weak"

    @property
    def gpu_in_band(self) -> bool | None:
        """Whether the answer's GPU (regime.gpu) is among the GPUs the band's rows ran on; None where the answer names no
        GPU or no row of the band names one (storage, transport)."""
        named = {g for g, _ in self.gpus if g}
        return None if not (self.regime.gpu and named) else self.regime.gpu in named

    def gpus_text(self) -> str:
        """'rows on H200', 'rows on H100 (120), B200 (20), A100 (14)'; '' where no row names its GPU."""
        named = [(g, n) for g, n in self.gpus if g]
        if not named:
            return ""
        unnamed = sum(n for g, n in self.gpus if not g)
        if len(named) == 1 and not unnamed:
            return f"rows on {named[0][0]}"
        return "rows on " + ", ".join(f"{g} ({n})" for g, n in named) + (f", {unnamed} naming no GPU" if unnamed else "")

    def gpu_text(self) -> str:
        """Where the answer's GPU has no row in the band: says so (the band is carried across GPUs); else ''."""
        if self.gpu_in_band is not False:
            return ""
        where = "this regime" if not self.pooled else f"the pooled {self.pool_text()}"
        return (f"; this answer's GPU ({self.regime.gpu}) has no rows in {where}: the band is carried across GPUs"
                + ("" if self.pooled else " (extrapolated)"))

    def time_band(self, seconds: float) -> list[float] | None:
        return None if self.rho is None else [seconds * self.rho[0], seconds * self.rho[1]]

    def rate_band(self, rate: float) -> list[float] | None:
        return None if self.rho is None else [rate / self.rho[1], rate / self.rho[0]]

    def to_json(self) -> dict:
        if self.shape_why:
            return self._marked_json()
        out = {"status": self.status, "regime": self.regime.key, "rows": self.rows, "sources": self.sources,
               "level": LEVEL}
        if self.rho is not None:
            out["measured_over_predicted_time"] = [round(self.rho[0], 4), round(self.rho[1], 4)]
        if self.scale_range is not None:
            out[f"validated_{self.regime.axis}"] = [int(self.scale_range[0]), int(self.scale_range[1])]
        if self.outside:
            out["outside"] = self.outside
        if self.pooled:
            out["band_from"] = (f"every held-out {self.pool_text(row='row')}, pooled (this regime has too few)"
                                + (", widened to its own rows" if self.widened else ""))
            out["regime_rows"], out["regime_sources"] = self.own
            if self.own_range is not None:
                out["regime_measured_over_predicted_range"] = [round(self.own_range[0], 4), round(self.own_range[1], 4)]
        if self.gpus_text():
            out["gpus_of_rows"] = {g or "not named": n for g, n in self.gpus}
        if self.gpu_in_band is not None:
            out["gpu"], out["gpu_in_band"] = self.regime.gpu, self.gpu_in_band
        if self.moves is not None and self.moves.registered:
            out["model_moved"] = self.moves.to_json(self.rho)   # with the still-priced rows' coverage by this band
        if self.edges:
            out["band_edge_sources"] = {side: dict(by) for side, by in self.edges}
        if self.caveat:
            out["caveat"] = self.caveat
        if self.noise_limited:
            out["noise_limited"] = self.verdict.to_json()
        return out

    def _marked_json(self) -> dict:
        """A machine-marked answer (shape_unvalidated): no band, so nothing that reads as band evidence (rows and sources
        0, no GPU coverage); the band its key would have had only as `regime_band_not_applied`, with
        `regime_band_not_applied_from` saying which band it is and the rows behind it; a plan ranks the answer at its
        slow end (plan/trust.rho_high; cold review A52 items 1 and 6)."""
        out = {"status": self.status, "regime": self.regime.key, "rows": 0, "sources": 0, "level": LEVEL,
               "unvalidated_why": self.shape_why}
        if self.shape_band is not None:
            out["regime_band_not_applied"] = [round(self.shape_band[0], 4), round(self.shape_band[1], 4)]
            out["regime_band_not_applied_from"] = self.shape_band_from
        if self.caveat:
            out["caveat"] = self.caveat
        return out

    def moved_text(self) -> str:
        """Where most of the band's rows are registered rows today's model has moved on: says so (Moves.text); where the
        band has registered rows, flagged or not, those today's model still prices within 2% (Moves.still_priced_text)."""
        if self.moves is None:
            return ""
        return "; ".join(t for t in (self.moves.text(), self.moves.still_priced_text(self.rho)) if t)

    def pool_text(self, row: str = "rows") -> str:
        """The pooled rows named: 'collective across nodes rows over rdma-efa', 'llm rows' (`row`: 'row' for one)."""
        return f"{self.regime.family} {row}" + (f" over {self.pool_link}" if self.pool_link else "")

    def own_text(self) -> str:
        """An unvalidated regime's own rows: how many, from how many sources, their range (too few for a band)."""
        if not self.own[0] or self.own_range is None:
            return "no held-out rows of its own"
        lo, hi = ((x - 1) * 100 for x in self.own_range)
        return (f"{self.own[0]} held-out row{'s' * (self.own[0] != 1)} from {self.own[1]} source{'s' * (self.own[1] != 1)} "
                f"at {lo:+.0f}%..{hi:+.0f}%, a band needs {MIN_ROWS} from {MIN_SOURCES}")

    def text(self) -> str:
        """status_text; where one or two sources hold an edge's tail, their rows (table.edges_text); where the band has
        registered rows its moved_text; and where the regime has one its caveat."""
        moved = "; ".join(t for t in (edges_text(self.edges) if self.rho is not None else "", self.moved_text()) if t)
        return self.status_text() + (f"; {moved}" if moved else "") + (f"; caveat: {self.caveat}" if self.caveat else "")

    def status_text(self) -> str:
        """One line: 'measured time -4%..+24% of this (80% band); validated on 20 held-out rows from 5 sources
        (llm | Megatron/NeMo | TP+PP | bf16, 128-6144 GPUs)'."""
        if self.shape_why:
            applied = ("" if self.shape_band is None else
                       f"; {self.shape_band_from} (measured time {(self.shape_band[0] - 1) * 100:+.0f}%.."
                       f"{(self.shape_band[1] - 1) * 100:+.0f}% of this, {self.regime.key}) not applied (the machine's "
                       "rule)")
            return f"unvalidated, no band: {self.shape_why}{applied}"
        if self.rho is None:
            return f"unvalidated: never checked (no held-out {self.regime.family} rows; regime {self.regime.key})"
        label = (f"{'pooled ' if self.pooled else ''}{LEVEL:.0%} band widened to its rows' range" if self.widened
                 else f"{LEVEL:.0%} band")
        band = f"measured time {(self.rho[0] - 1) * 100:+.0f}%..{(self.rho[1] - 1) * 100:+.0f}% of this ({label})"
        gpus = f" ({self.gpus_text()})" if self.gpus_text() else ""
        if self.pooled:
            return (f"{band}; unvalidated regime ({self.regime.key}: {self.own_text()}), band from all {self.rows} "
                    f"held-out {self.pool_text()} pooled{gpus}{', widened to its own rows' if self.widened else ''}"
                    f"{self.gpu_text()}")
        lo, hi = (int(x) for x in self.scale_range) if self.scale_range else (0, 0)
        unit = AXIS_UNITS.get(self.regime.axis, self.regime.axis)
        span = "" if not self.scale_range else f", {lo} {unit}" if lo == hi else f", {lo}-{hi} {unit}"
        span += f"; {self.gpus_text()}" if self.gpus_text() else ""
        status = (f"unvalidated, {self.verdict.verdict} at {self.verdict.gpus} GPU{'s' * (self.verdict.gpus != 1)} "
                  f"({self.verdict.gpu}): the target is not reachable with the lab's data (the caveat's numbers); "
                  "the band, widened to all its rows, from " if self.noise_limited
                  else f"extrapolated ({self.outside}) on " if self.outside else "validated on " if self.status == "validated"
                  else "unvalidated (its noise test too weak), the band from " if self.too_weak
                  else "")   # extrapolated across GPUs alone: gpu_text says so
        return (f"{band}; {status}{self.rows} held-out rows from {self.sources} sources ({self.regime.key}{span})"
                f"{self.gpu_text()}")


def pooled_band(pooled: tuple[float, float], own_range: tuple[float, float] | None) -> tuple[float, float]:
    """An unvalidated regime's band: the family's pooled band widened to contain the regime's own rows' rho range (a
    band its own held-out rows lie outside would claim what they refute; docs/models/trust.md)."""
    return pooled if own_range is None else (min(pooled[0], own_range[0]), max(pooled[1], own_range[1]))


def large_domains(domain_gpus_across: int) -> bool:
    """Across NVLink domains of more than LARGE_DOMAIN_GPUS GPUs (machine_models.domain_gpus_across): the one test of
    the large-domain rule, which machine_shape_why's mark and predict collective's note share."""
    return domain_gpus_across > LARGE_DOMAIN_GPUS


def machine_shape_why(domain_gpus_across: int, opted_in: str) -> str:
    """Why every answer priced on a machine's collectives (a collective, a DDP or an LLM step; predict, run, sweeps and
    plans alike) is unvalidated with no band whatever its regime's: the one rule, keyed by the machine (build.machine_unvalidated
    passes it the machine layer's facts: MachineTrust.unvalidated, an LLM step's regime), applied by trust_of through Regime.unvalidated.
    `domain_gpus_across` (machine_models.domain_gpus_across):
    the GPUs of one NVLink domain where the machine has several (0: one domain); above LARGE_DOMAIN_GPUS the only
    measured rows are GB200 development rows (cold review A51 item 6). `opted_in`: the release whose tuner tables price
    NCCL's choice where the machine opts in (machine.nccl_tables: stated; nccl_versions.NcclRelease.opted_in), else ''
    (cold review B51 item 2). '' where neither."""
    why = []
    if large_domains(domain_gpus_across):
        why.append(f"across NVLink domains of {domain_gpus_across} GPUs (no held-out row of this shape, only GB200 "
                   "development rows: docs/models/fabric.md, Multi-node NVLink domains)")
    if opted_in:
        why.append(f"NCCL's tables opted in ({opted_in}'s tuner tables, machine.nccl_tables: stated, an unvalidated "
                   "opt-in: docs/models/fabric.md, NCCL's tables by release)")
    return " and ".join(why)


def trust_of(regime: Regime, table: Table | None = None) -> Trust:
    """The regime's own band where it has enough rows (unvalidated all the same where trust/noise.py puts the regime at
    that GPU count at the machines' run-to-run noise); else the pooled band (the family's rows, a collective regime's
    over its own link where those are enough: Table.pool_link) widened to the regime's own rows (pooled_band); else
    never checked. Where the answer's machine is unvalidated whatever the key (regime.unvalidated: machine_shape_why),
    unvalidated with no band (shape_unvalidated). build.held_out_coverage checks bands through this same rule."""
    trust = _keyed_trust(regime, table)
    return shape_unvalidated(trust, regime.unvalidated) if regime.unvalidated else trust


def _keyed_trust(regime: Regime, table: Table | None) -> Trust:
    """trust_of by the regime's key alone."""
    table = table or load_table()
    verdict = floor_verdict(regime.key, regime.scale, regime.gpu)
    rows = table.regimes.get(regime.key)
    if rows is not None and rows.enough:
        low, high = rows.scale_range
        outside = ""
        if regime.axis and regime.scale is not None and not (low <= regime.scale <= high):
            outside = f"{regime.axis} {int(regime.scale)} outside the validated {int(low)}-{int(high)}"
        band = rows.bounds()
        trust = Trust(regime, "validated", band, len(rows.rows), len(rows.sources),
                      (low, high) if regime.axis else None, outside, gpus=tuple(rows.gpus.items()), moves=rows.moves,
                      verdict=verdict, edges=band_edges(rows.rows, band))
        if trust.noise_limited:   # the error at the machines' run-to-run noise: unvalidated (trust/noise.py), its own
            # band widened to all its rows, as an unvalidated regime's is (pooled_band): a run anywhere in that noise
            own_range = (min(r.rho for r in rows.rows), max(r.rho for r in rows.rows))
            band = pooled_band(trust.rho, own_range)
            return replace(trust, status="unvalidated", rho=band, widened=band != trust.rho, edges=band_edges(rows.rows, band),
                           own=(len(rows.rows), len(rows.sources)), own_range=own_range)
        if trust.too_weak:   # the miss not excused, nor validated
            return replace(trust, status="unvalidated")   # its own band; the caveat says why (cold review B47 item 2)
        # rows that miss their family's target (trust/targets, session 54), an axis outside the rows' range, or a GPU
        # none of them ran on: the band carried past what its rows validate (extrapolated)
        outside = "; ".join(w for w in (*rows.misses(), outside) if w)   # rule C (mendC54): thin rows meeting it
        return replace(trust, status="extrapolated", outside=outside) if outside or trust.gpu_in_band is False else trust
    link = table.pool_link(regime.family, regime.key)   # a collective regime: its link's rows where enough for a band
    pooled = table.family_rows(regime.family, link)
    if not pooled:
        return Trust(regime, "unvalidated", None, 0, 0, verdict=verdict)
    own = (len(rows.rows), len(rows.sources)) if rows is not None else (0, 0)
    own_range = (min(r.rho for r in rows.rows), max(r.rho for r in rows.rows)) if rows is not None else None
    family_band = table.pooled_bounds(regime.family, link)
    band = pooled_band(family_band, own_range)
    return Trust(regime, "unvalidated", band, len(pooled), len({r.source for r in pooled}), pooled=True, own=own,
                 own_range=own_range, widened=band != family_band, gpus=tuple(gpu_counts(pooled).items()),
                 moves=table.family_moves(regime.family, link), pool_link=link, verdict=verdict, edges=band_edges(pooled, band))


def shape_unvalidated(trust: Trust, why: str) -> Trust:
    """`trust` for an answer of a shape its regime key does not see and no held-out row covers (machine_shape_why: a
    machine across NVLink domains above 8 GPUs, or opted in to NCCL's tables by release): unvalidated with no band, the regime's band kept only to say
    it is not applied (text and --json), as a noise-limited verdict says unvalidated (cold review A51 item 6), and for a
    plan to rank the answer at its slow end, never ahead of the same answer with a band (cold review A52 item 1)."""
    return replace(trust, status="unvalidated", rho=None, shape_why=why, shape_band=trust.rho, pooled=False, widened=False,
                   moves=None, scale_range=None, outside="", shape_band_from=band_name(trust))


def band_name(trust: Trust) -> str:
    """Which band `trust` carries, with the rows behind it: "the regime's 80% band (153 held-out rows from 12 sources)",
    "the family's pooled band (164 held-out llm rows from 13 sources)"; '' where it has none."""
    if trust.rho is None:
        return ""
    rows = f"{trust.rows} held-out rows from {trust.sources} sources"
    if trust.pooled:
        return f"the family's pooled band ({trust.rows} held-out {trust.pool_text()} from {trust.sources} sources)"
    return f"the regime's {LEVEL:.0%} band ({rows})"


def annotate(doc: dict, trust: Trust, times: tuple[str, ...] = (), rates: tuple[str, ...] = ()) -> dict:
    """`doc` with a `<key>_band: [low, high]` beside every time and rate key it has, and its `validation` object."""
    out = dict(doc)
    for key in times:
        if isinstance(doc.get(key), (int, float)):
            out[f"{key}_band"] = trust.time_band(doc[key])
    for key in rates:
        if isinstance(doc.get(key), (int, float)):
            out[f"{key}_band"] = trust.rate_band(doc[key])
    out["validation"] = trust.to_json()
    return out


def collective_trust(p, machine: MachineTrust) -> Trust:
    """A collective prediction's (collectives/model.Prediction or a FabricPrediction) trust on `machine` (its link, GPU
    and mark: MachineTrust)."""
    from simcluster.trust.regime import collective_regime

    regime = collective_regime(p.op, getattr(p, "algorithm", "") or "nvlink-card", p.size_bytes, machine.link, p.nranks,
                               machine.gpu)
    return trust_of(replace(regime, unvalidated=machine.unvalidated))


def annotate_collective(row: dict, p, machine: MachineTrust) -> dict:
    return annotate(row, collective_trust(p, machine), times=("time_s",), rates=("algbw_Bps", "busbw_Bps"))


def ddp_trust(gpus: int, nodes: int, machine: MachineTrust) -> Trust:
    """A DDP step's (training/) trust on `machine` (its GPU model and mark; a DDP regime names no link)."""
    from simcluster.trust.regime import ddp_regime

    return trust_of(replace(ddp_regime(gpus, nodes, machine.gpu), unvalidated=machine.unvalidated))


def storage_trust(model: str, limit: str | None, accelerators: int | None) -> Trust:
    """A storage answer's trust: the workload's model x the limit its run names, at that many accelerators."""
    from simcluster.trust.regime import storage_regime

    return trust_of(storage_regime(model, limit, accelerators))


def qperf_trusts(tests) -> dict[str, Trust]:
    """Each qperf test's trust, by its transport (tcp, udp, rdma_rc, ...)."""
    from simcluster.trust.regime import transport_kind, transport_regime

    return {test: trust_of(transport_regime(transport_kind(test))) for test in tests}


def least_validated(trusts) -> Trust:
    """The answer's weakest trust: unvalidated before extrapolated before validated (the first of equals)."""
    return max(trusts, key=lambda t: STATUSES.index(t.status))


def sweep_trust_lines(predictions, machine: MachineTrust) -> list[str]:
    """One line per regime a sweep's sizes fall in on `machine`: its 80% band and validation status (trust/band.py)."""
    from simcluster.units import format_size

    by: dict[str, tuple[object, list[int]]] = {}
    for p in predictions:
        t = collective_trust(p, machine)
        by.setdefault(t.regime.key, (t, []))[1].append(p.size_bytes)
    return [f"trust {format_size(s[0])}{'' if len(s) == 1 else '-' + format_size(s[-1])}: {t.text()}" for t, s in by.values()]
