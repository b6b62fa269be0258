"""Helpers shared by the trace parsers: reading files and hashing them."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from simcluster.errors import TraceFormatError


def read_text(path: str | Path) -> str:
    """The file's text; a missing, unreadable, binary or empty file is a TraceFormatError."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TraceFormatError(f"cannot read the file: {exc.strerror or exc}", where=str(path)) from None
    if not data.strip():
        raise TraceFormatError("the file is empty", where=str(path))
    if b"\x00" in data[:4096]:
        raise TraceFormatError("the file is binary, not tool output", where=str(path))
    return data.decode("utf-8", errors="replace")


def refuse_constant(name: str):
    """parse_constant for json: NaN, Infinity and -Infinity are malformed input here."""
    raise json.JSONDecodeError(f"{name} is not a measurement", name, 0)


def loads_json(text: str):
    """json.loads that refuses NaN and Infinity (Python's json accepts them; no tool this project reads writes
    them for a real measurement): a JSONDecodeError, which each parser turns into its one-line TraceFormatError."""
    return json.loads(text, parse_constant=refuse_constant)


def sha256_of(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
