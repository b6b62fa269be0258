"""Published per-core rates of polled RDMA verbs against the per-operation host-cost model (hardware/verbs.py;
docs/models/nic-and-cpu.md, "RDMA verbs per operation"; issue 42, session 36).

The rows: calibration/published/host-stack-rdma-ops.yaml (ATC'16 and its code), plus the session-35 rows of
host-stack-rdma.yaml (heldout/rdma_published.py) at the operating points the new file records for them. Every compared
row is a cost per WQE posted by one core: measured = 1 / (the core's rate x WQEs per unit of rate) (`rate`, `cost`:
a point) or at most that (`bound`). The model's cost per WQE at the row's batching and signalling is

    t = wqe + doorbell / wqes_per_doorbell (+ completion / signal_every, 0 here: no row separates it)

Two unknowns: FITS names the declared fit subsets, each two rows of one source at two batchings (solved exactly,
verbs.solve). FIT (the ATC'16 sequencer) is the model's; every row outside a subset is predicted with it, never
tuned on. held_out_rows gives FIT's predictions of the held-out point rows as transport residuals (regime by the
row's transport, source = the publication)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from simcluster.hardware.verbs import VerbsCost, solve
from simcluster.heldout import rdma_published
from simcluster.units import parse_size

ROOT = rdma_published.ROOT
FILE = ROOT / "calibration" / "published" / "host-stack-rdma-ops.yaml"
COMPARE = ("rate", "cost", "bound", "none")
ROLES = ("fit", "held_out")
# the declared fit subsets: two rows of one experiment at two batchings each
FITS = {"atc16 sequencer": ("atc16-seq-1core-mmio", "atc16-seq-1core-batch-mq"),
        "atc16 HERD": ("atc16-herd-1core-mmio", "atc16-herd-1core-batch")}
FIT = "atc16 sequencer"
CARD = ROOT / "models" / "nic" / "rdma-polled-verbs-100g.yaml"   # the shipped card whose verbs block is FIT's model
SEQ_BATCH_6_CORES = 15.9   # responses per batch the paper prints at 6 cores: the sensitivity of the batch not printed at 1


@dataclass(frozen=True)
class OpRow:
    id: str
    source: str
    transport: str
    compare: str
    role: str
    batch: float               # WQEs per doorbell
    signal_every: float | None
    payload: float             # bytes per WQE
    measured: float            # core-seconds per WQE (a bound's upper limit)
    before: float              # the shipped card's (rdma_published.CARD) core-seconds per message

    def error(self, predicted: float) -> float:
        """predicted / measured - 1 (a bound: > 0 is a miss)."""
        return predicted / self.measured - 1

    def met(self, predicted: float) -> bool:
        return self.error(predicted) <= 0 if self.compare == "bound" else abs(self.error(predicted)) <= 0.10


def _positive(row: dict, key: str, where: str) -> float:
    from simcluster.errors import CalibrationError
    from simcluster.strict import short

    value = row.get(key)
    try:
        out = float(value) if not isinstance(value, bool) and isinstance(value, (int, float, str)) else None
    except ValueError:
        out = None
    if out is None or not 0 < out < float("inf"):
        raise CalibrationError(f"expected a number > 0, got {short(value)}", where=f"{where}.{key}")
    return out


def _size(row: dict, key: str, where: str) -> float:
    from simcluster.errors import CalibrationError, UnitError
    from simcluster.strict import short

    try:
        return float(parse_size(str(row.get(key))))
    except (UnitError, ValueError, TypeError):
        raise CalibrationError(f"expected a size (e.g. 8B), got {short(row.get(key))}", where=f"{where}.{key}") from None


def read(path: str | Path | None = None) -> list[OpRow]:
    """Every compared row (this file's, then the session-35 rows it gives operating points for). Bad input: one line
    naming `FILE: rows[i].KEY` (or `operating_points.ID.KEY`)."""
    from simcluster.cards import load_nic
    from simcluster.errors import CalibrationError
    from simcluster.strict import load_yaml, short

    path = Path(path or FILE)
    doc = load_yaml(path, CalibrationError, "published RDMA operation rows")
    rows, points = (doc.get("rows"), doc.get("operating_points")) if isinstance(doc, dict) else (None, None)
    if not isinstance(rows, list) or not isinstance(points or {}, dict):
        raise CalibrationError("expected `rows` (a list) and `operating_points` (a mapping)", where=str(path))
    card, _ = load_nic(rdma_published.CARD)
    out = []
    for i, r in enumerate(rows):
        where = f"{path}: rows[{i}]"
        if not isinstance(r, dict):
            raise CalibrationError(f"expected a mapping of the row's keys, got {short(r)}", where=where)
        if r.get("compare") not in COMPARE:
            raise CalibrationError(f"expected one of {', '.join(COMPARE)}, got {short(r.get('compare'))}", where=f"{where}.compare")
        if r["compare"] == "none":
            continue
        if r.get("role") not in ROLES:
            raise CalibrationError(f"expected one of {', '.join(ROLES)}, got {short(r.get('role'))}", where=f"{where}.role")
        if r.get("transport") not in rdma_published.TRANSPORTS:
            raise CalibrationError(f"expected one of {', '.join(rdma_published.TRANSPORTS)}, got {short(r.get('transport'))}",
                                   where=f"{where}.transport")
        cores = _positive(r, "cores", where)
        per_wqe = cores / (_positive(r, "requests_per_second", where) * _positive(r, "wqes_per_request", where))
        signal = None if r.get("signal_every") is None else _positive(r, "signal_every", where)
        out.append(OpRow(str(r.get("id", i)), str(r.get("source")), r["transport"], r["compare"], r["role"],
                         _positive(r, "wqes_per_doorbell", where), signal, _size(r, "payload", where), per_wqe,
                         card.per_message(_size(r, "payload", where))))
    old = {row.id: row for row in rdma_published.read()}
    for key, p in (points or {}).items():
        where = f"{path}: operating_points.{key}"
        if key not in old or old[key].compare not in ("cost", "bound") or not isinstance(p, dict):
            raise CalibrationError("expected a cost or bound row of host-stack-rdma.yaml and a mapping", where=where)
        row = old[key]
        signal = None if p.get("signal_every") is None else _positive(p, "signal_every", where)
        out.append(OpRow(key, row.source, row.transport, row.compare, str(p.get("role", "held_out")),
                         _positive(p, "wqes_per_doorbell", where), signal, _size(p, "payload", where), row.measured,
                         row.predicted))
    return out


def fit(rows: list[OpRow], subset: str = FIT, batch_of: dict[str, float] | None = None) -> VerbsCost:
    """The polled-verbs costs solved from FITS[subset] (`batch_of`: another batch for a row, the sensitivity)."""
    by = {r.id: r for r in rows}
    points = [((batch_of or {}).get(i, by[i].batch), by[i].measured) for i in FITS[subset]]
    wqe, doorbell = solve(points)
    return VerbsCost("polled", wqe, doorbell)


def predict(model: VerbsCost, row: OpRow) -> float:
    """Core-seconds per WQE at the row's batching and signalling."""
    return model.at(row.batch, row.signal_every).per_wqe(row.payload)


def held_out_rows(path: str | Path | None = None) -> list[dict]:
    """FIT's predictions of the held-out point rows (rate, cost) as transport residual rows, core-seconds per byte
    (trust/build.transport_residuals); source and bundle = 'published SOURCE'."""
    rows = read(path)
    model = fit(rows)
    return [{"bundle": f"published {r.source}", "source": f"published {r.source}", "transport": r.transport,
             "side": f"per core ({r.id})", "m": r.payload, "measured": r.measured / r.payload,
             "predicted": predict(model, r) / r.payload}
            for r in rows if r.role == "held_out" and r.compare in ("rate", "cost") and r.id not in FITS[FIT]]
