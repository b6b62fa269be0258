"""NCCL's own tuning decisions, read from an NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING log.

NCCL prints at init, per collective, its model of every algorithm x protocol as
'latency(us)/bandwidth(GB/s)' (the table after '  Algorithm   | ... Tree ... Ring ...'), the number of
collective channels ('24 coll channels, ...'), and per call
'AllReduce: 1048576 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..23}'. The table is a fact of the
machine and NCCL version, so a card may carry it to decide protocols the way NCCL does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from simcluster.errors import TraceFormatError
from simcluster.traces import nccl_documents
from simcluster.traces.common import read_text

NCCL_FUNCS = {"Broadcast": "broadcast", "Reduce": "reduce", "AllGather": "all_gather",
              "ReduceScatter": "reduce_scatter", "AllReduce": "all_reduce"}
_PROTOS = ("LL", "LL128", "Simple")
_ALGO_HEADER = re.compile(r"NCCL INFO\s+Algorithm\s+\|(.*)$")
_ROW = re.compile(r"NCCL INFO\s+(\w+)\s+\|((?:\s*[\d.]+/\s*[\d.]+\s*\|)+)\s*$")
_CHANNELS = re.compile(r"NCCL INFO (\d+) coll channels")
_RANKS = re.compile(r"NCCL INFO .*\bnRanks (\d+)(?: nNodes (\d+))?")
_NVLS = re.compile(r"(\d+) nvls channels")
_VERSION = re.compile(r"NCCL INFO NCCL version (\S+)")
_P2P = re.compile(r"NCCL INFO .*?(\d+) p2p channels, (\d+) p2p channels per peer")
CALL = re.compile(r"NCCL INFO (\w+):\s*(\d+) Bytes -> Algo (\w+) proto (\w+) channel\{Lo\.\.Hi\}=\{(\d+)\.\.(\d+)\}")  # >= 2.23


@dataclass
class NcclTuning:
    path: str
    channels: int
    table: dict = field(default_factory=dict)     # algo -> op -> protocol -> (latency_s, bandwidth_Bps)
    calls: list = field(default_factory=list)     # (op, bytes as NCCL logs them*, algo, protocol, channels)
    ranks: int = 0                                # the communicator's size (0: not in the log)
    p2p_channels: tuple[int, int] = (0, 0)        # (p2p channels, p2p channels per peer); 0: not in the log
    nodes: int = 0                                # nNodes (0: not in the log)
    nvls_channels: int = 0
    nccl_version: str = ""
    # *all_gather / reduce_scatter: per-rank bytes (nccl-tests size / ranks); others: nccl-tests size

    def ring_table(self) -> dict:
        """op -> protocol -> (latency_s, bandwidth_Bps) for the ring algorithm, protocols NCCL can use."""
        return {op: {p: v for p, v in protos.items() if v[1] > 0}
                for op, protos in self.table.get("Ring", {}).items()}


def parse(path: str | Path) -> NcclTuning:
    text = read_text(path)
    table: dict = {}
    algos: list[str] = []
    channels = ranks = nodes = nvls = 0
    version = ""
    p2p = (0, 0)
    calls = []
    for number, raw in enumerate(text.splitlines(), 1):
        if "NCCL INFO" not in raw:
            continue
        version = version or ((m := _VERSION.search(raw)) and m.group(1).split("+")[0]) or ""
        match = _ALGO_HEADER.search(raw)
        if match:
            algos = [a.strip() for a in match.group(1).split("|") if a.strip()]
            continue
        match = _ROW.search(raw)
        if match and match.group(1) in NCCL_FUNCS and algos:
            cells = [c for c in match.group(2).split("|") if c.strip()]
            for i, cell in enumerate(cells):
                algo, proto = algos[i // 3] if i // 3 < len(algos) else None, _PROTOS[i % 3]
                if algo is None:
                    break
                try:
                    lat, bw = (float(x) for x in cell.split("/"))
                except ValueError:   # '1..2', or a control character the row's \s let through
                    raise TraceFormatError(f"line {number}: tuning cell {cell.strip()[:40]!r} is not LATENCY_US/BANDWIDTH_GBPS",
                                           where=str(path)) from None
                table.setdefault(algo, {}).setdefault(NCCL_FUNCS[match.group(1)], {})[proto] = (lat * 1e-6, bw * 1e9)
            continue
        match = _CHANNELS.search(raw)
        if match:
            channels = int(match.group(1))
            p2p_match = _P2P.search(raw)
            p2p = (int(p2p_match.group(1)), int(p2p_match.group(2))) if p2p_match else p2p
            nvls = int(m.group(1)) if (m := _NVLS.search(raw)) else nvls
            continue
        match = _RANKS.search(raw)
        if match:
            ranks = int(match.group(1))
            nodes = int(match.group(2)) if match.group(2) else nodes
            continue
        match = CALL.search(raw)
        if match and match.group(1) in NCCL_FUNCS:
            proto = {"SIMPLE": "Simple"}.get(match.group(4), match.group(4))
            calls.append((NCCL_FUNCS[match.group(1)], int(match.group(2)), match.group(3).title(), proto,
                          int(match.group(6)) - int(match.group(5)) + 1))
    if not table or not channels:
        raise TraceFormatError("no NCCL tuning table or channel count in this log", where=str(path),
                               hint="run with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING "
                                    "(simcluster collect --nccl-tuning)")
    return nccl_documents.check(nccl_documents.TUNING, NcclTuning(str(path), channels, table, calls, ranks, p2p, nodes, nvls,
                                                                  version), path)
