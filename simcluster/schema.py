"""Declarative schemas for documents simcluster reads once they are parsed (tool records, summaries): each field
declared once with its type, unit, range and finiteness, checked in one call that names the file, line and key.

    RECORD = Record({"step_times_s": ListOf(Seconds(), min_len=1), "image": Count()}, optional={"phases": ...})
    RECORD.check(doc, where="stdout.txt:3", error=TraceFormatError)

`Record` allows keys it does not declare (tool output carries more than the model reads); a declared key that is
missing, of the wrong type, not finite or out of range is one line: `WHERE: KEY: why`. The YAML readers take their
fields through strict.field and the scenario reader; this is the same check for JSON tool output, declared as data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from simcluster.errors import SimclusterError
from simcluster.strict import short


class _Bad(Exception):
    """A field that does not fit its declaration: (dotted key, why)."""

    def __init__(self, key: str, why: str):
        super().__init__(key, why)
        self.key, self.why = key, why


def _join(parent: str, key) -> str:
    return f"{parent}[{key}]" if isinstance(key, int) else (f"{parent}.{key}" if parent else str(key))


@dataclass(frozen=True)
class Number:
    """A finite real number from `low` to `high` (`unit` named in the error); `integer` for a whole number."""

    low: float = -math.inf
    high: float = math.inf
    unit: str = ""
    integer: bool = False
    above: bool = False          # low itself is refused (a time that must be > 0)

    def validate(self, value, key: str):
        kind = "an integer" if self.integer else "a number"
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (self.integer and isinstance(value, float)):
            raise _Bad(key, f"expected {kind}, got {short(value)}")
        if not math.isfinite(value) or value < self.low or value > self.high or (self.above and value == self.low):
            unit = f" {self.unit}" if self.unit else ""
            low = f"> {self.low:g}" if self.above else f"from {self.low:g}"
            raise _Bad(key, f"expected {kind} {low} to {self.high:g}{unit}, got {short(value)}")
        return value


def Seconds(high: float = 86400.0) -> Number:   # noqa: N802 - a declaration, read as a type
    """A duration in seconds, > 0 and at most `high` (a day by default)."""
    return Number(0.0, high, "s", above=True)


def Count(low: int = 1, high: int = 2**31) -> Number:   # noqa: N802
    return Number(low, high, integer=True)


@dataclass(frozen=True)
class Text:
    max_len: int = 4096

    def validate(self, value, key: str):
        if not isinstance(value, str) or len(value) > self.max_len:
            raise _Bad(key, f"expected text of at most {self.max_len} characters, got {short(value)}")
        return value


@dataclass(frozen=True)
class ListOf:
    item: object
    min_len: int = 0
    max_len: int = 1_000_000

    def validate(self, value, key: str):
        if not isinstance(value, list) or not self.min_len <= len(value) <= self.max_len:
            raise _Bad(key, f"expected a list of {self.min_len} to {self.max_len:,} items, got {short(value)}")
        for i, item in enumerate(value):
            self.item.validate(item, _join(key, i))
        return value


@dataclass(frozen=True)
class Nullable:
    inner: object

    def validate(self, value, key: str):
        return None if value is None else self.inner.validate(value, key)


@dataclass(frozen=True)
class Record:
    required: dict = field(default_factory=dict)
    optional: dict = field(default_factory=dict)

    def validate(self, value, key: str = ""):
        if not isinstance(value, dict):
            raise _Bad(key or "the document", f"expected a JSON object, got {short(value)}")
        for name, spec in self.required.items():
            if name not in value:
                raise _Bad(_join(key, name), "missing")
            spec.validate(value[name], _join(key, name))
        for name, spec in self.optional.items():
            if name in value:
                spec.validate(value[name], _join(key, name))
        return value

    def check(self, doc, where: str, error: type[SimclusterError] = SimclusterError):
        """doc if it fits; else `error`, one line: 'WHERE: KEY: why'."""
        try:
            return self.validate(doc)
        except _Bad as bad:
            raise error(f"{bad.key}: {bad.why}", where=where) from None
