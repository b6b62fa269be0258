"""Quantities at the edges: parse "100Gbps", "900GB/s", "13.9us", "16GiB"; SI base units inside.

Inside simcluster every quantity is a float in seconds, bytes or bytes/s. Strings with units
exist only in files and on the command line; this module converts both ways.
Bandwidth: "bps"/"b/s" suffixes are bits per second, "B/s"/"Bps" bytes per second. Sizes are bytes: a size in bits
("1Gb", "128Kbit") is refused with a hint, as it is almost always a typo for bytes.
"""

from __future__ import annotations

import math
import re

from simcluster.errors import UnitError

_SI = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_IEC = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50}
_TIME = {"s": 1.0, "sec": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9, "min": 60.0, "h": 3600.0}
_NUMBER = r"\s*([-+]?(?:\d{1,3}(?:,\d{3})+(?:\.\d*)?|\d[\d_]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*"
MAX_QUANTITY = 1e18   # seconds, bytes or bytes/s: past any cluster (an exabyte, 30 billion years)
UDP_MAX_PAYLOAD = 65507   # bytes: the largest UDP datagram's payload over IPv4, 65535 - 20 (IP header) - 8 (UDP header)


def _split(text: str, what: str) -> tuple[float, str]:
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value, unit = float(text), ""
    elif not isinstance(text, str):
        raise UnitError(f"expected a {what} string such as {_EXAMPLE[what]}, got {type(text).__name__}")
    else:
        match = re.fullmatch(_NUMBER + r"(\S*)\s*", text) if len(text) <= 100 else None
        if not match:
            raise UnitError(f"{text[:40]!r} is not a {what}", hint=f"write e.g. {_EXAMPLE[what]}")
        value, unit = float(match.group(1).replace(",", "").replace("_", "")), match.group(2)
    if not math.isfinite(value) or value < 0 or value > MAX_QUANTITY:
        raise UnitError(f"{str(text)[:40]!r} is not a {what}: it must be a finite number from 0 to {MAX_QUANTITY:g}")
    return value, unit


_EXAMPLE = {"time": '"13.9us"', "size": '"16GiB"', "bandwidth": '"100Gbps" or "900GB/s"',
            "rate": '"1.6M/s"', "fraction": '"59%"'}


def _prefix(unit: str, base: str) -> float | None:
    if not unit.endswith(base):
        return None
    prefix = unit[: len(unit) - len(base)]
    if prefix in _IEC:
        return _IEC[prefix]
    return _SI.get(prefix)


def parse_time(text) -> float:
    """'13.9us' -> 1.39e-05 seconds. A bare number needs a unit (is 5 seconds or 5 us?), except 0."""
    value, unit = _split(text, "time")
    if unit in _TIME:
        return value * _TIME[unit]
    if unit == "" and value == 0:
        return 0.0
    raise UnitError(f"{text!r} has no known time unit", hint="use s, ms, us or ns")


def parse_size(text) -> float:
    """'16GiB' -> 17179869184 bytes, '1.5MB' -> 1.5e6; bare numbers are bytes."""
    value, unit = _split(text, "size")
    if unit == "":
        return value
    for base in ("B", "bytes", "byte"):
        scale = _prefix(unit, base)
        if scale is not None:
            return value * scale
    for base in ("b", "bit", "bits"):
        if _prefix(unit, base) is not None:   # '1Gb' is a gigabit: as a message or I/O size almost always a typo for bytes
            n, p = f"{value:g}", unit[: len(unit) - len(base)].strip().removesuffix("i")
            raise UnitError(f"{text!r} is in bits; a size is in bytes",
                            hint=f"write {n}{p}B (powers of 1000) or {n}{p}iB (powers of 1024, what nccl-tests' {n}{p} means)"
                                 if p else f"write {n}B")
    raise UnitError(f"{text!r} has no known size unit", hint="use B, KB, MiB, GiB, ...")


def parse_bandwidth(text) -> float:
    """'100Gbps' -> 1.25e10 bytes/s; '900GB/s' -> 9e11 bytes/s; bare numbers are bytes/s."""
    value, unit = _split(text, "bandwidth")
    if unit == "":
        return value
    for base, scale_unit in (("B/s", 1.0), ("Bps", 1.0), ("B/sec", 1.0), ("bytes/sec", 1.0),
                             ("b/s", 0.125), ("bps", 0.125), ("b/sec", 0.125), ("bits/sec", 0.125)):
        scale = _prefix(unit, base)
        if scale is not None:
            return value * scale * scale_unit
    raise UnitError(f"{text!r} has no known bandwidth unit",
                    hint="use bps/Gbps for bits per second or B/s, GB/s for bytes per second")


def parse_nccl_size(text: str) -> int:
    """nccl-tests' size suffixes: '8', '1K', '1M', '8G' (powers of 1024)."""
    match = re.fullmatch(r"\s*(\d+)\s*([KkMmGgTt]?)\s*", str(text))
    if not match:
        raise UnitError(f"{text!r} is not an nccl-tests size", hint="write e.g. 8, 1K, 64M or 8G")
    power = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4}[match.group(2).lower()]
    return int(match.group(1)) * 1024**power


def parse_size_arg(text) -> int:
    """A size as users type it: nccl-tests' '8G' (powers of 1024) or a unit string '16GiB'."""
    if isinstance(text, int) and not isinstance(text, bool):
        if not 0 <= text <= MAX_QUANTITY:
            raise UnitError(f"{text!r} is not a size: it must be a whole number of bytes from 0 to {MAX_QUANTITY:g}")
        return text
    if re.fullmatch(r"\s*\d+\s*[KkMmGgTt]?\s*", str(text)):
        return parse_nccl_size(text)
    return int(parse_size(text))


def format_time(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if abs(seconds) >= scale or unit == "ns":
            return f"{seconds / scale:.4g}{unit}"
    return f"{seconds}s"


def format_size(nbytes: float) -> str:
    for unit, scale in (("GiB", 2.0**30), ("MiB", 2.0**20), ("KiB", 2.0**10)):
        if abs(nbytes) >= scale:
            return f"{nbytes / scale:.4g}{unit}"
    return f"{nbytes:.0f}B"


def format_bandwidth(bytes_per_s: float) -> str:
    for unit, scale in (("TB/s", 1e12), ("GB/s", 1e9), ("MB/s", 1e6), ("KB/s", 1e3)):
        if abs(bytes_per_s) >= scale:
            return f"{bytes_per_s / scale:.4g}{unit}"
    return f"{bytes_per_s:.4g}B/s"


def parse_cost(text) -> float:
    """CPU cost per byte as qperf prints it: '473ms/GB' -> 4.73e-10 core-seconds per byte."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return _split(text, "time")[0]
    if "/" not in str(text):
        raise UnitError(f"{text!r} is not a CPU cost per size", hint="write time per size, e.g. 473ms/GB")
    time_part, size_part = str(text).rsplit("/", 1)
    if not size_part.strip():
        raise UnitError(f"{text!r} has no size after '/'", hint="write time per size, e.g. 473ms/GB")
    size = parse_size("1" + size_part.strip()) if not size_part.strip()[:1].isdigit() else parse_size(size_part)
    if size <= 0:
        raise UnitError(f"{text!r}: the size after '/' must be > 0")
    return parse_time(time_part) / size


def format_cost(seconds_per_byte: float) -> str:
    """Core-seconds per byte as time per GB (qperf's unit)."""
    return f"{format_time(seconds_per_byte * 1e9)}/GB"


def parse_count(text) -> float:
    """'15T' tokens, '1.2e12', 5e11 -> a count."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    else:
        m = re.fullmatch(r"\s*(\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)\s*([kKMGTP]?)\s*", str(text))
        if not m:
            raise UnitError(f"{text!r} is not a count (write e.g. 15T or 1.5e12)")
        value = float(m.group(1)) * {"": 1, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}[m.group(2)]
    if not math.isfinite(value) or value <= 0:
        raise UnitError(f"{text!r} must be a positive count")
    return value
