"""Helpers shared by the trace parsers: reading files and hashing them."""

from __future__ import annotations

import hashlib
from pathlib import Path

from simcluster import strict
from simcluster.errors import TraceFormatError


def read_text(path: str | Path) -> str:
    """The file's text; a missing, unreadable, binary or empty file is a TraceFormatError."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TraceFormatError(f"cannot read the file: {exc.strerror or exc}", where=str(path)[:300]) from None
    except ValueError as exc:    # a NUL byte in the path
        raise TraceFormatError(f"cannot read the file: {exc}", where=repr(str(path))[:300]) from None
    if not data.strip():
        raise TraceFormatError("the file is empty", where=str(path))
    if b"\x00" in data[:4096]:
        raise TraceFormatError("the file is binary, not tool output", where=str(path))
    return data.decode("utf-8", errors="replace")


def loads_json(text: str):
    """strict.loads_json: NaN, Infinity, overflowing numbers and nesting deeper than strict.MAX_DEPTH are a
    JSONDecodeError, which each parser turns into its one-line TraceFormatError."""
    return strict.loads_json(text)


def sha256_of(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
