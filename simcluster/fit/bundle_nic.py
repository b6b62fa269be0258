"""The NIC and host-CPU cards of a trace bundle (part of `simcluster calibrate BUNDLE`, fit/bundle.py).

  qperf (+ perf-stat)  -> nic-<transport>.yaml    (latency, wire rate, CPU per byte), from the runs whose stream
                                                  was wire-bound; median over runs
                       -> host-cpu-tcp.yaml       (the host's onload cost), from the CPU-bound TCP runs
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING

from simcluster.errors import CalibrationError
from simcluster.fit.bundle_files import DATA_ERRORS, bundle_provenance

if TYPE_CHECKING:
    from simcluster.fit.bundle_files import Bundle


def _framing(ground_truth: dict) -> tuple[float, str]:
    if ground_truth.get("kind") == "veth+tc":
        return 1448 / 1514, "tc counts 1514-byte frames (Ethernet header, no preamble/FCS): TCP payload 1448/1514"
    return 1448 / 1538, "Ethernet wire: TCP payload 1448 of 1538 bytes per frame (preamble, FCS, gap)"


def nic_cards(b: Bundle) -> dict[str, dict]:
    """One NIC card per transport; with several qperf runs, each parameter is the median over the runs
    that could be used (a run that does not parse, or whose TCP stream was CPU-bound, is skipped)."""
    import dataclasses

    from simcluster.cards import nic_params_yaml
    from simcluster.fit.nic import detect_transport, fit_nic
    from simcluster.traces import qperf

    runs = b.runs("qperf")
    if not runs:
        return {}
    traces, used = b.parsed(runs, lambda r: qperf.parse(b.file(r)))
    if not traces:
        return {}
    meta = used[-1].get("meta") if isinstance(used[-1].get("meta"), dict) else {}
    truth = meta.get("ground_truth") if isinstance(meta.get("ground_truth"), dict) else {}
    share, framing_note = _framing(truth)
    bw_name = {"tcp": "tcp_bw", "rdma": "rc_bw"}
    # qperf's cpus_used is host-wide: in a one-host lab it counts the client and the server together
    core_limit = 2.0 if truth.get("kind") == "veth+tc" else 1.0
    cards = {}
    cpu_bound: list = []
    for transport in detect_transport(traces[-1]):
        fits, measured, paths = [], [], []
        for trace, run in zip(traces, used, strict=True):
            try:
                bw_test = trace.test(bw_name[transport])
                bw = bw_test.get("bw")
                cpus = max(bw_test.metrics.get("send_cpus_used", 0.0), bw_test.metrics.get("recv_cpus_used", 0.0))
                if transport == "tcp" and cpus > 0.9 * core_limit:
                    cpu_bound.append((trace, run, bw))
                    raise CalibrationError(f"tcp_bw used {cpus:.0%} of a core: CPU-bound, the wire rate cannot be "
                                           "estimated (its host cost per byte goes to host-cpu-tcp.yaml)", where=trace.path,
                                           hint="calibrate with --line-rate from the NIC's speed")
                params, info = fit_nic(trace, transport, bw / share if transport == "tcp" else bw)
            except DATA_ERRORS as exc:
                b.skip(exc, str(trace.path))
                continue
            fits.append(params)
            measured.append((bw, info["latency_s"]))
            paths.append(b.file(run))
        if not fits:
            continue
        params = dataclasses.replace(fits[-1], **{k: float(statistics.median(getattr(f, k) for f in fits))
                                                  for k in ("line_rate_Bps", "latency_s", "cpu_s_per_byte")})
        notes = [f"line rate estimated from {bw_name[transport]} (the stream was wire-bound); {framing_note}",
                 f"median over {len(fits)} qperf runs: bw {[round(bw * 8 / 1e9, 4) for bw, _ in measured]} Gb/s, "
                 f"latency {[round(t * 1e6, 1) for _, t in measured]} us"]
        notes += _perf_note(b, params) if transport == "tcp" else []
        cards[f"nic-{transport}.yaml"] = {"kind": "nic", "name": f"{b.path.name}-{transport}",
                                          "description": f"{transport.upper()} NIC fitted from qperf in bundle {b.path.name}.",
                                          "params": nic_params_yaml(params),
                                          "fit": {"line_rate_estimated": True, "notes": notes},
                                          "provenance": bundle_provenance(paths, b.path, b.manifest)}
    if cpu_bound:
        cards["host-cpu-tcp.yaml"] = _host_cpu_card(b, cpu_bound)
    return cards


def _host_cpu_card(b: Bundle, runs: list) -> dict:
    """A CPU-bound TCP stream measures the host's onload cost: core-seconds per byte = qperf -v's send/recv cost
    (the larger side), else 1 core / tcp_bw (one kernel TCP stream runs on one core); the stack's latency is
    tcp_lat. The median over the runs; a card of kind host-cpu (docs/models/nic-and-cpu.md)."""
    from simcluster.units import format_time

    per_byte, latency, paths = [], [], []
    for trace, run, bw in runs:
        costs = [trace.test("tcp_bw").metrics[k] for k in ("send_cost", "recv_cost") if k in trace.test("tcp_bw").metrics]
        per_byte.append(max(costs) if costs else 1.0 / bw)
        latency.append(trace.test("tcp_lat").get("latency"))
        paths.append(b.file(run))
    host = b.manifest.get("host") if isinstance(b.manifest.get("host"), dict) else {}
    cores = host.get("cores") if isinstance(host.get("cores"), int) and host.get("cores") > 0 else None
    return {"kind": "host-cpu", "name": f"{b.path.name}-host-cpu",
            "description": f"Host CPU cost of onloaded TCP, from {len(runs)} CPU-bound qperf tcp_bw run(s) in bundle "
                           f"{b.path.name} (host {host.get('cpu_model', '?')}).",
            "params": {"cores": cores, "tcp_cpu_per_byte": f"{format_time(statistics.median(per_byte) * 1e9)}/GB",
                       "tcp_stack_latency": format_time(statistics.median(latency))},
            "fit": {"notes": ["CPU-bound: the stream was limited by one core, not by the wire; cost per byte = "
                              + ("qperf -v send/recv cost" if any("send_cost" in t.test("tcp_bw").metrics for t, _, _ in runs)
                                 else "1 core / tcp_bw")]},
            "provenance": bundle_provenance(paths, b.path, b.manifest)}


def _perf_note(b: Bundle, params) -> list[str]:
    """What perf stat (or /proc/stat) says the sender's CPU cost per byte is, next to qperf -v's; a perf-stat
    run that cannot be read is a problem line and the card goes without the note."""
    perf_runs = b.runs("perf-stat")
    if not perf_runs:
        return []
    try:
        return _perf_line(b, perf_runs[-1], params)
    except DATA_ERRORS as exc:
        b.skip(exc, f"perf-stat/{perf_runs[-1]['run_id']}")
        b.problems[-1] += " (the NIC card is written without the perf note)"
        return []


def _perf_line(b: Bundle, run: dict, params) -> list[str]:
    from simcluster.traces import perf_stat, qperf

    pq = qperf.parse(b.file(run)).test("tcp_bw")
    moved = pq.get("bw") * pq.metrics.get("time", 0.0)
    csv = b.file(run, "perf.csv")
    stat = perf_stat.parse(csv) if csv.is_file() else None
    cpu_s, source = (stat.cpu_seconds(), "perf stat task-clock") if stat else (None, "")
    if cpu_s is None:
        ps = run.get("proc_stat") or {}
        before, after = ps.get("before"), ps.get("after")
        cpu_s, source = ((after["busy"] - before["busy"]) / after["hz"], "/proc/stat (perf stat unavailable)") \
            if after and before else (None, "")
    if not cpu_s or moved <= 0:
        return []
    return [f"{source}: the qperf client used {cpu_s:.3g} CPU s to send {moved / 1e9:.3g} GB ({cpu_s / moved * 1e9:.3g} s/GB, "
            f"its own process); qperf -v's cost {params.cpu_s_per_byte * 1e9:.3g} s/GB (host-wide) is kept"]
