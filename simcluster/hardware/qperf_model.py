"""qperf between two hosts, predicted from a NIC card: what `qperf HOST tcp_bw tcp_lat` would print.

  bw       = the NIC's rate for `streams` streams with the host's cores (hardware/nic.py)
  latency  = the card's one-way small-message latency (qperf's *_lat: half the round trip)
The text is qperf's own layout (3 significant digits, unit steps of 1000), so the qperf parser
reads it back and `simcluster validate` can compare it with a real run.
"""

from __future__ import annotations

from simcluster.hardware.nic import NicParams


def _three(value: float, units: list[tuple[str, float]]) -> str:
    for unit, scale in units:
        if value >= scale or unit == units[-1][0]:
            v = value / scale
            text = f"{v:.3g}" if v < 1000 else f"{round(v):,}"
            return f"{text} {unit}"
    raise AssertionError


def predict(nic: NicParams, tests: tuple[str, ...], streams: int = 1, cores: float = float("inf")) -> dict[str, float]:
    """test -> predicted value (bytes/s for *_bw, seconds for *_lat)."""
    out = {}
    for t in tests:
        out[t] = nic.rate_Bps(streams, cores) if t.endswith("_bw") else nic.latency_s
    return out


def qperf_text(values: dict[str, float]) -> str:
    lines = []
    for test, v in values.items():
        lines.append(f"{test}:")
        if test.endswith("_bw"):
            lines.append(f"    bw  =  {_three(v, [('GB/sec', 1e9), ('MB/sec', 1e6), ('KB/sec', 1e3), ('bytes/sec', 1.0)])}")
        else:
            lines.append(f"    latency  =  {_three(v, [('sec', 1.0), ('ms', 1e-3), ('us', 1e-6), ('ns', 1e-9)])}")
    return "\n".join(lines) + "\n"
