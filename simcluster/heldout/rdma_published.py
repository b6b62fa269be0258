"""Published per-core RDMA host costs and rates (calibration/published/host-stack-rdma.yaml) against the host-stack
model as shipped (hardware/nic.py, hardware/host_stack.py; docs/models/nic-and-cpu.md, "Published RDMA figures").

No machine this project is lent has an RDMA device (nic-and-cpu-findings.md, session 35), so the RDMA regimes of the
transport family (rdma_rc, rdma_ud) can be checked only against other people's figures. Each row of the file says how
it is compared (`compare`):

  cost   host core-seconds per message on one side, a point: measured = 1 / (rate per core x messages per unit of
         rate), predicted = NicParams.cpu_per_byte(m, side) x m (an RDMA card prices both sides alike)
  bound  a single-threaded tool's message rate: one core did all its posting and polling, so the cost per message is
         at most 1 / rate (the lower rate where the source prints two); met when the predicted cost is within it
  rate   a throughput at the stated cores and one stream: host_stack.on_host with Host(cores)
  none   not compared (the row's `why`)

The model's RDMA cost is the card's `cpu_per_message` (a work request and its completion) and no per-byte term.
Every row is predicted with CARD, seed 004's InfiniBand EDR card (1.17 us per message, interrupt-driven completions:
the session-35 model of these rows); the polled-verbs card (rdma-polled-verbs-100g) prices them per operation in
heldout/rdma_ops.py; every other shipped RDMA card prices 0 s per message (other_rdma_cards), so its host cost never
binds.
held_out_rows gives the `cost` rows as transport-family residual rows (trust/build.transport_residuals): core-seconds
per byte, measured and predicted, source = the publication."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from simcluster.units import parse_bandwidth, parse_size

ROOT = Path(__file__).resolve().parent.parent.parent
TRANSPORTS = ("rdma_rc", "rdma_ud")   # the transport families a compared row may name (trust/regime)
FILE = ROOT / "calibration" / "published" / "host-stack-rdma.yaml"
CARD = ROOT / "models" / "nic" / "seed004-ib-edr-offload.yaml"
COMPARE = ("cost", "bound", "rate", "none")


@dataclass(frozen=True)
class Row:
    id: str
    source: str
    transport: str
    compare: str
    message_bytes: float | None
    measured: float | None      # cost, bound: core-seconds per message; rate: bytes/s
    predicted: float | None     # the same unit
    why: str = ""

    @property
    def error(self) -> float | None:
        return error_of(self.predicted, self.measured)

    @property
    def met(self) -> bool | None:
        return met_of(self.compare, self.error)


def error_of(predicted: float | None, measured: float | None) -> float | None:
    """predicted / measured - 1 (cost and rate rows); a bound row's ratio predicted / bound - 1 (> 0: missed); None
    where either is missing."""
    return None if not measured or predicted is None else predicted / measured - 1


def met_of(compare: str, error: float | None) -> bool | None:
    """The rule of every published RDMA row (this file's and heldout/rdma_ops.py's): within 10% (cost, rate), within
    the bound (bound); None where not compared."""
    if error is None:
        return None
    return error <= 0 if compare == "bound" else abs(error) <= 0.10


def _number(value) -> float:
    """A finite number > 0, or a string of one (PyYAML reads `10.0e6` as a string), never a boolean; else ValueError."""
    from simcluster.strict import positive

    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError("not a number")
    return positive(float(value))


def _key(row: dict, key: str, where: str, parse=_number, expected: str = "a number > 0"):
    """row[key] parsed; missing, or refused by `parse`: one line naming `where.KEY` and what was expected."""
    from simcluster.errors import CalibrationError, UnitError
    from simcluster.strict import short

    value = row.get(key)
    if value is None:
        raise CalibrationError(f"`{key}` is missing, needed by compare: {row.get('compare')}", where=f"{where}.{key}")
    try:
        out = parse(value)
    except (UnitError, ValueError, TypeError, ArithmeticError):
        out = None
    if out is None or not out > 0:
        raise CalibrationError(f"expected {expected}, got {short(value)}", where=f"{where}.{key}")
    return out


SIZE, BANDWIDTH = "a message size > 0 (e.g. 32B, 8MB)", "a throughput > 0 (e.g. 75Gbps)"


def read(path: str | Path | None = None, card: str | Path | None = None) -> list[Row]:
    """Every row of the published file, compared with `card` (default CARD) as the row's `compare` says. Bad input:
    one line naming `FILE: rows[i].KEY` and what was expected."""
    from simcluster.cards import load_nic
    from simcluster.errors import CalibrationError
    from simcluster.hardware.host_stack import Host, on_host
    from simcluster.strict import load_yaml, short

    path = Path(path or FILE)
    doc = load_yaml(path, CalibrationError, "published RDMA rows")
    rows = (doc.get("rows") if isinstance(doc, dict) else None) or []
    if not isinstance(rows, list):
        raise CalibrationError(f"expected a list of rows, got {type(rows).__name__}", where=f"{path}: rows")
    nic, _ = load_nic(card or CARD)
    out = []
    for i, r in enumerate(rows):
        where = f"{path}: rows[{i}]"
        if not isinstance(r, dict):
            raise CalibrationError(f"expected a mapping of the row's keys, got {type(r).__name__} {short(r)}", where=where)
        kind = r.get("compare")
        if kind not in COMPARE:
            raise CalibrationError(f"expected one of {', '.join(COMPARE)}, got {short(kind)}", where=f"{where}.compare")
        source, transport = r.get("source"), r.get("transport")
        if not isinstance(source, str) or not source.strip():
            raise CalibrationError(f"expected the source's name (a non-empty string), got {short(source)}", where=f"{where}.source")
        if kind != "none" and transport not in TRANSPORTS:
            raise CalibrationError(f"expected one of {', '.join(TRANSPORTS)} (a compared row), got {short(transport)}",
                                   where=f"{where}.transport")
        m = _key(r, "message", where, parse_size, SIZE) if r.get("message") is not None or kind != "none" else None
        measured = predicted = None
        if kind == "cost":
            per_core = _key(r, "rpcs_per_second", where) * _key(r, "messages_per_rpc_per_core", where)
            measured, predicted = 1.0 / per_core, nic.cpu_per_byte(m) * m
        elif kind == "bound":
            rates = [_key(r, "msg_rate_Mpps", where) * 1e6]
            if r.get("iterations") is not None or r.get("duration_s") is not None:
                rates.append(_key(r, "iterations", where) / _key(r, "duration_s", where))
            measured, predicted = 1.0 / min(rates), nic.cpu_per_byte(m) * m
        elif kind == "rate":
            measured = _key(r, "throughput", where, parse_bandwidth, BANDWIDTH)
            predicted, _ = on_host(nic, Host(cores=_key(r, "cores", where)), streams=1, message_bytes=m)
        out.append(Row(str(r.get("id", i)), source, str(transport), kind, m, measured, predicted,
                       str(r.get("why", ""))))
    return out


def other_rdma_cards(models: str | Path | None = None) -> list[tuple[str, float]]:
    """(card name, host core-seconds per message at the card's message size: cpu_per_message plus a verbs block's
    cost, hardware/verbs.py) of every shipped RDMA NIC card other than CARD."""
    from simcluster.cards import load_nic

    out = []
    for path in sorted(Path(models or ROOT / "models" / "nic").glob("*.yaml")):
        nic, card = load_nic(path)
        if nic.transport == "rdma" and path.name != CARD.name:
            out.append((card.get("name", path.stem), nic.per_message(nic.message_bytes)))
    return out


def held_out_rows(path: str | Path | None = None) -> list[dict]:
    """The `cost` rows as transport residual rows: {bundle, source, transport, side, m, measured, predicted} in
    core-seconds per byte (trust/build.transport_residuals); source and bundle = 'published SOURCE'."""
    return [{"bundle": f"published {r.source}", "source": f"published {r.source}", "transport": r.transport,
             "side": f"per core ({r.id})", "m": r.message_bytes, "measured": r.measured / r.message_bytes,
             "predicted": r.predicted / r.message_bytes}
            for r in read(path) if r.compare == "cost" and r.measured and r.predicted]
