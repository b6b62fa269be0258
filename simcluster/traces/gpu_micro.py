"""Parser for `python -m simcluster.runner.gpu_micro` output: one JSON document.

Strict: a file that is empty, not JSON, truncated (the document does not close) or not gpu-micro's
(no `tool: gpu-micro`, missing sections, a record without its sizes or a non-positive time) is a
one-line TraceFormatError naming the file. Times stay in seconds, sizes in elements / bytes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from simcluster import schema as S
from simcluster import strict
from simcluster.errors import TraceFormatError
from simcluster.traces.common import loads_json, read_text, sha256_of

GEMM_KEYS = ("m", "n", "k", "batch", "dtype", "time_s")
ATTN_KEYS = ("batch", "heads", "kv_heads", "seq_q", "seq_kv", "head_dim", "causal", "dtype", "mode", "time_s")
MEMORY_KEYS = ("op", "bytes_moved", "time_s")
GROUP_KEYS = ("m", "n", "k", "experts", "dtype", "mode", "role", "hidden", "tokens", "time_s")
GEMM_CONDITIONS = ("back-to-back", "interleaved")

_DIM, _TIME = S.Count(1, 2**40), S.Seconds(3600.0)
DOCUMENT = S.Record(   # gpu-micro's stdout (runner/gpu_micro.py), as far as parse() reads it
    {"device": S.Map,
     "gemm": S.ListOf(S.Record({k: _DIM for k in ("m", "n", "k", "batch")} | {"dtype": S.Text(32), "time_s": _TIME},
                               {"role": S.Text(64), "condition": S.OneOf(*GEMM_CONDITIONS), "hidden": S.Count(0, 2**40),
                                "tokens": S.Count(0, 2**40)}, name="GemmRecord"), max_len=10**6),
     "attention": S.ListOf(S.Record({k: _DIM for k in ("batch", "heads", "kv_heads", "seq_q", "seq_kv", "head_dim")} |
                                    {"causal": bool, "dtype": S.Text(32), "mode": S.OneOf("fwd", "fwd_bwd"), "time_s": _TIME},
                                    name="AttentionRecord"), max_len=10**6),
     "memory": S.ListOf(S.Record({"op": S.Text(64), "bytes_moved": S.Number(0, 2**50, "B"), "time_s": _TIME},
                                 {"reference_only": bool}, name="MemoryRecord"), max_len=10**6)},
    {"launch": S.Nullable(S.Record({"time_s": S.Number(0, 3600, "s")}, {"host_issue_s": S.Number(0, 3600, "s")},
                                   name="LaunchRecord")),
     "moe_grouped": S.ListOf(S.Map, max_len=10**6), "errors": S.ListOf(S.Any, max_len=10**6), "quick": bool},
    name="GpuMicroDocument")


@dataclass(frozen=True)
class GemmSample:
    m: int
    n: int
    k: int
    batch: int
    dtype: str
    time_s: float
    role: str = ""
    condition: str = "back-to-back"   # or "interleaved": each call after copies of its own duration (a step's mix)
    hidden: int = 0                   # fp8-layers records: the layer's hidden size and tokens (0: not a layer record)
    tokens: int = 0


@dataclass(frozen=True)
class GroupSample:
    """moe-grouped: `experts` GEMMs of (m, n, k) run as one layer pass runs them (mode loop, streams, grouped_mm)."""
    m: int
    n: int
    k: int
    experts: int
    dtype: str
    mode: str
    role: str
    hidden: int
    tokens: int
    time_s: float         # the whole group


@dataclass(frozen=True)
class AttentionSample:
    batch: int
    heads: int
    kv_heads: int
    seq_q: int
    seq_kv: int
    head_dim: int
    causal: bool
    dtype: str
    mode: str           # "fwd" or "fwd_bwd"
    time_s: float


@dataclass(frozen=True)
class MemorySample:
    op: str
    bytes_moved: float
    time_s: float
    reference_only: bool = False   # a multi-kernel op (rms_norm): not a single memory-bound kernel


@dataclass
class GpuMicroTrace:
    path: str
    device: dict
    torch: str
    cuda: str | None
    gemm: list[GemmSample]
    attention: list[AttentionSample]
    memory: list[MemorySample]
    launch_s: float
    host_issue_s: float
    clocks: dict = field(default_factory=dict)
    errors: list = field(default_factory=list)
    quick: bool = False
    sha256: str = ""
    tool: str = "gpu-micro"
    groups: list[GroupSample] = field(default_factory=list)   # moe-grouped records (a mode that failed is left out)

    @property
    def device_name(self) -> str:
        return str(self.device.get("name", "gpu"))

    @property
    def gemm_condition(self) -> str:
        """The condition a card is fitted and validated on: interleaved where the trace has it (a training step's
        GEMMs run between memory-bound kernels), else back-to-back (the first bundles)."""
        return "interleaved" if any(s.condition == "interleaved" for s in self.gemm) else "back-to-back"


def load_json(path: str | Path, tool: str) -> dict:
    """The one JSON document of a runner tool's stdout; truncated or foreign files are one-line errors."""
    text = read_text(path)
    try:
        doc = loads_json(text)
    except json.JSONDecodeError as exc:
        what = "truncated (the JSON document does not close)" if exc.pos >= len(text.rstrip()) - 1 else "not JSON"
        raise TraceFormatError(f"line {exc.lineno}: {what} ({exc.msg})", where=str(path),
                               hint=f"expected the stdout of {tool}") from None
    if not isinstance(doc, dict) or doc.get("tool") != tool:
        raise TraceFormatError(f"not {tool} output (no 'tool: {tool}' at the top)", where=str(path))
    return doc


def _records(doc: dict, key: str, keys: tuple[str, ...], where: str) -> list[dict]:
    rows = doc.get(key)
    if not isinstance(rows, list):
        raise TraceFormatError(f"section '{key}' is missing or not a list", where=where)
    for i, r in enumerate(rows):
        missing = [k for k in keys if not isinstance(r, dict) or k not in r]
        if missing:
            raise TraceFormatError(f"{key}[{i}]: missing '{missing[0]}'", where=where)
        if not isinstance(r["time_s"], (int, float)) or not r["time_s"] > 0:
            raise TraceFormatError(f"{key}[{i}]: time_s {r['time_s']!r} is not a positive number", where=where)
    return rows


def parse(path: str | Path) -> GpuMicroTrace:
    where = str(path)
    doc = load_json(path, "gpu-micro")
    DOCUMENT.check(doc, where, TraceFormatError, strict.json_lines(read_text(path)))
    try:
        gemm = [GemmSample(int(r["m"]), int(r["n"]), int(r["k"]), int(r["batch"]), str(r["dtype"]), float(r["time_s"]),
                           str(r.get("role", "")), str(r.get("condition", "back-to-back")), int(r.get("hidden", 0)),
                           int(r.get("tokens", 0))) for r in _records(doc, "gemm", GEMM_KEYS, where)]
        attn = [AttentionSample(int(r["batch"]), int(r["heads"]), int(r["kv_heads"]), int(r["seq_q"]), int(r["seq_kv"]),
                                int(r["head_dim"]), bool(r["causal"]), str(r["dtype"]), str(r["mode"]), float(r["time_s"]))
                for r in _records(doc, "attention", ATTN_KEYS, where)]
        mem = [MemorySample(str(r["op"]), float(r["bytes_moved"]), float(r["time_s"]), bool(r.get("reference_only", False)))
               for r in _records(doc, "memory", MEMORY_KEYS, where)]
        timed = {"moe_grouped": [r for r in doc.get("moe_grouped", []) if isinstance(r, dict) and "error" not in r]}
        groups = [GroupSample(int(r["m"]), int(r["n"]), int(r["k"]), int(r["experts"]), str(r["dtype"]), str(r["mode"]),
                              str(r["role"]), int(r["hidden"]), int(r["tokens"]), float(r["time_s"]))
                  for r in _records(timed, "moe_grouped", GROUP_KEYS, where)]
    except (TypeError, ValueError) as exc:
        raise TraceFormatError(f"a record has a value of the wrong type ({exc})", where=where) from None
    launch = doc.get("launch")     # the sections' types, ranges, conditions and modes: DOCUMENT
    return GpuMicroTrace(where, doc["device"], str(doc.get("torch", "")), doc.get("cuda"), gemm, attn, mem,
                         float(launch["time_s"]) if launch else 0.0, float(launch.get("host_issue_s", 0.0)) if launch else 0.0,
                         {"before": doc.get("clocks_before", {}), "after": doc.get("clocks_after", {})},
                         list(doc.get("errors", [])), bool(doc.get("quick", False)), sha256_of(path), groups=groups)
