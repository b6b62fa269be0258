"""Typed results: what each job of a scenario returns. Each has `to_json()` (SI units, keys with unit suffixes);
report/results.py renders them as text. The library computes and returns these; only the CLI prints or writes."""

from __future__ import annotations

from dataclasses import dataclass, field

from simcluster.collectives.model import Prediction
from simcluster.trust.band import MachineTrust


def _rows(predictions: list[Prediction], machine: MachineTrust) -> list[dict]:
    from simcluster.trust.band import annotate_collective

    return [annotate_collective({"size_B": p.size_bytes, "time_s": p.time_s, "algbw_Bps": p.algbw_Bps, "busbw_Bps": p.busbw_Bps,
                                 "protocol": p.protocol, **({"algorithm": p.algorithm} if hasattr(p, "algorithm") else {}),
                                 **({"binding_limit": p.breakdown["binding_limit"]} if "binding_limit" in getattr(p, "breakdown", {}) else {})},
                                p, machine)
            for p in predictions]


@dataclass(frozen=True)
class SweepResult:
    """A collective sweep: one prediction per size, and (one node) the measurement beside it."""

    job: object                                   # scenario.CollectiveSweep
    card_path: str
    card_name: str
    predictions: list[Prediction]
    measured: object | None = None                # fit.validate.OpValidation, when the job names a measurement
    measured_skipped: list[str] = field(default_factory=list)
    description: str = ""                         # nodes, NICs, fabric; the algorithm chosen
    # what its trust reads of the machine (build.machine_trust; one node: the card's NVLink, the GPU it names); no default:
    # a result built without one is refused, not judged as some default machine's answer (cold review B53 item 11)
    machine_trust: MachineTrust = field(kw_only=True)

    @property
    def skipped(self) -> list[str]:
        return self.measured_skipped

    def to_json(self) -> dict:
        from simcluster.fit.validate import summary

        out = {"kind": "collective_sweep", "op": self.job.op, "ranks": self.job.ranks, "engine": self.job.engine,
               "card": self.card_path, "rows": _rows(self.predictions, self.machine_trust)}
        if self.job.measured is not None:
            m = self.measured
            out["measured"] = None if m is None else {
                "source": str(self.job.measured), "cuda_graph": m.cuda_graph, "rounds": m.rounds, "basis": m.basis,
                "summary": summary(m.rows),
                "rows": [{"size_B": r.size_bytes, "measured_s": r.measured_s, "predicted_s": r.predicted_s,
                          "error_pct": r.error * 100} for r in m.rows]}
        return out


@dataclass(frozen=True)
class ConcurrentRun:
    nodes: list[int]
    alone: Prediction
    shared: Prediction
    network_alone_Bps: float
    network_shared_Bps: float
    ecmp_collisions: int


@dataclass(frozen=True)
class ConcurrentResult:
    """Several collectives at once on one fabric: each alone and all together."""

    job: object                                   # scenario.ConcurrentJob
    runs: list[ConcurrentRun]
    skipped: list[str] = field(default_factory=list)
    machine_trust: MachineTrust = field(kw_only=True)   # what its trust reads of the machine (build.machine_trust)

    def to_json(self) -> dict:
        from simcluster.trust.band import annotate, collective_trust

        return {"kind": "concurrent", "op": self.job.op, "size_B": self.job.size_bytes, "jobs": [
            annotate({"nodes": r.nodes, "time_alone_s": r.alone.time_s, "time_shared_s": r.shared.time_s,
                      "slowdown": r.shared.time_s / r.alone.time_s, "algorithm": r.shared.algorithm,
                      "network_alone_Bps": r.network_alone_Bps, "network_shared_Bps": r.network_shared_Bps,
                      "ecmp_collisions": r.ecmp_collisions}, collective_trust(r.shared, self.machine_trust),
                     times=("time_alone_s", "time_shared_s")) for r in self.runs]}


@dataclass(frozen=True)
class QperfResult:
    """qperf between two nodes predicted from the NIC card: test -> bytes/s (bw) or seconds (lat)."""

    job: object
    nic_card: str
    predicted: dict[str, float]
    skipped: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        from simcluster.trust.band import least_validated, qperf_trusts

        trusts = qperf_trusts(self.predicted)
        bands = {test: trusts[test].rate_band(v) if test.endswith("_bw") else trusts[test].time_band(v)
                 for test, v in self.predicted.items()}
        out = {"kind": "qperf", "nic_card": self.nic_card, "predicted": self.predicted, "predicted_band": bands,
               "units": {test: "B/s" if test.endswith("_bw") else "s" for test in self.predicted},
               "validation_by_test": {test: t.to_json() for test, t in trusts.items()}}
        if trusts:
            out["validation"] = least_validated(trusts.values()).to_json()
        return out


@dataclass(frozen=True)
class TrainingResult:
    """A data-parallel training job (predict_training.py's TrainingPrediction inside)."""

    job: object
    prediction: object
    skipped: list[str] = field(default_factory=list)
    machine_trust: MachineTrust = field(kw_only=True)  # what its trust reads of the machine (build.machine_trust)

    @property
    def trust(self):
        from simcluster.trust.band import ddp_trust

        return ddp_trust(self.prediction.ranks, self.prediction.nodes, self.machine_trust)

    def to_json(self) -> dict:
        from simcluster.trust.band import annotate

        return annotate({"kind": "training", **self.prediction.as_json()}, self.trust,
                        times=("step_time_s", "time_to_train_s"), rates=("samples_per_s",))


@dataclass(frozen=True)
class LlmTrainingResult:
    """An LLM training job (llm/predict.py's LlmResult inside): step time, throughput, memory, breakdown."""

    job: object
    prediction: object
    skipped: list[str] = field(default_factory=list)
    goodput: object = None      # llm/goodput.py's GoodputResult when the job has a reliability: block

    def to_json(self) -> dict:
        extra = self.goodput.to_json() if self.goodput is not None else {}
        band = self.days_to_train_band()
        return {"kind": "llm_training", **self.prediction.to_json(), **extra, **({"days_to_train_band": band} if band else {})}

    def days_to_train_band(self) -> list[float] | None:
        """The days to train over the step time's band: the productive steps scale with it, the interruptions'
        checkpoint and restart time is held as predicted."""
        g, p = self.goodput, self.prediction
        if g is None or g.days_to_train is None or p.regime is None or p.trust.rho is None:
            return None
        productive = g.productive_s / 86400
        return [g.days_to_train + productive * (rho - 1) for rho in p.trust.rho]


@dataclass(frozen=True)
class ScenarioResult:
    """Every job of one scenario (one variant of it)."""

    name: str
    seed: int
    variant: str
    jobs: list

    @property
    def skipped(self) -> list[str]:
        return [line for job in self.jobs for line in job.skipped]

    def to_json(self) -> dict:
        return {**({"variant": self.variant} if self.variant else {}), "jobs": [j.to_json() for j in self.jobs]}


def scenario_json(results: list[ScenarioResult]) -> dict:
    first = results[0]
    if len(results) == 1 and not first.variant:
        return {"scenario": first.name, "seed": first.seed, "jobs": first.to_json()["jobs"]}
    return {"scenario": first.name, "seed": first.seed, "variants": [r.to_json() for r in results]}


@dataclass(frozen=True)
class ReferenceRow:
    """One row of a reference measurement beside its prediction (simcluster/reference/). `metric` names the compared
    quantity with its SI unit (busbw_Bps, tokens_per_s, step_time_s, flops_per_gpu_per_s); `error` is a fraction,
    + = predicted faster (a step time's sign is flipped); `unavailable` says why a row has no prediction (the source
    does not give what the model needs)."""

    source: str
    run: int
    configuration: str
    metric: str
    measured: float | None
    predicted: float | None
    error: float | None
    held_out: bool
    detail: str = ""
    unavailable: str = ""
    regime: str = ""              # trust/regime.py's key of the row's class of answers
    scale: float | None = None    # the row's GPUs (the regime's validated range is read from its rows)
    gpu: str = ""                 # the GPU model the row ran on (trust/regime.gpu_model of the source's system.gpu)
    source_group: str = ""        # the source the bands count it as when not its own file (published.Published.source_group)
    excluded: bool = False        # out of the model's scope (the file's simcluster.excluded_why): predicted, never compared
    family: str = ""              # issue 44's published family of an LLM row (trust/regime.published_family)
    development_for: str = ""     # why a row its file holds out is development (a term adopted on its error: llm/moe_router_term)

    @property
    def time_ratio(self) -> float | None:
        """measured / predicted as a time (a rate's ratio inverted): > 1 when the truth is slower than predicted."""
        if self.measured is None or self.predicted is None or self.measured <= 0 or self.predicted <= 0:
            return None
        return self.measured / self.predicted if self.metric.startswith("step_time") else self.predicted / self.measured

    def to_json(self) -> dict:
        return {"source": self.source, "run": self.run, "configuration": self.configuration, "metric": self.metric,
                "measured": self.measured, "predicted": self.predicted,
                "error_pct": None if self.error is None else self.error * 100, "held_out": self.held_out,
                "detail": self.detail, **({"unavailable": self.unavailable} if self.unavailable else {}),
                **({"regime": self.regime, "scale": self.scale} if self.regime else {}), **({"gpu": self.gpu} if self.gpu else {}),
                **({"source_group": self.source_group} if self.source_group else {}),
                **({"excluded": True} if self.excluded else {}), **({"family": self.family} if self.family else {}),
                **({"development_for": self.development_for} if self.development_for else {})}


@dataclass(frozen=True)
class ReferenceValidation:
    """Predictions beside published measurements: every row, and per source its held-out status and why."""

    what: str                                     # "published nccl" or "published llm"
    target: float                                 # the |error| a source should stay within (fraction)
    rows: list[ReferenceRow]
    sources: dict[str, str]                       # source -> why it is (not) held out, or why it was not predicted
    skipped: list[str] = field(default_factory=list)   # rows whose prediction failed (exit 3)

    def summary(self) -> dict[str, dict]:
        """source -> rows compared, mean and max |error| (%), rows within the target, held out (yes/no/partly, or
        excluded: every row out of the model's scope)."""
        out = {}
        for source in self.sources:
            rows = [r for r in self.rows if r.source == source and r.error is not None]
            errs = [abs(r.error) for r in rows]
            held = {r.held_out for r in self.rows if r.source == source}
            excluded = [r for r in self.rows if r.source == source and r.excluded]
            status = "partly" if len(held) > 1 else ("yes" if held == {True} else "no" if held else "-")
            out[source] = {"rows": len(errs), "mean_abs_error_pct": sum(errs) / len(errs) * 100 if errs else None,
                           "max_abs_error_pct": max(errs) * 100 if errs else None,
                           "within_target": sum(e <= self.target for e in errs),
                           "held_out": "excluded" if excluded and len(excluded) == sum(r.source == source for r in self.rows)
                           else status,
                           "why": self.sources[source]}
        return out

    def why(self, source: str) -> str:
        """Why the source's rows are (not) held out, said the way the text summary says it: where rows carry
        development_for (a term adopted on their errors), that reason first, naming the runs when only some of the
        file's rows carry it, then the file's own why ("file: ...")."""
        rows = [r for r in self.rows if r.source == source]
        dev = [r for r in rows if r.development_for]
        if not dev:
            return self.sources[source]
        reasons = "; ".join(dict.fromkeys(r.development_for for r in dev))
        runs = "" if len(dev) == len(rows) else f"runs {', '.join(str(r.run) for r in dev)}: "
        return f"{runs}{reasons}; file: {self.sources[source]}"

    def excluded(self) -> tuple[int, int]:
        """(rows, files) out of the model's scope (ReferenceRow.excluded): predicted, never compared."""
        rows = [r for r in self.rows if r.excluded]
        return len(rows), len({r.source for r in rows})

    def to_json(self) -> dict:
        rows, files = self.excluded()
        return {"kind": self.what, "target_pct": self.target * 100, "summary": self.summary(),
                "rows": [r.to_json() for r in self.rows], "skipped": self.skipped,
                **({"excluded_rows": rows, "excluded_files": files} if rows else {})}


@dataclass(frozen=True)
class DecisionSource:
    """NCCL's decisions in one tuning log against the decision model's (collectives/nccl_tuner.py)."""

    source: str
    configuration: str
    decisions: int                                # distinct (op, size) calls NCCL logged
    agree: int                                    # the model picks the same algorithm and protocol
    channels_agree: int
    held_out: bool
    misses: list[str] = field(default_factory=list)
    unavailable: str = ""

    def to_json(self) -> dict:
        return {"source": self.source, "configuration": self.configuration, "decisions": self.decisions,
                "agree": self.agree, "channels_agree": self.channels_agree, "held_out": self.held_out,
                "misses": self.misses, **({"unavailable": self.unavailable} if self.unavailable else {})}


@dataclass(frozen=True)
class DecisionFact:
    """One fact a posted NCCL log states (a per-call choice, NCCL's own estimate, a channel count) beside the model's."""

    fact: str                                     # 'all_reduce 65536 B: algorithm/protocol', 'coll channels', ...
    line: int                                     # the log's line
    logged: str
    model: str
    verdict: str                                  # agree | disagree | not compared
    note: str = ""
    logged_s: float | None = None                 # where the fact is a time: the logged and the model's, seconds
    model_s: float | None = None

    def to_json(self) -> dict:
        times = {k: v for k, v in (("logged_s", self.logged_s), ("model_s", self.model_s)) if v is not None}
        return {"fact": self.fact, "line": self.line, "logged": self.logged, "model": self.model, **times,
                "verdict": self.verdict, **({"note": self.note} if self.note else {})}


@dataclass(frozen=True)
class PublishedDecisionLog:
    """A log someone posted (calibration/published/nccl-decisions-*/): every fact against the decision model."""

    source: str                                   # folder/file
    citation: str
    topology: str                                 # what the model was given
    nccl_version: str                             # '' = not stated
    same_version: bool                            # the log's NCCL has the model's (2.28) rules
    held_out: bool
    facts: list[DecisionFact]
    version_note: str = ""                        # how the log's NCCL rules differ from the model's 2.28

    def counts(self) -> tuple[int, int]:
        compared = [f for f in self.facts if f.verdict != "not compared"]
        return len(compared), sum(f.verdict == "agree" for f in compared)

    def to_json(self) -> dict:
        compared, agree = self.counts()
        return {"source": self.source, "citation": self.citation, "topology": self.topology,
                "nccl_version": self.nccl_version or None, "same_version": self.same_version, "version_note": self.version_note,
                "held_out": self.held_out,
                "compared": compared, "agree": agree, "facts": [f.to_json() for f in self.facts]}


@dataclass(frozen=True)
class DecisionValidation:
    folder: str
    sources: list[DecisionSource]
    provenance: str                               # what says which logs the model was written against
    skipped: list[str] = field(default_factory=list)
    published: list[PublishedDecisionLog] = field(default_factory=list)

    def published_totals(self) -> dict:
        """Facts of posted logs compared and agreeing: all, held out, and split by whether the log's NCCL has the
        model's rules (a log of another or an unstated version is counted apart, never silently)."""
        out = {}
        for label, keep in (("all", lambda s: True), ("held_out", lambda s: s.held_out),
                            ("same_version", lambda s: s.same_version), ("other_version", lambda s: not s.same_version)):
            pairs = [s.counts() for s in self.published if keep(s)]
            out[label] = {"compared": sum(c for c, _ in pairs), "agree": sum(a for _, a in pairs)}
        return out

    def totals(self) -> dict:
        checked = [s for s in self.sources if not s.unavailable]
        return {"logs": len(self.sources), "logs_with_decisions": len(checked), "decisions": sum(s.decisions for s in checked),
                "agree": sum(s.agree for s in checked),
                "channels_agree": sum(s.channels_agree for s in checked),
                "held_out_decisions": sum(s.decisions for s in checked if s.held_out),
                "held_out_agree": sum(s.agree for s in checked if s.held_out)}

    def to_json(self) -> dict:
        return {"kind": "nccl decisions", "folder": self.folder, "provenance": self.provenance, "totals": self.totals(),
                "sources": [s.to_json() for s in self.sources], "skipped": self.skipped,
                "published": [p.to_json() for p in self.published], "published_totals": self.published_totals()}
