"""What simcluster reads from NCCL's logs, declared once (simcluster.schema, pydantic v2): the parsed result of an
nccl-tests run (text or -J JSON, traces/nccl_tests.py), of a posted NCCL_DEBUG=INFO log (traces/nccl_info.py) and of
a tuning log (traces/nccl_tuning.py), each checked at the end of its parser (`check`) before a model reads it.

    nccl-tests run     TRACE        sizes whole and monotone within each sweep (-N repeats the sweep from its start),
                                    times and bandwidths finite and >= 0, algbw = size / time and busbw = algbw x
                                    nccl-tests' bus factor within the printed digits, ranks per node <= ranks
    NCCL_DEBUG=INFO    INFO_LOG     each per-call decision: a known collective, algorithm and protocol, >= 1 channel;
                                    counts >= 0, a count stated on several lines stated alike, NVLS available on
                                    all its lines or none (and not set up where it is not); nodes and ranks per
                                    node <= ranks
    tuning log         TUNING       every latency and bandwidth of NCCL's table finite and >= 0; >= 1 channel

A violation is one line FILE:LINE: KEY: why, LINE the log line of the row or call it is about.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Annotated

from pydantic import AfterValidator, model_validator

from simcluster import schema as S
from simcluster.collectives.nccl_constants import ALGORITHMS, PROTOCOLS
from simcluster.collectives.schedule import bus_factor
from simcluster.documents import MAX_GPUS
from simcluster.errors import TraceFormatError

OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "sendrecv", "alltoall")
_TIME = S.Number(0, 86400, "s")
_RATE = S.Number(0, 1e15, "B/s")
_PRINTED_GBPS, _PRINTED_US = 0.006e9, 0.006e-6      # half a printed digit (nccl-tests: GB/s and us to 2 places), and a bit
_ROUNDING = 0.01                                    # and 1% (times >= 100 us are printed to 1 or 0 places)

ROW = S.Record(   # one parsed nccl-tests row in SI units (CollectiveRow)
    {"size_bytes": S.Count(0, 2**62), "count": S.Count(0, 2**62), "time_s": _TIME, "algbw_Bps": _RATE, "busbw_Bps": _RATE,
     "line": S.Count(0, 2**40)},
    {"time_inplace_s": S.Nullable(_TIME), "busbw_inplace_Bps": S.Nullable(_RATE), "wrong": S.Nullable(S.Count(0, 2**62))},
    name="NcclTestsRow")


def _rate_off(size: float, time_s: float, printed_Bps: float, factor: float) -> bool:
    """A printed bandwidth that is not size / time x factor within the printed digits."""
    if time_s < 1e-9:     # under a nanosecond nccl-tests prints 0.00: no rate to compare with
        return False
    rate = size / time_s * factor
    slack = _PRINTED_GBPS + _ROUNDING * rate + size * factor * _PRINTED_US / time_s**2
    return abs(printed_Bps - rate) > slack


class Trace(S.Document):
    op: S.OneOf(*OPS)
    nranks: S.Count(1, MAX_GPUS)
    ranks_per_node: S.Count(1, MAX_GPUS)
    hosts: S.ListOf(S.Text(300), max_len=MAX_GPUS)
    devices: S.ListOf(S.Text(300), max_len=MAX_GPUS)
    rows: S.ListOf(ROW, min_len=1, max_len=10_000_000)
    complete: bool
    cuda_graph_launches: S.Count(0, 2**40) = 0

    @model_validator(mode="after")
    def _consistent(self):
        if self.ranks_per_node > self.nranks:
            raise ValueError(f"ranks_per_node: {self.ranks_per_node} ranks per node, but {self.nranks} ranks in all")
        if len(self.hosts) > self.nranks:
            raise ValueError(f"hosts: {len(self.hosts)} hosts for {self.nranks} ranks")
        rows, factor = self.model_dump(by_alias=True)["rows"], bus_factor(self.op, self.nranks)
        start = 0
        for i, row in enumerate(rows):
            if i and row["size_bytes"] < rows[i - 1]["size_bytes"]:    # -N: the sweep again, from its first size
                start = i
            if start and row["size_bytes"] != rows[i - start]["size_bytes"]:
                raise ValueError(f"rows[{i}].size_bytes: {row['size_bytes']} B breaks the sweep's order (sizes go up "
                                 "within a sweep; a repeated sweep (-N) starts again at the first size)")
            if _rate_off(row["size_bytes"], row["time_s"], row["algbw_Bps"], 1.0):
                raise ValueError(f"rows[{i}].algbw_Bps: {row['algbw_Bps'] / 1e9:.4g} GB/s is not size / time "
                                 f"({row['size_bytes'] / row['time_s'] / 1e9:.4g} GB/s)")
            for time, bus, key in ((row["time_s"], row["busbw_Bps"], "busbw_Bps"),
                                   (row.get("time_inplace_s"), row.get("busbw_inplace_Bps"), "busbw_inplace_Bps")):
                if time is not None and bus is not None and _rate_off(row["size_bytes"], time, bus, factor):
                    raise ValueError(f"rows[{i}].{key}: {bus / 1e9:.4g} GB/s is not algbw x {factor:.4g} (nccl-tests' "
                                     f"bus factor of {self.op} on {self.nranks} ranks)")
        return self


TRACE = Trace


class Call(S.Document):
    line: S.Count(1, 2**40)
    op: S.OneOf(*OPS)
    size: S.Count(0, 2**62)
    algorithm: S.OneOf(*ALGORITHMS)
    protocol: S.OneOf(*PROTOCOLS)
    channels: S.Nullable(S.Count(1, 4096)) = None         # channel{Lo..Hi}: Hi >= Lo
    time_s: S.Nullable(_TIME) = None


class Count(S.Document):
    line: S.Count(1, 2**40)
    what: S.OneOf("coll channels", "nvls channels", "nvls heads")
    value: S.Count(0, 4096)


class NvlsLine(S.Document):
    line: S.Count(1, 2**40)
    available: bool


class InfoLog(S.Document):
    version: S.Text(64)
    ranks: S.Count(0, MAX_GPUS)
    nodes: S.Count(0, MAX_GPUS)
    local_ranks: S.Count(0, MAX_GPUS)
    nvls_available: bool
    calls: S.ListOf(Call, max_len=10_000_000)
    count_lines: S.ListOf(Count, max_len=1_000_000)
    nvls_lines: S.ListOf(NvlsLine, max_len=1_000_000) = ()
    nvls_setup_line: S.Nullable(S.Count(1, 2**40)) = None

    @model_validator(mode="after")
    def _communicator(self):
        if self.ranks and (self.nodes > self.ranks or self.local_ranks > self.ranks):
            raise ValueError(f"ranks: a communicator of {self.ranks} ranks on {self.nodes} nodes with {self.local_ranks} "
                             "local ranks")
        return self

    @model_validator(mode="after")
    def _lines_agree(self):
        """A count stated twice states one value; NVLS is available on every line that says so, or on none."""
        first: dict[str, Count] = {}
        for i, c in enumerate(self.count_lines):
            if first.setdefault(c.what, c).value != c.value:
                raise ValueError(f"count_lines[{i}].value: {c.what} {c.value} contradicts {first[c.what].value} on line "
                                 f"{first[c.what].line}")
        for i, n in enumerate(self.nvls_lines):
            if n.available != self.nvls_lines[0].available:
                raise ValueError(f"nvls_lines[{i}].available: NVLS multicast {'available' if n.available else 'not available'}"
                                 f" contradicts line {self.nvls_lines[0].line}")
        if self.nvls_lines and not self.nvls_lines[0].available and self.nvls_setup_line is not None:
            raise ValueError(f"nvls_lines[0].available: NVLS multicast not available, but line {self.nvls_setup_line} sets "
                             "NVLS up")
        return self


INFO_LOG = InfoLog


def _tuning_call(call: list) -> list:
    if len(call) != 5 or not all(isinstance(v, str) for v in (call[0], call[2], call[3])) or \
            not all(isinstance(v, int) and not isinstance(v, bool) for v in (call[1], call[4])):
        raise ValueError("expected (collective, bytes, algorithm, protocol, channels)")
    if call[1] < 0 or call[4] < 1:
        raise ValueError(f"{call[1]} bytes on {call[4]} channels (bytes >= 0; channel{{Lo..Hi}} with Hi >= Lo)")
    return call


class Tuning(S.Document):
    channels: S.Count(1, 4096)
    table: S.MapOf(S.MapOf(S.MapOf(S.ListOf(S.Number(0, 1e15), min_len=2, max_len=2))))   # algo -> op -> proto -> (s, B/s)
    calls: S.ListOf(Annotated[list, AfterValidator(_tuning_call)], max_len=10_000_000)   # (op, bytes, algo, proto, channels)
    ranks: S.Count(0, MAX_GPUS)
    nodes: S.Count(0, MAX_GPUS)
    nvls_channels: S.Count(0, 4096)
    p2p_channels: S.ListOf(S.Count(0, 4096), min_len=2, max_len=2)

    @model_validator(mode="after")
    def _table(self):
        for algo, ops in self.table.items():
            for op, protos in ops.items():
                for proto, (latency, _) in protos.items():
                    if latency > 1.0:
                        raise ValueError(f"table.{algo}.{op}.{proto}: a latency of {latency * 1e6:g} us (NCCL's model "
                                         "gives microseconds)")
        if self.ranks and self.nodes > self.ranks:
            raise ValueError(f"nodes: {self.nodes} nodes for {self.ranks} ranks")
        return self


TUNING = Tuning


def check(declaration, parsed, path, where_of: dict[str, str] | None = None):
    """`parsed` (a parser's dataclass) if it fits its declaration, else a TraceFormatError WHERE: KEY: why; WHERE from
    `where_of` (a key prefix such as 'rows[3]' -> 'FILE:LINE' of the log line it came from), else the file."""
    doc = json.loads(json.dumps(dataclasses.asdict(parsed)))      # tuples as lists, as the declarations read them
    try:
        S.read(declaration, doc)
    except S.Refusal as exc:
        where = (where_of or {}).get(exc.key.split(".")[0], str(path))
        raise TraceFormatError(f"{exc.key}: {exc.why}", where=where) from None
    return parsed
