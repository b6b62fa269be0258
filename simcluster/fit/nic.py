"""qperf results -> NIC card parameters.

Bandwidth and latency come straight from the bandwidth and latency tests. The CPU cost per byte
comes from qperf -v (`send_cost`/`recv_cost`, CPU time per GB; the larger side is kept) when the
trace has it. Without -v, a TCP stream far below the port's rate is taken to be CPU-bound on one
core (a kernel TCP stream is processed on one core; qperf runs one stream), so
cpu_s_per_byte = 1 core / measured rate, and the wire efficiency is TCP/IPv4's payload share of
a 1500-byte Ethernet frame (1448 / 1538). For RDMA the efficiency is measured rate / line rate
and the host cost is not measurable with qperf (its RDMA tests poll), so it stays 0 unless given.
"""

from __future__ import annotations

from simcluster.errors import CalibrationError
from simcluster.hardware.nic import NicParams
from simcluster.traces.qperf import QperfTrace

TCP_WIRE_EFFICIENCY = 1448 / 1538  # MSS with timestamps / (1500 MTU + 14 eth + 4 FCS + 20 preamble and gap)
TESTS = {"rdma": ("rc_bw", "rc_lat"), "tcp": ("tcp_bw", "tcp_lat")}


def detect_transport(trace: QperfTrace) -> list[str]:
    names = {t.name for t in trace.tests if t.error is None}
    return [tr for tr, (bw, lat) in TESTS.items() if bw in names and lat in names]


def fit_nic(trace: QperfTrace, transport: str, line_rate_Bps: float) -> tuple[NicParams, dict]:
    bw_test, lat_test = TESTS[transport]
    bw_result, lat = trace.test(bw_test), trace.test(lat_test).get("latency")
    bw = bw_result.get("bw")
    if bw > line_rate_Bps * 1.001:
        raise CalibrationError(f"{bw_test} measured {bw * 8 / 1e9:.3g} Gb/s, above the given line rate "
                               f"{line_rate_Bps * 8 / 1e9:.3g} Gb/s", where=trace.path, hint="check --line-rate")
    message = bw_result.metrics.get("msg_size", 65536.0)
    costs = [bw_result.metrics[k] for k in ("send_cost", "recv_cost") if k in bw_result.metrics]
    notes = []
    if transport == "rdma":
        efficiency, cpu = bw / line_rate_Bps, 0.0
        notes.append("efficiency = rc_bw / line rate; host CPU per byte not measurable with qperf (polling): 0")
    elif costs:
        cpu = max(costs)
        efficiency = max(TCP_WIRE_EFFICIENCY, bw / line_rate_Bps)
        notes.append("cpu per byte = max(send_cost, recv_cost) from qperf -v")
    else:
        cpu = 1.0 / bw
        efficiency = max(TCP_WIRE_EFFICIENCY, bw / line_rate_Bps)
        notes.append("no -v: the single qperf TCP stream is taken as CPU-bound on one core, cpu per byte = 1 / tcp_bw")
    # one qperf stream is one thread: a TCP stream's work is serialised on one core (cards.DEFAULT_CORES_PER_STREAM)
    params = NicParams(transport, line_rate_Bps, efficiency, lat, cpu, 0.0, message,
                       cores_per_stream=1.0 if transport == "tcp" else None)
    return params, {"bw_test": bw_test, "bw_Bps": bw, "lat_test": lat_test, "latency_s": lat, "notes": notes}
