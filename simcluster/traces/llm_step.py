"""Parser for `python -m simcluster.runner.llm_step` output: one JSON document (rank 0's).

Each shape (sequence length x micro batch) is a record with its step times (s), their median and the
peak memory (bytes); a shape that ran out of memory has status 'oom' and no times. Strict like
traces.gpu_micro: empty, non-JSON, truncated or foreign files are one-line TraceFormatErrors.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from simcluster import schema as S
from simcluster.errors import TraceFormatError
from simcluster.traces.common import sha256_of
from simcluster.traces.gpu_micro import load_json

MODEL_KEYS = ("layers", "hidden", "ffn", "heads", "kv_heads", "vocab", "tied", "params")
_COUNT = S.Count(1, 2**40)
DOCUMENT = S.Record(   # the fields parse() takes on trust below, declared once (llm_step runner writes them)
    {"model": S.Record({k: _COUNT for k in MODEL_KEYS if k != "tied"}),
     "shapes": S.ListOf(S.Record({"seq": _COUNT, "micro_batch": _COUNT, "status": S.Text(16)}), min_len=1, max_len=100_000)},
    optional={"world_size": S.Count(1, 2**17), "optimizer": S.Record(),
              "mode": S.Text(64), "precision": S.Text(64), "torch": S.Text(200)})


@dataclass(frozen=True)
class LlmStepShape:
    seq: int
    micro_batch: int
    status: str                      # "ok" or "oom"
    step_times_s: tuple[float, ...]
    median_step_s: float | None
    max_memory_allocated_bytes: float | None
    max_memory_reserved_bytes: float | None
    memory_allocated_steady_bytes: float | None
    host_issue_s: tuple[float, ...] = ()   # host time to issue each timed step (newer traces)
    profile: dict | None = None            # kernels per step and their summed device time (newer traces)

    @property
    def tokens(self) -> int:
        return self.seq * self.micro_batch


@dataclass
class LlmStepTrace:
    path: str
    device: str
    mode: str
    world_size: int
    model: dict                      # layers, hidden, ffn, heads, kv_heads, head_dim, vocab, tied, rope, params, preset
    precision: str
    optimizer: dict
    shapes: list[LlmStepShape]
    torch: str
    sha256: str = ""
    tool: str = "llm-step"


def _num(value, what: str, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise TraceFormatError(f"{what}: {value!r} is not a non-negative number", where=where)
    return float(value)


def parse(path: str | Path) -> LlmStepTrace:
    where = str(path)
    doc = load_json(path, "llm-step")
    model = doc.get("model")
    if isinstance(model, dict) and all(k in model for k in MODEL_KEYS) and isinstance(doc.get("shapes"), list) and doc["shapes"]:
        DOCUMENT.check(doc, where, TraceFormatError)
    model = doc.get("model")
    if not isinstance(model, dict) or any(k not in model for k in MODEL_KEYS):
        missing = next((k for k in MODEL_KEYS if not isinstance(model, dict) or k not in model), "model")
        raise TraceFormatError(f"model: missing '{missing}'", where=where)
    rows = doc.get("shapes")
    if not isinstance(rows, list) or not rows:
        raise TraceFormatError("no 'shapes' records", where=where)
    shapes = []
    for i, r in enumerate(rows):
        key = f"shapes[{i}]"
        if not isinstance(r, dict) or r.get("status") not in ("ok", "oom") or "seq" not in r or "micro_batch" not in r:
            raise TraceFormatError(f"{key}: expected seq, micro_batch and status ok|oom", where=where)
        times = r.get("step_times_s", []) if r["status"] == "ok" else []
        if r["status"] == "ok" and (not isinstance(times, list) or not times or any(not _num(t, key, where) for t in times)):
            raise TraceFormatError(f"{key}: status ok without positive step_times_s", where=where)
        shapes.append(LlmStepShape(int(r["seq"]), int(r["micro_batch"]), r["status"], tuple(float(t) for t in times),
                                   _num(r.get("median_step_s"), f"{key}.median_step_s", where),
                                   _num(r.get("max_memory_allocated_bytes"), f"{key}.max_memory_allocated_bytes", where),
                                   _num(r.get("max_memory_reserved_bytes"), f"{key}.max_memory_reserved_bytes", where),
                                   _num(r.get("memory_allocated_steady_bytes"), f"{key}.memory_allocated_steady_bytes", where),
                                   tuple(_num(t, f"{key}.host_issue_s", where) for t in r.get("host_issue_s", [])),
                                   r.get("profile") if isinstance(r.get("profile"), dict) else None))
    device = doc.get("device", {})
    return LlmStepTrace(where, str(device.get("name", "")) if isinstance(device, dict) else str(device), str(doc.get("mode", "single")),
                        int(doc.get("world_size", 1)), dict(model), str(doc.get("precision", "")), dict(doc.get("optimizer", {})),
                        shapes, str(doc.get("torch", "")), sha256_of(path))
