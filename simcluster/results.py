"""Typed results: what each job of a scenario returns. Each has `to_json()` (SI units, keys with unit suffixes);
report/results.py renders them as text. The library computes and returns these; only the CLI prints or writes."""

from __future__ import annotations

from dataclasses import dataclass, field

from simcluster.collectives.model import Prediction


def _rows(predictions: list[Prediction]) -> list[dict]:
    return [{"size_B": p.size_bytes, "time_s": p.time_s, "algbw_Bps": p.algbw_Bps, "busbw_Bps": p.busbw_Bps,
             "protocol": p.protocol, **({"algorithm": p.algorithm} if hasattr(p, "algorithm") else {})}
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

    @property
    def skipped(self) -> list[str]:
        return self.measured_skipped

    def to_json(self) -> dict:
        from simcluster.fit.validate import summary

        out = {"kind": "collective_sweep", "op": self.job.op, "ranks": self.job.ranks, "engine": self.job.engine,
               "card": self.card_path, "rows": _rows(self.predictions)}
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

    def to_json(self) -> dict:
        return {"kind": "concurrent", "op": self.job.op, "size_B": self.job.size_bytes, "jobs": [
            {"nodes": r.nodes, "time_alone_s": r.alone.time_s, "time_shared_s": r.shared.time_s,
             "slowdown": r.shared.time_s / r.alone.time_s, "algorithm": r.shared.algorithm,
             "network_alone_Bps": r.network_alone_Bps, "network_shared_Bps": r.network_shared_Bps,
             "ecmp_collisions": r.ecmp_collisions} for r in self.runs]}


@dataclass(frozen=True)
class QperfResult:
    """qperf between two nodes predicted from the NIC card: test -> bytes/s (bw) or seconds (lat)."""

    job: object
    nic_card: str
    predicted: dict[str, float]
    skipped: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"kind": "qperf", "nic_card": self.nic_card, "predicted": self.predicted,
                "units": {test: "B/s" if test.endswith("_bw") else "s" for test in self.predicted}}


@dataclass(frozen=True)
class TrainingResult:
    """A data-parallel training job (training/predict.py's TrainingPrediction inside)."""

    job: object
    prediction: object
    skipped: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"kind": "training", **self.prediction.as_json()}


@dataclass(frozen=True)
class LlmTrainingResult:
    """An LLM training job (llm/predict.py's LlmResult inside): step time, throughput, memory, breakdown."""

    job: object
    prediction: object
    skipped: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"kind": "llm_training", **self.prediction.to_json()}


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
