"""Published multi-node runs, each system held out of the inter-node fit (issue 41):
`simcluster validate --published nccl --held-out-systems`.

The inter-node terms a multi-node log calibrates (fit/fabric.py) are, for the rows at >= 64 MiB, the NIC's achievable
payload fraction eta (line rate x eta is what a NIC moves) and its per-call start-up t0 (the time before a call's
network pipeline runs at its steady rate: NIC card `call_setup`). For every published system in turn, both are fitted
on the OTHER systems of its NIC family alone, and its own rows are predicted with them:

    family   EFA (SRD over libfabric: the efa-* cards, any port speed) | verbs (InfiniBand and RoCE) at one port speed
    train    the family's other systems, less outliers (a system whose median row the scenario's own cards miss by more
             than 1.5x: the issue threads about slow clusters; predicted and reported, never fitted on) and less the
             held-out system's twins (files naming one `simcluster.source_group`: one system measured twice, left out
             together); a file out of the model's scope (`simcluster.excluded_why`: its source states a degradation
             the model has no knob for) is neither predicted nor fitted on, and is listed under the table
    fit      argmin over (eta, t0) of  sum over the training groups g of  mean over g's systems s of
             mean over s's rows |log(busbw_pred / busbw_meas)|
    t0       fitted only where an inner leave-one-out on the training systems predicts them better with it, else 0
    predict  busbw of every held-out row at its NCCL choice (or forced algorithm), the NIC card's eta and t0 replaced

t0 is a start-up added once to every call across nodes, so it cannot exceed the whole time of the smallest such call
measured: the grid stops at SETUP_MAX_S, the 8 B all_reduce across 2 x p6-b200 over EFA (dstack#3961, 50.58 us; the
2 x p5 log of KeitaW's EKS run, 63-66 us from 16 B to 1 KiB, is above it). A larger t0, as fitted before session 42
(150-360 us on EFA), was a surrogate for EFA's mid-size ramp that no measured small call allows
(docs/models/fabric-findings.md, sessions 28 and 42). The bound is one system's (2 x p6-b200) applied to every family
as an assumption: the other small calls recorded sit above it (2 x p5: the KeitaW log above, the awsome-distributed-
training README's 8 B row 69.12 us; 2 x p4de: the same README's 8 B row 164.3 us, not stored as a row since the file
keeps >= 1 MiB), so none contradicts it, though a per-system bound would be looser there. The bound was chosen after
two candidates were compared on the rows this check judges (t0 = 0: 32 of 49, 26.0%; 50 us: 32 of 49, 24.9%;
fabric-findings.md, session 42 ncclsys): the files whose rows prompted it carry `development_for: held_out_systems`.
Systems (a source_group: its files together) weigh equally in the fit whatever their row count; log ratios weigh a system's miss the same however slow its
measurement. A system without a network (one NVLink domain) has nothing to fit: its rows are as `validate --published
nccl` gives them; a system alone in its NIC family has nothing to fit on either: its rows are its own cards' (the
table marks it, eta '-'). The grid: eta 0.60-1.00 by 0.02, t0 0-50 us by 10 us (t0 is added to a call's time, so every eta's
predictions are computed once and t0 is applied to them).
The headline counts sources, not files (issue 41, session 50): a source_group's files are one system measured more than
once, left out of the fit together, and their rows pooled (row-weighted mean |error|) into one figure judged against the
target; the table keeps a row per file. A source is development (^) if any of its files is, fitted if any of its files'
terms were fitted on others.
docs/models/fabric.md, "Published multi-node runs, each system held out".
"""

from __future__ import annotations

import dataclasses
import functools
from collections import defaultdict
from pathlib import Path

import numpy as np

from simcluster.documents import split_choice
from simcluster.errors import SimclusterError

ETAS = np.round(np.arange(0.60, 1.0001, 0.02), 2)
SETUP_MAX_S = 50e-6       # the smallest measured multi-node call's whole time (dstack#3961: 50.58 us), on the 10 us grid;
                          # p6-b200's, applied to every family as an assumption (module docstring)
SETUPS_S = np.arange(0.0, SETUP_MAX_S + 1e-9, 10e-6)
TARGET_PCT = 10.0
OUTLIER_RATIO = 1.5      # a system the scenario's own cards miss by more than this (median row) does not fit others


@dataclasses.dataclass
class HeldOutRow:
    run: int
    configuration: str
    measured_Bps: float
    sizes: list[int]                 # the sizes predicted; busbw is their mean, or their max where `peak`
    peak: bool
    bus_bytes: list[float]           # bus bytes per size (busbw = bus bytes / time)
    times: dict                      # eta -> [time at each size, t0 = 0]; None where the row has no network (one domain)
    shipped_Bps: float               # the prediction with the scenario's own card


@dataclasses.dataclass
class HeldOutSystem:
    name: str
    family: str | None               # None: no network
    rows: list[HeldOutRow]
    card: str | None = None          # the scenario's NIC card
    group: str = ""                  # the file's source_group (published.Published.source_group); "" = its own name
    development: str = ""            # why its rows prompted this check's terms or bounds (`development_for`), else ""
    nics_assumed: bool = False       # rows across nodes on a NIC count or rate the source does not state (Published.nics_assumed)

    @property
    def source(self) -> str:
        """The unit left out and weighed as one system: the source_group its file names, else the file."""
        return self.group or self.name

    def busbw(self, eta: float, t0s: np.ndarray) -> np.ndarray:
        """[len(t0s), rows] predicted busbw with the NIC's efficiency eta and each start-up of t0s."""
        t0s = np.atleast_1d(np.asarray(t0s, float))
        out = np.empty((len(t0s), len(self.rows)))
        for j, r in enumerate(self.rows):
            if r.times is None:
                out[:, j] = r.shipped_Bps
                continue
            rates = np.array(r.bus_bytes)[None, :] / (np.array(r.times[eta])[None, :] + t0s[:, None])
            out[:, j] = rates.max(axis=1) if r.peak else rates.mean(axis=1)
        return out

    def errors_pct(self, eta: float, t0: float) -> np.ndarray:
        return (self.busbw(eta, t0)[0] / np.array([r.measured_Bps for r in self.rows]) - 1) * 100

    @functools.cached_property
    def grid(self) -> np.ndarray:
        return self.log_errors(SETUPS_S)

    @property
    def outlier(self) -> bool:
        """Whether the scenario's own cards miss this system's median row by more than OUTLIER_RATIO either way (a
        measurement far from its hardware class: the issue threads about slow clusters): it is predicted and reported,
        never used to fit another system's terms."""
        measured = np.array([r.measured_Bps for r in self.rows])
        shipped = np.array([r.shipped_Bps for r in self.rows])
        return bool(np.median(np.abs(np.log(shipped / measured))) > np.log(OUTLIER_RATIO))

    def log_errors(self, t0s: np.ndarray) -> np.ndarray:
        """[eta, t0] the mean |log(predicted / measured)| over the system's rows, on the grid."""
        measured = np.array([r.measured_Bps for r in self.rows])
        return np.array([np.mean(np.abs(np.log(self.busbw(float(eta), t0s) / measured[None, :])), axis=1) for eta in ETAS])


def nic_family(card_name: str, line_rate_Bps: float) -> str:
    """The systems whose inter-node terms are fitted together: EFA (SRD over libfabric, one provider's stack, any port
    speed), or verbs (InfiniBand and RoCE) at one port speed (a NIC generation: 200G ConnectX-6, 400G ConnectX-7)."""
    if card_name.lower().startswith("efa"):
        return "EFA"
    return f"verbs {line_rate_Bps * 8 / 1e9:.0f}G"


def _system(ref, tables: str | None = None) -> HeldOutSystem | None:
    from simcluster.collectives.domain import NvlinkDomain
    from simcluster.collectives.fabric import predict_fabric
    from simcluster.collectives.ring_flows import ring_flows
    from simcluster.collectives.schedule import bus_factor, canonical_op
    from simcluster.machine_models import machine_nic
    from simcluster.reference import nccl
    from simcluster.scenario import load_variants

    scenario = ref.file("scenario")
    if scenario is None:
        return None
    shipped = {(r.run): r for r in nccl.system_rows(ref, tables) if r.predicted is not None}
    per_node = int(ref.system["gpus_per_node"])
    family, card, rows, clusters, variants = None, None, [], {}, {}
    for i, run in enumerate(ref.runs):
        if i not in shipped:
            continue
        sizes = nccl._sizes(run)
        peak = sizes is None
        sizes = nccl._peak_sizes(run) if peak else sizes
        nodes = nccl.run_nodes(ref, run)
        if nodes not in clusters:
            clusters[nodes] = nccl._stated_nccl(nccl._cluster(scenario, nodes), ref, tables)
        cluster = clusters[nodes]
        measured = float(run["busbw_GBps"]) * 1e9
        if isinstance(cluster, NvlinkDomain):
            rows.append(HeldOutRow(i, shipped[i].configuration, measured, sizes, peak, [], None, shipped[i].predicted))
            continue
        machine = load_variants(scenario, nodes)[0][1].machine
        card = machine_nic(machine)[1].get("name", "")
        family = nic_family(card, cluster.nic.line_rate_Bps)
        if run.get("nvls") is False:
            cluster = dataclasses.replace(cluster, nvls=None)
        forced = nccl._forced(run)
        algorithms = [forced or (None if peak else nccl.chooser_algorithm(ref, nodes * per_node, s, run["op"])) for s in sizes]
        op = canonical_op(run["op"])
        times = {}
        for eta in ETAS:
            key = (nodes, run.get("nvls") is False, float(eta))
            if key not in variants:
                c = dataclasses.replace(cluster, nic=dataclasses.replace(cluster.nic, efficiency=float(eta), call_setup_s=0.0))
                variants[key] = (c, ring_flows(c), {})
            c, flows, memo = variants[key]
            for s, a in zip(sizes, algorithms, strict=True):
                if (op, s, a) not in memo:
                    algorithm, protocol = split_choice(a)
                    memo[(op, s, a)] = predict_fabric(c, op, s, algorithm, flows, protocol).time_s
            times[float(eta)] = [memo[(op, s, a)] for s, a in zip(sizes, algorithms, strict=True)]
        bus = [bus_factor(op, nodes * per_node) * s for s in sizes]
        rows.append(HeldOutRow(i, shipped[i].configuration, measured, sizes, peak, bus, times, shipped[i].predicted))
    return HeldOutSystem(ref.name, family, rows, card, ref.source_group, ref.development_for("held_out_systems"),
                         family is not None and bool(ref.nics_assumed)) if rows else None


def _cost(systems: list[HeldOutSystem], setups: slice) -> np.ndarray:
    """[eta, t0] sum over the systems' sources (source_group) of the mean over that source's systems of its grid:
    twins weigh as one system."""
    groups = defaultdict(list)
    for s in systems:
        groups[s.source].append(s.grid[:, setups])
    return sum(sum(g) / len(g) for g in groups.values())


def _fit(systems: list[HeldOutSystem], setups: slice = slice(None)) -> tuple[float, float]:
    """(eta, t0) minimising the sum over `systems` of each one's mean |log(predicted / measured busbw)| (systems weigh
    equally; a source_group's systems together as one), on the grid; t0 over SETUPS_S[setups]."""
    cost = _cost(systems, setups)
    i, j = np.unravel_index(int(np.argmin(cost)), cost.shape)
    return float(ETAS[i]), float(SETUPS_S[setups][j])


def _with_setup(systems: list[HeldOutSystem]) -> bool:
    """Whether t0 is fitted (else 0): yes where fitting it predicts `systems` better, each held out of a fit on the
    others in turn (an inner leave-one-source-out on the training systems only, a source_group's systems left out
    together; their summed |log error|); fewer than 3 sources: t0 stays 0."""
    if len({s.source for s in systems}) < 3:
        return False
    errors = {}
    for name, setups in (("fixed", slice(0, 1)), ("fitted", slice(None))):
        total = 0.0
        for source in {s.source for s in systems}:
            cost = _cost([o for o in systems if o.source != source], setups)
            i, j = np.unravel_index(int(np.argmin(cost)), cost.shape)
            total += float(_cost([u for u in systems if u.source == source], setups)[i, j])
        errors[name] = total
    return errors["fitted"] < errors["fixed"]


@dataclasses.dataclass(frozen=True)
class HeldOutResult:
    system: str
    family: str | None
    fitted_on: tuple[str, ...]
    eta: float | None
    call_setup_s: float | None
    rows: int
    shipped_pct: float               # mean |error| with the scenario's own NIC card
    held_out_pct: float              # mean |error| with the terms fitted on the other systems
    row_errors_pct: tuple[float, ...]
    outlier: bool = False            # not used to fit the other systems (HeldOutSystem.outlier)
    development: str = ""            # HeldOutSystem.development: not a held-out figure
    source: str = ""                 # the source_group it is held out with ("" = its own file)
    nics_assumed: bool = False       # HeldOutSystem.nics_assumed: marked '?'

    @property
    def fitted(self) -> bool:
        """Whether eta and t0 were fitted on other sources (else: its own cards' figures)."""
        return self.eta is not None

    def to_json(self) -> dict:
        return {"system": self.system, "source": self.source or self.system, "family": self.family, "fitted_on": list(self.fitted_on), "eta": self.eta,
                "call_setup_us": None if self.call_setup_s is None else round(self.call_setup_s * 1e6, 1),
                "rows": self.rows, "mean_abs_error_pct_shipped": round(self.shipped_pct, 2),
                "mean_abs_error_pct_held_out": round(self.held_out_pct, 2),
                "row_errors_pct": [round(e, 2) for e in self.row_errors_pct], "within_target": self.held_out_pct <= TARGET_PCT,
                "outlier_not_fitted_on": self.outlier, "development": self.development or None, "nics_assumed": self.nics_assumed}


def load_systems(path: str | Path | None = None, tables: str | None = None) -> list[HeldOutSystem]:
    """Every published system with rows at >= 64 MiB, its rows predicted at every eta of the grid (`tables` 'stated':
    on the tuner tables of the NCCL each file states, the opt-in; None: each scenario's machine.nccl_tables)."""
    from simcluster.published import published_files
    from simcluster.reference.nccl import read_nccl_file

    systems = []
    for file in published_files(path, "nccl-"):
        ref = read_nccl_file(file)
        try:
            s = _system(ref, tables)
        except (KeyError, TypeError, ValueError) as exc:
            raise SimclusterError(f"cannot read the runs ({type(exc).__name__}: {exc})", where=str(file)) from None
        if s is not None:
            systems.append(s)
    return systems


def excluded_systems(path: str | Path | None = None) -> list[tuple[str, str]]:
    """(file, why) of every published nccl file out of the model's scope (`simcluster.excluded_why`: its source states a
    degradation the model has no knob for): listed under the table, neither predicted here nor fitted on."""
    from simcluster.published import published_files
    from simcluster.reference.nccl import read_nccl_file

    return [(ref.name, ref.excluded_why) for ref in map(read_nccl_file, published_files(path, "nccl-")) if ref.excluded_why]


def held_out_systems(path: str | Path | None = None, systems: list[HeldOutSystem] | None = None) -> list[HeldOutResult]:
    """Every published system predicted with eta and t0 fitted on the other systems of its NIC family: each source (a
    source_group's files together, else one file) left out of the fit in turn, its files predicted with that one fit;
    one result per file, in the files' order (sources() pools them per source)."""
    systems = load_systems(path) if systems is None else systems
    by_family, by_source = defaultdict(list), defaultdict(list)
    for s in systems:
        by_family[s.family].append(s)
        by_source[s.source].append(s)
    out = {}
    for source, members in by_source.items():
        fits = {}                  # NIC family -> (the systems fitted on, (eta, t0)); one fit per family the source spans
        for s in members:
            if s.family not in fits:
                others = [o for o in by_family[s.family] if o.source != source and not o.outlier] if s.family is not None else []
                fits[s.family] = (others, _fit(others, slice(None) if _with_setup(others) else slice(0, 1)) if others else None)
            others, fit = fits[s.family]
            measured = np.array([r.measured_Bps for r in s.rows])
            shipped_errors = (np.array([r.shipped_Bps for r in s.rows]) / measured - 1) * 100
            shipped = float(np.mean(np.abs(shipped_errors)))
            if fit is None:   # no network, or alone in its family: nothing to fit on, its own cards' figures (marked)
                out[s.name] = HeldOutResult(s.name, s.family, (), None, None, len(s.rows), shipped, shipped,
                                            tuple(shipped_errors), s.outlier, s.development, s.group, s.nics_assumed)
                continue
            errors = s.errors_pct(*fit)
            out[s.name] = HeldOutResult(s.name, s.family, tuple(o.name for o in others), *fit, len(s.rows), shipped,
                                        float(np.mean(np.abs(errors))), tuple(errors), s.outlier, s.development, s.group, s.nics_assumed)
    return [out[s.name] for s in systems]


@dataclasses.dataclass(frozen=True)
class SourceResult:
    """One source held out (issue 41, session 50): a source_group's files pooled (one system measured more than once,
    left out of the fit together), else one file. The headline counts these, not files."""
    source: str
    systems: tuple[str, ...]
    rows: int
    shipped_pct: float               # mean |error| over all its files' rows, the scenario's own cards
    held_out_pct: float              # the same, the terms fitted on the other sources
    fitted: bool                     # any of its files' terms fitted on others (else: the shipped cards' figure)
    development: bool                # any of its files development for this check (`^`): not a held-out figure

    def to_json(self) -> dict:
        return {"source": self.source, "systems": list(self.systems), "rows": self.rows,
                "mean_abs_error_pct_shipped": round(self.shipped_pct, 2),
                "mean_abs_error_pct_held_out": round(self.held_out_pct, 2), "within_target": self.held_out_pct <= TARGET_PCT,
                "fitted": self.fitted, "development": self.development}


def sources(results: list[HeldOutResult]) -> list[SourceResult]:
    """The per-file results pooled per source (row-weighted), in the order each source first appears."""
    groups = defaultdict(list)
    for r in results:
        groups[r.source or r.system].append(r)
    out = []
    for name, rs in groups.items():
        rows = sum(r.rows for r in rs)
        out.append(SourceResult(name, tuple(r.system for r in rs), rows, sum(r.shipped_pct * r.rows for r in rs) / rows,
                                sum(r.held_out_pct * r.rows for r in rs) / rows, any(r.fitted for r in rs),
                                any(bool(r.development) for r in rs)))
    return out


def text(results: list[HeldOutResult], excluded: list[tuple[str, str]] = ()) -> str:
    lines = ["# published nccl, each system held out: the NIC's payload efficiency (eta) and per-call start-up (t0) fitted",
             "# on the other systems of its NIC family; busbw at >= 64 MiB; target mean |error| <= 10% per source",
             f"{'system':40s} {'family':10s} {'rows':>4s} {'eta':>5s} {'t0 us':>6s} {'shipped':>8s} {'held out':>8s}  rows' errors (%)"]
    for r in results:
        eta = f"{r.eta:.2f}" if r.eta is not None else "-"
        t0 = f"{r.call_setup_s * 1e6:.0f}" if r.call_setup_s is not None else "-"
        errs = " ".join(f"{e:+.1f}" for e in r.row_errors_pct)
        mark = ("*" if r.outlier else "") + ("^" if r.development else "") + ("?" if r.nics_assumed else "")
        lines.append(f"{r.system[:40 - len(mark)] + mark:40s} {r.family or '-':10s} {r.rows:4d} {eta:>5s} {t0:>6s} {r.shipped_pct:7.1f}% "
                     f"{r.held_out_pct:7.1f}%  {errs}")
    groups = sources(results)
    met, rows, mean, shipped = _headline(groups)
    lines.append("* the scenario's own cards miss its median row by more than 1.5x: predicted, never fitted on")
    lines.append("^ development for this check: its rows prompted the check's terms or bounds (`development_for`), "
                 "not a held-out figure")
    if any(r.nics_assumed for r in results):
        lines.append("? the source does not state its NIC count or rate: the scenario's are assumed (the file's system block and notes say from what)")
    if any(r.family is not None and r.eta is None for r in results):
        lines.append("- eta '-' beside a NIC family: no other non-outlier system of another source in that family, nothing to "
                     "fit on: its own cards' figures (counted as unfitted in the headline)")
    for name, why in excluded:
        lines.append(f"x {name}: not compared, out of the model's scope (simcluster.excluded_why): {' '.join(why.split())[:160]}"
                     + (" ... (--json)" if len(' '.join(why.split())) > 160 else ""))
    for g in (g for g in groups if len(g.systems) > 1):
        lines.append(f"= {g.source}: {len(g.systems)} files of one source ({', '.join(g.systems)}), left out of the fit together "
                     f"and counted once: {g.rows} rows {g.held_out_pct:.1f}% held out (shipped cards {g.shipped_pct:.1f}%)")
    others = [g for g in groups if not g.development]
    o_met, o_rows, o_mean, _ = _headline(others)
    lines.append(f"sources within 10%: {met} of {len(groups)} ({_split(groups)}); all {rows} rows: mean |error| {mean:.1f}% "
                 f"(shipped cards: {shipped:.1f}%); others (not ^): {o_met} of {len(others)} within 10% ({_split(others)}), "
                 f"{o_rows} rows {o_mean:.1f}%")
    lines.append(f"files counted one by one (before session 50): {_headline(results)[0]} of {len(results)} within 10% "
                 f"({_split(results)})")
    return "\n".join(lines) + "\n"


def _split(results: list) -> str:
    """Fitted (eta and t0 from the family's others: what this check tests) and unfitted (no network, or no other system to
    fit on: the shipped cards' figure, held out but not a test of the fit) counted apart (cold review A47 item 5)."""
    fitted = [r for r in results if r.fitted]
    unfitted = [r for r in results if not r.fitted]
    return (f"{_headline(fitted)[0]} of {len(fitted)} fitted, "
            f"{_headline(unfitted)[0]} of {len(unfitted)} unfitted: shipped cards")


def _headline(results: list) -> tuple[int, int, float, float]:
    """(results -- files or sources() -- within the target, rows, row-weighted mean |error| held out, the same with the
    shipped cards)."""
    rows = sum(r.rows for r in results)
    if not rows:
        return 0, 0, 0.0, 0.0
    return (sum(r.held_out_pct <= TARGET_PCT for r in results), rows,
            sum(r.held_out_pct * r.rows for r in results) / rows, sum(r.shipped_pct * r.rows for r in results) / rows)
