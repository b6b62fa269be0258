"""What an NCCL_DEBUG=INFO log states about NCCL's decisions, read line by line from a log as someone posted it
(calibration/published/nccl-decisions-*/): the communicator (ranks, nodes, ranks per node), whether NVLS multicast
is available (or that it is not), the communicator's collective and NVLS channel counts, and each per-call algorithm /
protocol choice.

Three per-call formats exist: NCCL >= 2.23 'AllReduce: 1048576 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..23}';
NCCL 2.19-2.22 '1048576 Bytes -> Algo 1 proto 0 time 34.69' (indices into NCCL's algorithm and protocol lists, and
NCCL's own time estimate in us; the line names no collective, so the caller says which one the log ran). Collective
channels: 'N coll channels, ...' or the ring listing 'Channel 00/NN : ...' (NN = the communicator's channels).

Strict: every line must be one of NCCL's own lines (a posted log keeps only those); a line that starts a fact but
does not parse is a one-line TraceFormatError naming the file and line. What the lines state is declared in
traces/nccl_documents.INFO_LOG (known collectives, algorithms and protocols, >= 1 channel, a count or NVLS line that
contradicts an earlier one), checked on the parsed log: FILE:LINE: KEY: why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from simcluster.collectives.nccl_constants import ALGORITHMS, PROTOCOLS
from simcluster.errors import TraceFormatError
from simcluster.traces import nccl_documents
from simcluster.traces.common import read_text
from simcluster.traces.nccl_tuning import CALL, NCCL_FUNCS

# each fact line NCCL prints, by what it states
LINES = {
    "nccl": re.compile(r"NCCL (INFO|WARN)\b|NCCL version \S+"),
    "version": re.compile(r"NCCL version (\d+\.\d+\.\d+)"),
    "comm": re.compile(r"NCCL INFO comm 0x[0-9a-f]+ rank \d+ nRanks (\d+) nNodes (\d+) localRanks (\d+)"),
    "comm complete": re.compile(r"NCCL INFO comm 0x[0-9a-f]+ rank \d+ nranks (\d+) .*Init COMPLETE"),
    "coll channels": re.compile(r"NCCL INFO (\d+) coll channels, (?:(\d+) collnet channels, )?(\d+) nvls channels, "
                                r"\d+ p2p channels, \d+ p2p channels per peer\s*$"),
    "ring list": re.compile(r"NCCL INFO Channel (\d+)/(\d+) :(?:\s+\d+)+\s*$"),
    "nvls available": re.compile(r"NCCL INFO NVLS multicast support is (not )?available on dev \d+(?: \(NVLS_NCHANNELS (\d+)\))?\s*$"),
    "nvls comm": re.compile(r"NCCL INFO NVLS comm 0x[0-9a-f]+ headRank -?\d+ nHeads (\d+) "),
    "nvls head": re.compile(r"NCCL INFO NVLS Head +(\d+):(?: +\d+)+\s*$"),
    "trees": re.compile(r"NCCL INFO Trees((?: \[\d+\] [-\d/]+->-?\d+->-?\d+)+)\s*$"),
    "call indexed": re.compile(r"NCCL INFO (\d+) Bytes -> Algo (\d+) proto (\d+) time ([\d.]+)\s*$"),   # 2.19-2.22
}
_STARTS = (("Bytes -> Algo", "a per-call decision"), (" coll channels", "a channel count"),
           ("NVLS multicast support", "an NVLS line"), ("NVLS Head", "an NVLS head line"), ("INFO Trees ", "a tree line"))


@dataclass(frozen=True)
class LoggedCall:
    """One per-call decision NCCL printed. size: the line's bytes (per rank for all_gather / reduce_scatter)."""

    line: int
    op: str
    size: int
    algorithm: str
    protocol: str
    channels: int | None = None      # channel{Lo..Hi} (NCCL >= 2.23)
    time_s: float | None = None      # NCCL's own estimate (NCCL 2.19-2.22)


@dataclass(frozen=True)
class LoggedCount:
    line: int
    what: str                        # 'coll channels' | 'nvls channels' | 'nvls heads'
    value: int


@dataclass(frozen=True)
class LoggedNvls:
    line: int
    available: bool                  # 'NVLS multicast support is available' (else: 'is not available')


@dataclass(frozen=True)
class NcclInfoLog:
    """The log's facts as printed, every count and NVLS line kept: INFO_LOG (nccl_documents.py) holds the rules across
    lines (a count or NVLS line contradicting an earlier one)."""

    path: str
    version: str                     # '' when the log has no 'NCCL version' line
    ranks: int                       # 0 when not in the log
    nodes: int
    local_ranks: int
    nvls_available: bool             # the log says NVLS multicast is available
    calls: tuple[LoggedCall, ...]
    count_lines: tuple[LoggedCount, ...]             # every count line, in order
    nvls_lines: tuple[LoggedNvls, ...] = ()           # each 'NVLS multicast support is ...' line
    nvls_setup_line: int | None = None               # the first line that sets NVLS up ('NVLS comm ... nHeads')

    @property
    def counts(self) -> tuple[LoggedCount, ...]:
        """Each count once, as its first line states it."""
        first: dict[str, LoggedCount] = {}
        for c in self.count_lines:
            first.setdefault(c.what, c)
        return tuple(first.values())

    @property
    def nvls_line(self) -> tuple[int, bool] | None:
        """(line, available) of the first 'NVLS multicast support is ...' line."""
        return (self.nvls_lines[0].line, self.nvls_lines[0].available) if self.nvls_lines else None


def _fail(path, number: int, message: str) -> TraceFormatError:
    return TraceFormatError(f"line {number}: {message}", where=str(path))


def _call(path, number: int, raw: str, op: str | None) -> LoggedCall:
    """The line's fields as NCCL printed them (a name NCCL's lists do not hold stays as printed: INFO_LOG refuses it)."""
    if (m := CALL.search(raw)) is not None:
        algo = {a.upper(): a for a in ALGORITHMS}.get(m.group(3).upper().replace("_", ""), m.group(3))   # NVLS_TREE
        proto = {p.upper(): p for p in PROTOCOLS}.get(m.group(4).upper(), m.group(4))
        return LoggedCall(number, NCCL_FUNCS.get(m.group(1), m.group(1)), int(m.group(2)), algo, proto,
                          channels=int(m.group(6)) - int(m.group(5)) + 1)
    if (m := LINES["call indexed"].search(raw)) is not None:
        if op is None:
            raise _fail(path, number, "NCCL 2.19-2.22 names no collective on a per-call line: the source must say "
                                      "which op the log ran")
        a, p = int(m.group(2)), int(m.group(3))
        if a >= len(ALGORITHMS) or p >= len(PROTOCOLS):
            raise _fail(path, number, f"algorithm index {a} or protocol index {p} is out of NCCL's lists")
        return LoggedCall(number, op, int(m.group(1)), ALGORITHMS[a], PROTOCOLS[p], time_s=float(m.group(4)) * 1e-6)
    raise _fail(path, number, "a per-call decision line that does not parse")


def parse(path: str | Path, op: str | None = None) -> NcclInfoLog:
    """Every fact of one posted log. `op`: the collective of per-call lines that do not name it (NCCL 2.19-2.22)."""
    text = read_text(path)
    version, ranks, nodes, local, setup = "", 0, 0, 0, None
    calls: list[LoggedCall] = []
    counts: list[LoggedCount] = []
    nvls_lines: list[LoggedNvls] = []
    heads: dict = {}                  # 'NVLS Head i:' lines: the highest i + 1, and the first line
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        if not LINES["nccl"].search(raw):
            raise _fail(path, number, "not one of NCCL's own lines (keep only 'NCCL INFO' / 'NCCL version' lines)")
        if (m := LINES["version"].search(raw)) is not None:
            version = m.group(1)
        elif (m := LINES["comm"].search(raw)) is not None:
            ranks, nodes, local = int(m.group(1)), int(m.group(2)), int(m.group(3))
        elif (m := LINES["comm complete"].search(raw)) is not None:
            ranks = ranks or int(m.group(1))
        elif (m := LINES["coll channels"].search(raw)) is not None:
            counts += [LoggedCount(number, "coll channels", int(m.group(1))), LoggedCount(number, "nvls channels", int(m.group(3)))]
        elif (m := LINES["ring list"].search(raw)) is not None:
            counts.append(LoggedCount(number, "coll channels", int(m.group(2))))
        elif (m := LINES["nvls available"].search(raw)) is not None:
            nvls_lines.append(LoggedNvls(number, not m.group(1)))
            if m.group(2):
                counts.append(LoggedCount(number, "nvls channels", int(m.group(2))))
        elif (m := LINES["nvls comm"].search(raw)) is not None:
            setup = setup or number
            counts.append(LoggedCount(number, "nvls heads", int(m.group(1))))
        elif (m := LINES["nvls head"].search(raw)) is not None:
            heads.update(value=max(int(m.group(1)) + 1, heads.get("value", 0)), line=heads.get("line", number))
        elif (m := LINES["trees"].search(raw)) is not None:
            indexes = [int(i) for i in re.findall(r"\[(\d+)\]", m.group(1))]
            if indexes != list(range(len(indexes))):
                raise _fail(path, number, "tree channels are not listed 0, 1, 2, ...")
            counts.append(LoggedCount(number, "coll channels", len(indexes)))
        elif "Bytes -> Algo" in raw:
            calls.append(_call(path, number, raw, op))
        else:
            for marker, what in _STARTS:
                if marker in raw:
                    raise _fail(path, number, f"{what} that does not parse")
    if heads:
        counts.append(LoggedCount(heads["line"], "nvls heads", heads["value"]))
    if not calls and not counts:
        raise TraceFormatError("no per-call decision and no channel count in this log", where=str(path))
    nvls = setup is not None or any(n.available for n in nvls_lines)
    log = NcclInfoLog(str(path), version, ranks, nodes, local, nvls, tuple(calls), tuple(counts), tuple(nvls_lines), setup)
    where_of = {f"{key}[{i}]": f"{path}:{fact.line}" for key in ("calls", "count_lines", "nvls_lines")
                for i, fact in enumerate(getattr(log, key))}
    return nccl_documents.check(nccl_documents.INFO_LOG, log, path, where_of)
