"""Published per-core rates of polled RDMA verbs against the per-operation host-cost model (hardware/verbs.py;
docs/models/nic-and-cpu.md, "RDMA verbs per operation"; issue 42, session 36).

The rows: calibration/published/host-stack-rdma-ops.yaml (ATC'16 and its code), plus the session-35 rows of
host-stack-rdma.yaml (heldout/rdma_published.py) at the operating points the new file records for them, plus the
rows of the files in EXTRA (recorded later, every compared row held out: host-stack-rdma-ops-2.yaml, session 39). Every compared
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
from simcluster.heldout.rdma_published import SIZE, _key
from simcluster.units import parse_size

ROOT = rdma_published.ROOT
FILE = ROOT / "calibration" / "published" / "host-stack-rdma-ops.yaml"
# files of rows recorded after the model (same `rows` schema; role held_out only, no operating_points), read with FILE
EXTRA = (ROOT / "calibration" / "published" / "host-stack-rdma-ops-2.yaml",)
COMPARE = ("rate", "cost", "bound", "none")
ROLES = ("fit", "held_out")
# the declared fit subsets: two rows of one experiment at two batchings each
FITS = {"atc16 sequencer": ("atc16-seq-1core-mmio", "atc16-seq-1core-batch-mq"),
        "atc16 HERD": ("atc16-herd-1core-mmio", "atc16-herd-1core-batch")}
FIT = "atc16 sequencer"
CARD = ROOT / "models" / "nic" / "rdma-polled-verbs-100g.yaml"   # the shipped card whose verbs block is FIT's model
# a source that is another's code or testbed: its rows are that publication's for the band (one source, not two)
TESTBED = {"rdma_bench": "atc16", "fasst": "atc16"}   # fasst: the ATC'16 authors' FaSST code notes, their clusters
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
    file: str = ""             # the file the row is recorded in (its name)

    def error(self, predicted: float) -> float:
        """predicted / measured - 1 (a bound: > 0 is a miss): rdma_published's rule, one place."""
        return rdma_published.error_of(predicted, self.measured)

    def met(self, predicted: float) -> bool:
        return bool(rdma_published.met_of(self.compare, self.error(predicted)))


def _one_of(value, allowed, where: str, what: str = "") -> str:
    from simcluster.errors import CalibrationError
    from simcluster.strict import short

    if not isinstance(value, str) or value not in allowed:
        raise CalibrationError(f"expected one of {', '.join(allowed)}{what}, got {short(value)}", where=where)
    return value


def _point(p: dict, row, where: str) -> tuple[float, float | None, float]:
    """(wqes_per_doorbell, signal_every or None, payload bytes) of a row or operating point (rdma_published._key:
    a number > 0, a size > 0)."""
    p = {**p, "compare": row}
    signal = None if p.get("signal_every") is None else _key(p, "signal_every", where)
    return _key(p, "wqes_per_doorbell", where), signal, _key(p, "payload", where, parse_size, SIZE)


def read(path: str | Path | None = None, extra: tuple | None = None) -> list[OpRow]:
    """Every compared row: `path`'s (FILE), then the session-35 rows it gives operating points for, then each file of
    `extra`'s (EXTRA). Bad input: one line naming `FILE: rows[i].KEY`, `operating_points.ID.KEY` or the FITS subset
    the files cannot give."""
    from simcluster.cards import load_nic
    from simcluster.errors import CalibrationError
    from simcluster.strict import short

    path = Path(path or FILE)
    card, _ = load_nic(rdma_published.CARD)
    out, seen = [], {}

    def add(row: OpRow, where: str) -> None:
        if row.id in seen:
            file, short_where = seen[row.id]
            also = short_where if file == row.file else f"{file}: {short_where}"
            raise CalibrationError(f"duplicate id {row.id} (also {also})", where=where)
        seen[row.id] = (row.file, where.split(": ", 1)[-1])
        out.append(row)

    doc, points = _rows_of(path, card, add, main=True)
    old = {row.id: row for row in rdma_published.read()}
    for key, p in (points or {}).items():
        where = f"{path}: operating_points.{key}"
        if key not in old or old[key].compare not in ("cost", "bound") or not isinstance(p, dict):
            raise CalibrationError("expected a cost or bound row of host-stack-rdma.yaml and a mapping", where=where)
        row = old[key]
        role = _one_of(p.get("role", "held_out"), ROLES, f"{where}.role")
        add(OpRow(key, row.source, row.transport, row.compare, role, *_point(p, row.compare, where), row.measured,
                  row.predicted, path.name), where)
    for other in (EXTRA if extra is None else extra):
        _rows_of(Path(other), card, add, main=False)
    usage = doc.get("simcluster") if isinstance(doc.get("simcluster"), dict) else {}
    listed = usage.get("rows_not_held_out") or {}
    _check_fits(out, path, sorted(listed) if isinstance(listed, dict) else [short(listed)])
    return out


def _rows_of(path: Path, card, add, main: bool) -> tuple[dict, dict]:
    """Add the compared rows of one file (`main`: FILE, which may hold the fit rows and operating points; else an
    EXTRA file, held out only); the parsed document and its operating points."""
    from simcluster.errors import CalibrationError
    from simcluster.strict import load_yaml, short

    doc = load_yaml(path, CalibrationError, "published RDMA operation rows")
    rows, points = (doc.get("rows"), doc.get("operating_points")) if isinstance(doc, dict) else (None, None)
    if not isinstance(rows, list) or not isinstance(points or {}, dict):
        raise CalibrationError("expected `rows` (a list) and `operating_points` (a mapping)", where=str(path))
    if not main and points:
        raise CalibrationError("a file of rows recorded later gives no operating points (only FILE's rows are "
                               "session 35's)", where=f"{path}: operating_points")
    sources = tuple(doc.get("sources") or {}) if isinstance(doc.get("sources") or {}, dict) else ()
    for i, r in enumerate(rows):
        where = f"{path}: rows[{i}]"
        if not isinstance(r, dict):
            raise CalibrationError(f"expected a mapping of the row's keys, got {short(r)}", where=where)
        compare = _one_of(r.get("compare"), COMPARE, f"{where}.compare")
        rid = r.get("id")
        if not isinstance(rid, str) or not rid.strip():
            raise CalibrationError(f"expected the row's id (a non-empty string), got {short(rid)}", where=f"{where}.id")
        if compare == "none":
            continue
        role = _one_of(r.get("role"), ROLES if main else ("held_out",), f"{where}.role",
                       "" if main else " (a file of rows recorded after the fit)")
        source = _one_of(r.get("source"), sources, f"{where}.source", " (the file's `sources`)")
        transport = _one_of(r.get("transport"), rdma_published.TRANSPORTS, f"{where}.transport")
        per_wqe = _key(r, "cores", where) / (_key(r, "requests_per_second", where) * _key(r, "wqes_per_request", where))
        batch, signal, payload = _point(r, compare, where)
        add(OpRow(rid, source, transport, compare, role, batch, signal, payload, per_wqe, card.per_message(payload),
                  path.name), where)
    return doc, points


def not_compared(paths: tuple | None = None) -> list[tuple[str, str, str]]:
    """(file name, id, why) of every `compare: none` row of the EXTRA files (the read-out lists them)."""
    from simcluster.errors import CalibrationError
    from simcluster.strict import load_yaml

    out = []
    for path in (EXTRA if paths is None else paths):
        doc = load_yaml(Path(path), CalibrationError, "published RDMA operation rows")
        out += [(Path(path).name, r.get("id"), str(r.get("why", "")).strip()) for r in doc.get("rows") or []
                if isinstance(r, dict) and r.get("compare") == "none"]
    return out


def _check_fits(rows: list[OpRow], path: Path, not_held_out: list[str]) -> None:
    """Every FITS subset names two compared point rows the model can be solved from; role `fit` is FIT's rows and
    the file's simcluster.rows_not_held_out lists exactly them (the file is partly held out)."""
    from simcluster.errors import CalibrationError

    by = {r.id: r for r in rows}
    for name, ids in FITS.items():
        bad = [i for i in ids if i not in by or by[i].compare not in ("rate", "cost")]
        if bad:
            raise CalibrationError(f"FITS[{name!r}] names {', '.join(bad)}: not a compared point row (rate, cost) of "
                                   "the file", where=str(path))
        try:
            fit(rows, name)
        except ValueError as exc:
            raise CalibrationError(f"FITS[{name!r}] ({', '.join(ids)}) contradicts the model: {exc}",
                                   where=str(path)) from None
    fitted = sorted(r.id for r in rows if r.role == "fit")
    if fitted != sorted(FITS[FIT]):
        raise CalibrationError(f"role: fit is FIT's rows ({', '.join(FITS[FIT])}), got {', '.join(fitted) or 'none'}",
                               where=str(path))
    if not_held_out != fitted:
        raise CalibrationError(f"expected the role: fit rows ({', '.join(fitted)}), got {', '.join(not_held_out) or 'none'}",
                               where=f"{path}: simcluster.rows_not_held_out")


def fit(rows: list[OpRow], subset: str = FIT, batch_of: dict[str, float] | None = None) -> VerbsCost:
    """The polled-verbs costs solved from FITS[subset] (`batch_of`: another batch for a row, the sensitivity)."""
    by = {r.id: r for r in rows}
    points = [((batch_of or {}).get(i, by[i].batch), by[i].measured) for i in FITS[subset]]
    wqe, doorbell = solve(points)
    return VerbsCost("polled", wqe, doorbell)


def predict(model: VerbsCost, row: OpRow) -> float:
    """Core-seconds per WQE at the row's batching and signalling."""
    return model.at(row.batch, row.signal_every).per_wqe(row.payload)


def testbed(source: str) -> str:
    """The publication whose testbed a source's rows come from (TESTBED), the source itself otherwise."""
    return TESTBED.get(source, source)


def held_out_rows(path: str | Path | None = None) -> list[dict]:
    """FIT's predictions of the held-out point rows (rate, cost) as transport residual rows, core-seconds per byte
    (trust/build.transport_residuals); source and bundle = 'published TESTBED': a row of the fit's own paper or code
    (HERD's, ATC'16) carries the fit's source, so it never counts as a second source toward the band's rule
    (trust/table.MIN_SOURCES), and its label says it is a same-testbed row."""
    rows = read(path)
    model = fit(rows)
    fit_testbeds = {testbed(r.source) for r in rows if r.id in FITS[FIT]}
    out = []
    for r in rows:
        if r.role != "held_out" or r.compare not in ("rate", "cost") or r.id in FITS[FIT]:
            continue
        bed = testbed(r.source)
        same = "; same testbed as the fit" if bed in fit_testbeds else ""
        out.append({"bundle": f"published {bed}", "source": f"published {bed}", "transport": r.transport,
                    "side": f"per core ({r.id}{same})", "m": r.payload, "measured": r.measured / r.payload,
                    "predicted": predict(model, r) / r.payload})
    return out
