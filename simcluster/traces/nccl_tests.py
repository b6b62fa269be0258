"""Parser for nccl-tests output: the text layout of every 2.x version, and -J JSON.

Text: header lines start with '#'; the column header names the columns ("size count type redop
[root] time algbw busbw #wrong|error ..." then the in-place block); -I adds i_min i_max i_p99 i_cv%
to each block and -S a timestamp at the end. NCCL INFO/WARN lines may be interleaved anywhere, also
inside a data line (NCCL_DEBUG=INFO writes between nccl-tests' partial prints): the pieces are joined again.
A last data line cut short (a killed run) is dropped with a warning; a file with no data line,
or a line that is neither comment, NCCL log nor data, is a TraceFormatError naming file and line.
Times are stored in seconds and bandwidths in bytes/s (nccl-tests prints us and GB/s, GB = 1e9).
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from simcluster.errors import TraceFormatError
from simcluster.traces import nccl_documents
from simcluster.traces.common import loads_json, read_text, sha256_of

OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "sendrecv", "alltoall")
_NCCL_LOG = re.compile(r"^\S+:\d+:\d+ \[\d+\] NCCL (INFO|WARN|TRACE|ABORT)")
_RANK = re.compile(r"^#\s+Rank\s+(\d+)\s+Group\s+(\d+)\s+Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s*(.*)$")
_OP_IN_TEXT = re.compile(r"(" + "|".join(OPS) + r")_perf")
_BLOCK = ("time", "algbw", "busbw", "wrong")


@dataclass(frozen=True)
class CollectiveRow:
    """One measured size: out-of-place and in-place time (s) and bandwidths (bytes/s)."""

    size_bytes: int
    count: int
    dtype: str
    redop: str
    root: int
    time_s: float
    algbw_Bps: float
    busbw_Bps: float
    wrong: int | None
    time_inplace_s: float | None
    busbw_inplace_Bps: float | None
    line: int


@dataclass
class CollectiveTrace:
    """What one nccl-tests run measured, with where it came from."""

    path: str
    op: str
    nranks: int
    ranks_per_node: int
    hosts: list[str]
    devices: list[str]
    rows: list[CollectiveRow]
    tool: str = "nccl-tests"
    tool_version: str | None = None
    nccl_version: str | None = None
    command: str | None = None
    complete: bool = True
    cuda_graph_launches: int = 0  # nccl-tests -G: >0 when the timed loop ran as a CUDA graph (no host launch cost)
    warnings: list[str] = field(default_factory=list)
    sha256: str = ""

    @property
    def nodes(self) -> int:
        return max(1, len(self.hosts))

    def as_json(self) -> dict:
        return {
            "path": self.path, "tool": self.tool, "tool_version": self.tool_version,
            "nccl_version": self.nccl_version, "op": self.op, "nranks": self.nranks,
            "ranks_per_node": self.ranks_per_node, "hosts": self.hosts, "devices": self.devices,
            "command": self.command, "complete": self.complete, "warnings": self.warnings,
            "sha256": self.sha256,
            "rows": [{"size_B": r.size_bytes, "count": r.count, "type": r.dtype, "redop": r.redop,
                      "root": r.root, "time_us": r.time_s * 1e6, "algbw_GBps": r.algbw_Bps / 1e9,
                      "busbw_GBps": r.busbw_Bps / 1e9, "wrong": r.wrong,
                      "time_inplace_us": None if r.time_inplace_s is None else r.time_inplace_s * 1e6,
                      "line": r.line} for r in self.rows],
        }


def _nccl_version_from_code(code: int) -> str:
    # NCCL_VERSION_CODE is major*10000 + minor*100 + patch since 2.9 (1000-based before)
    if code >= 10000:
        return f"{code // 10000}.{code % 10000 // 100}.{code % 100}"
    return f"{code // 1000}.{code % 1000 // 100}.{code % 100}"


def parse(path: str | Path, op: str | None = None) -> CollectiveTrace:
    """Parse an nccl-tests log (text or -J JSON). `op` overrides the collective's name."""
    text = read_text(path)
    if text.lstrip().startswith("{"):
        trace = _parse_json(str(path), text, op)
    else:
        trace = _parse_text(str(path), text, op)
    json_file = text.lstrip().startswith("{")      # text or JSON, the run as the models read it (seconds, bytes/s)
    nccl_documents.check(nccl_documents.TRACE, trace, path, {
        f"rows[{i}]": f"{path}: results[{row.line}]" if json_file else f"{path}:{row.line}" for i, row in enumerate(trace.rows)})
    trace.sha256 = sha256_of(path)
    return trace


def _op_from(where: str, hint: str | None, found: str | None) -> str:
    op = hint or found
    if op is None:
        raise TraceFormatError("cannot tell which collective this log measured",
                               where=where, hint="pass the operation with --op")
    if op not in OPS:
        raise TraceFormatError(f"unknown collective {op!r}", where=where, hint=f"one of {', '.join(OPS)}")
    return op


def _header_columns(line: str) -> list[str] | None:
    tokens = line.lstrip("#").split()
    if len(tokens) >= 6 and tokens[0] == "size" and tokens[1] == "count" and "time" in tokens:
        return tokens
    return None


def _log_start(rank_lines: list[re.Match]) -> re.Pattern | None:
    """Where an NCCL log message of one of the ranks' processes begins (host:pid:tid [dev] NCCL LEVEL), or None
    when no '# Rank' line names them."""
    prefixes = {f"{m.group(4)}:{m.group(3)}:" for m in rank_lines}
    if not prefixes:
        return None
    names = "|".join(re.escape(prefix) for prefix in sorted(prefixes))
    return re.compile(rf"(?:{names})\d+ \[\d+\] NCCL (?:INFO|WARN|TRACE|ABORT)")


def _rejoin_cut_lines(lines: list[str], log_start: re.Pattern) -> list[str]:
    """Data lines that NCCL log messages cut apart (NCCL_DEBUG=INFO prints from other threads between
    nccl-tests' partial writes: '... sum -1host:pid:tid [0] NCCL INFO ...', log lines, then '  26.61 ...'),
    put back together on the line where they began; the lines they took up become blank, so line numbers hold."""
    out = list(lines)
    start, pending = None, ""
    for index, line in enumerate(lines):
        if start is not None:
            out[index] = ""
            if log_start.match(line):
                continue
            line, row_index = pending + line, start
        else:
            row_index = index
        match = log_start.search(line)
        if match and line[:match.start()].strip():
            start, pending = row_index, line[:match.start()]
            continue
        out[row_index], start = line, None
    if start is not None:
        out[start] = pending
    return out


def _parse_text(path: str, text: str, op_hint: str | None) -> CollectiveTrace:
    lines = text.splitlines()
    rank_lines = [m for m in map(_RANK.match, (line.strip() for line in lines)) if m]
    log_start = _log_start(rank_lines)
    if log_start is not None:
        lines = _rejoin_cut_lines(lines, log_start)
    ranks = [(int(m.group(1)), m.group(4), m.group(7).strip()) for m in rank_lines]
    _refuse_two_runs(path, lines)
    rows, warnings = [], []
    columns: list[str] | None = None
    found_op = tool_version = nccl_version = command = None
    graph_launches = 0
    tool = "nccl-tests"
    footer = False
    header_seen = False
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip()
        stripped = line.strip()
        if not stripped:
            continue
        if _NCCL_LOG.match(stripped):
            match = re.search(r"NCCL version (\S+)", stripped)
            if match and not nccl_version:
                nccl_version = match.group(1).split("+")[0]
            continue
        if stripped.startswith("#"):
            header_seen = True
            if "simcluster torch.distributed benchmark" in stripped:
                tool = "simcluster-torch"
                match = re.search(r"nccl (\d[\d.]*)", stripped)
                nccl_version = match.group(1) if match else nccl_version
            match = re.search(r"nccl-tests version (\S+) nccl-headers=(\d+) nccl-library=(\d+)", stripped)
            if match:
                tool_version, nccl_version = match.group(1), _nccl_version_from_code(int(match.group(3)))
            match = _OP_IN_TEXT.search(stripped)
            if match and found_op is None:
                found_op = match.group(1)
            match = re.search(r"\bgraph: (\d+)", stripped)
            if match:
                graph_launches = int(match.group(1))
            if columns is None:
                columns = _header_columns(stripped)
            if "Avg bus bandwidth" in stripped or "Out of bounds values" in stripped:
                footer = True
            continue
        if columns is None:
            # before the table: prompts, the command line, prose around a pasted log
            match = _OP_IN_TEXT.search(stripped)
            if match:
                found_op = found_op or match.group(1)
                command = command or stripped.lstrip("$ ").strip()
            continue
        if footer:
            continue
        row = _parse_row(columns, stripped.split(), number)
        if row is None:
            if _only_logs_after(lines, number):
                warnings.append(f"line {number}: truncated last data line dropped: {stripped[:60]!r}")
                continue
            raise TraceFormatError(f"line {number}: not an nccl-tests data line: {stripped[:60]!r}",
                                   where=path, hint="expected 'size count type redop root time algbw busbw ...'")
        if row.wrong:
            warnings.append(f"line {number}: #wrong = {row.wrong}: nccl-tests found wrong results at {row.size_bytes} B")
        rows.append(row)
    if not rows:
        what = "no nccl-tests table header" if columns is None else "no data line after the table header"
        if not header_seen:
            what = "no nccl-tests output (no '#' header lines)"
        raise TraceFormatError(f"line {len(lines)}: {what}", where=path,
                               hint="is this nccl-tests output? the file may be foreign or truncated")
    if not footer:
        warnings.append("no '# Avg bus bandwidth' footer: the run was cut short")
    op = _op_from(path, op_hint, found_op)
    hosts = list(dict.fromkeys(host for _, host, _ in ranks))
    per_host = Counter(host for _, host, _ in ranks)
    nranks = len(ranks)
    if nranks == 0:
        raise TraceFormatError("no '#  Rank N ... device' lines: cannot tell how many ranks ran", where=path)
    return CollectiveTrace(
        path=path, op=op, nranks=nranks, ranks_per_node=max(per_host.values()), hosts=hosts,
        devices=[dev for _, _, dev in ranks], rows=rows, tool=tool, tool_version=tool_version,
        nccl_version=nccl_version, command=command, complete=footer, cuda_graph_launches=graph_launches,
        warnings=warnings)


def _refuse_two_runs(path: str, lines: list[str]) -> None:
    """One file, one nccl-tests run: a second '# Rank 0' line or a second table header (logs pasted together) is
    refused at its line, not merged into one run of twice the ranks."""
    first: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        match = _RANK.match(stripped)
        key = f"# Rank {match.group(1)}" if match else ("table header" if _header_columns(stripped) else None)
        if key is None:
            continue
        if key in first:
            raise TraceFormatError(f"line {number}: a second nccl-tests run in one file ('{key}' again, first at line "
                                   f"{first[key]})", where=path, hint="give each run's log as its own file")
        first[key] = number


def _only_logs_after(lines: list[str], number: int) -> bool:
    """True when nothing but blank lines and NCCL log lines follows line `number` (1-based)."""
    return all(not rest.strip() or _NCCL_LOG.match(rest.strip()) for rest in lines[number:])


def _number(token: str) -> float:
    """A measured time or bandwidth: finite and >= 0 (nccl-tests never prints NaN, inf or a negative one)."""
    value = float(token)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{token!r} is not a measurement")
    return value


def _parse_row(columns: list[str], tokens: list[str], line: int) -> CollectiveRow | None:
    meta = 5 if "root" in columns else 4
    block_names = columns[meta:]
    # one block = time algbw busbw #wrong/error [i_min i_max i_p99 i_cv%]
    per_block = 8 if "i_min" in block_names else 4
    if len(tokens) < meta + per_block:
        return None
    try:
        size, count = int(tokens[0]), int(tokens[1])
        root = int(tokens[4]) if meta == 5 else -1
        first = [_number(t) for t in tokens[meta: meta + 3]]
        wrong_token = tokens[meta + 3]
        wrong = None if wrong_token == "N/A" else int(float(wrong_token))
        second = tokens[meta + per_block: meta + per_block + 3]
        inplace = [_number(t) for t in second] if len(second) == 3 else None
    except (ValueError, OverflowError):
        return None
    if inplace is None and len(tokens) > meta + per_block:
        return None
    return CollectiveRow(
        size_bytes=size, count=count, dtype=tokens[2], redop=tokens[3], root=root,
        time_s=first[0] * 1e-6, algbw_Bps=first[1] * 1e9, busbw_Bps=first[2] * 1e9, wrong=wrong,
        time_inplace_s=None if inplace is None else inplace[0] * 1e-6,
        busbw_inplace_Bps=None if inplace is None else inplace[2] * 1e9, line=line)


def _parse_json(path: str, text: str, op_hint: str | None) -> CollectiveTrace:
    try:
        doc = loads_json(text)
    except json.JSONDecodeError as exc:
        raise TraceFormatError(f"line {exc.lineno}: not valid JSON ({exc.msg})", where=path) from None
    if not isinstance(doc, dict) or "results" not in doc or "config" not in doc:
        raise TraceFormatError("JSON without 'config' and 'results': not an nccl-tests -J file", where=path)
    args = doc.get("args") or []
    found = None
    for arg in args:
        match = _OP_IN_TEXT.search(str(arg))
        if match:
            found = match.group(1)
    op = _op_from(path, op_hint, found)
    devices = doc["config"].get("devices") or []
    hosts = list(dict.fromkeys(d.get("hostname", "?") for d in devices))
    per_host = Counter(d.get("hostname", "?") for d in devices)
    rows = []
    for index, res in enumerate(doc["results"]):
        try:
            oop, inp = res["out_of_place"], res.get("in_place") or {}
            rows.append(CollectiveRow(
                size_bytes=int(res["size"]), count=int(res["count"]), dtype=str(res["type"]),
                redop=str(res["redop"]), root=int(str(res.get("root", -1)).strip()),
                time_s=float(oop["time"]) * 1e-6, algbw_Bps=float(oop["alg_bw"]) * 1e9,
                busbw_Bps=float(oop["bus_bw"]) * 1e9,
                wrong=None if oop.get("nwrong") in (None, "N/A") else int(float(oop["nwrong"])),
                time_inplace_s=float(inp["time"]) * 1e-6 if "time" in inp else None,
                busbw_inplace_Bps=float(inp["bus_bw"]) * 1e9 if "bus_bw" in inp else None, line=index))
        except (KeyError, TypeError, ValueError) as exc:
            raise TraceFormatError(f"results[{index}]: malformed entry ({exc})", where=path) from None
    if not rows:
        raise TraceFormatError("JSON has no results", where=path)
    per_process = int(doc["config"].get("ngpus", 1)) * int(doc["config"].get("nthreads", 1))
    nranks = max(len(devices), per_process)
    code = doc.get("nccl_version")
    return CollectiveTrace(
        path=path, op=op, nranks=nranks, ranks_per_node=max(max(per_host.values(), default=0), per_process),
        hosts=hosts, devices=[d.get("device_info", "") for d in devices], rows=rows,
        nccl_version=_nccl_version_from_code(int(code)) if isinstance(code, int) else None,
        command=" ".join(map(str, args)) or None, complete="end_time" in doc)


def median_trace(traces: list[CollectiveTrace]) -> CollectiveTrace:
    """One trace whose every size is the median over `traces` (rounds of the same run; sizes present in all) and
    over the rows of that size within each; algbw and busbw follow from the median time."""
    import statistics
    from dataclasses import replace

    from simcluster.collectives.schedule import bus_factor

    first = traces[0]
    if len(traces) == 1 and len({r.size_bytes for r in first.rows}) == len(first.rows):
        return first      # one round, each size once (a size repeated in one log, -N cycles or lines pasted twice: its median)
    factor = bus_factor(first.op, first.nranks)
    common = set.intersection(*({r.size_bytes for r in t.rows} for t in traces))
    rows = []
    for size in sorted(common):
        same = [r for t in traces for r in t.rows if r.size_bytes == size]
        time = statistics.median(r.time_s for r in same)
        algbw = size / time if time else 0.0
        rows.append(replace(same[0], time_s=time, algbw_Bps=algbw, busbw_Bps=algbw * factor,
                            time_inplace_s=None, busbw_inplace_Bps=None))
    return replace(first, path=f"median of {len(traces)} rounds ({first.path}, ...)" if len(traces) > 1 else first.path, rows=rows,
                   warnings=[w for t in traces for w in t.warnings])


def median_of_rounds(traces: list[CollectiveTrace]) -> dict[tuple[str, int, bool], CollectiveTrace]:
    """Rounds of the same run reduced to their median: one trace per (op, ranks, timed as a CUDA graph)."""
    groups: dict[tuple[str, int, bool], list[CollectiveTrace]] = {}
    for t in traces:
        groups.setdefault((t.op, t.nranks, bool(t.cuda_graph_launches)), []).append(t)
    return {key: median_trace(ts) for key, ts in sorted(groups.items())}
